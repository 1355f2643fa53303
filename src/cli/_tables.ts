// `cli tables` (the definitions and IAM policy as CloudFormation, Terraform or JSON, each built
// from tableDefinitions() alone) and `cli check-tables`.
import { stringify } from "yaml";
import type { CreateTableCommandInput } from "@aws-sdk/client-dynamodb";
import {
  TABLE_ROLES,
  type TableDefinition,
  type TableDefinitions,
  tableDefinitions,
  type TableDefinitionsOptions,
  type TableRole,
} from "../dynamo/table_definitions.ts";
import { leastPrivilegePolicy, type PolicyDocument } from "../dynamo/iam_policy.ts";
import { checkDefinedTables } from "../dynamo/table_check.ts";
import type { DynamoDBSender } from "../dynamo/_dynamo.ts";
import { usage, UsageError } from "./_args.ts";

/** The formats `cli tables` prints. */
export const FORMATS = ["cloudformation", "terraform", "json"] as const;
export type Format = typeof FORMATS[number];

/** `--format`'s value, checked. */
export function parseFormat(text: string | boolean | undefined): Format {
  if (!FORMATS.includes(text as Format)) {
    throw new UsageError(
      `tables needs --format ${FORMATS.join(", ")}; got ${
        text === undefined ? "none" : JSON.stringify(text)
      }`,
    );
  }
  return text as Format;
}

/** What the printed definitions were made for, as each format names it. */
export interface TablesParameters {
  prefix: string;
  stateTable: string;
  region: string;
  account: string;
  otherWriters: boolean;
}

/** The definitions in `format`, as text. */
export function tablesDocument(format: Format, options: TableDefinitionsOptions): string {
  const definitions = tableDefinitions(options);
  const prefix = options.prefix ?? "harel";
  const parameters: TablesParameters = {
    prefix,
    stateTable: options.stateTable ?? `${prefix}_state`,
    region: options.region ?? "*",
    account: options.account ?? "*",
    otherWriters: options.otherWriters ?? false,
  };
  if (format === "json") return JSON.stringify({ parameters, ...definitions }, null, 2);
  return format === "cloudformation"
    ? cloudFormation(definitions, parameters)
    : terraform(definitions, parameters);
}

/** A CloudFormation resource's logical id per role: `ExecutionsTable`, ..., `StateTable`. */
export function logicalId(role: TableRole): string {
  return `${role[0]!.toUpperCase()}${role.slice(1)}Table`;
}

/** `text`'s table names and ARNs with the parameters written as `sub`'s references to them. */
function parameterized(
  text: string,
  parameters: TablesParameters,
  sub: { prefix: string; stateTable: string; region: string; account: string },
): string {
  const arn = /^arn:aws:dynamodb:([^:]*):([^:]*):table\/(.*)$/.exec(text);
  const name = (table: string) => {
    const [base = "", ...rest] = table.split("/");
    const tail = rest.map((part) => `/${part}`).join("");
    if (base === parameters.stateTable) return sub.stateTable + tail;
    if (base.startsWith(`${parameters.prefix}_`)) {
      return sub.prefix + base.slice(parameters.prefix.length) + tail;
    }
    return table;
  };
  if (!arn) return name(text);
  return `arn:aws:dynamodb:${sub.region}:${sub.account}:table/${name(arn[3]!)}`;
}

/** Which tables have a stream, in words: with other writers, the four a mixed store reads. */
function streams(definitions: TableDefinitions): string {
  const streamed = TABLE_ROLES.filter((role) =>
    definitions.tables[role].create.StreamSpecification
  );
  if (streamed.length === 0) return "other writers: no, so no table has a stream";
  const last = streamed.pop();
  return `other writers: yes, so the ${streamed.join(", ")} and ${last} tables have a stream`;
}

const CFN = {
  prefix: "${Prefix}",
  stateTable: "${StateTableName}",
  region: "${AWS::Region}",
  account: "${AWS::AccountId}",
};

function cloudFormation(definitions: TableDefinitions, parameters: TablesParameters): string {
  const sub = (text: string) => ({ "Fn::Sub": parameterized(text, parameters, CFN) });
  const resources: Record<string, unknown> = {};
  for (const role of TABLE_ROLES) {
    const { create, ttlAttribute } = definitions.tables[role];
    const { TableName, StreamSpecification, ...rest } = create;
    resources[logicalId(role)] = {
      Type: "AWS::DynamoDB::Table",
      // The tables hold the executions: a stack deleted or replaced keeps them.
      DeletionPolicy: "Retain",
      UpdateReplacePolicy: "Retain",
      Properties: {
        TableName: sub(TableName!),
        ...rest,
        ...(StreamSpecification
          ? { StreamSpecification: { StreamViewType: StreamSpecification.StreamViewType } }
          : {}),
        ...(ttlAttribute === null
          ? {}
          : { TimeToLiveSpecification: { AttributeName: ttlAttribute, Enabled: true } }),
      },
    };
  }
  resources.HarelDynamoDBPolicy = {
    Type: "AWS::IAM::ManagedPolicy",
    Properties: {
      Description: "The least-privilege policy of @harel/dynamodb's stores on these tables",
      PolicyDocument: {
        ...definitions.policy,
        Statement: definitions.policy.Statement.map((statement) => ({
          ...statement,
          Resource: statement.Resource.map(sub),
        })),
      },
    },
  };
  const template = {
    AWSTemplateFormatVersion: "2010-09-09",
    Description: `@harel/dynamodb's tables and IAM policy (${
      streams(definitions)
    }). Parameters: Prefix, StateTableName; the region and account are the stack's.`,
    Parameters: {
      Prefix: {
        Type: "String",
        Default: parameters.prefix,
        Description: "The execution store's table prefix (tables Prefix_executions, ...)",
      },
      StateTableName: {
        Type: "String",
        Default: parameters.stateTable,
        Description: "The state store's table",
      },
    },
    Resources: resources,
    Outputs: {
      PolicyArn: {
        Description: "Attach to the role the workers run as",
        Value: { Ref: "HarelDynamoDBPolicy" },
      },
    },
  };
  return "# Generated by `harel-dynamodb tables --format cloudformation`. Deploy with\n" +
    "# aws cloudformation deploy --template-file harel.yaml --stack-name harel " +
    "--capabilities CAPABILITY_IAM\n" + stringify(template, { lineWidth: 0, version: "1.1" });
}

const TF = {
  prefix: "${var.prefix}",
  stateTable: "${var.state_table}",
  region: "${var.region}",
  account: "${var.account}",
};

/** An HCL string literal: JSON's escapes (names hold no `$` or `%`: only our `${var.x}`). */
function hclString(text: string): string {
  return JSON.stringify(text);
}

function terraform(definitions: TableDefinitions, parameters: TablesParameters): string {
  const lines = [
    "# Generated by `harel-dynamodb tables --format terraform`: @harel/dynamodb's tables and IAM",
    `# policy (${streams(definitions)}).`,
    "# Variables: prefix, state_table, region, account (the policy's ARNs).",
    "",
  ];
  const variables: [string, string, string][] = [
    ["prefix", parameters.prefix, "The execution store's table prefix"],
    ["state_table", parameters.stateTable, "The state store's table"],
    ["region", parameters.region, "The region in the policy's ARNs"],
    ["account", parameters.account, "The account id in the policy's ARNs"],
  ];
  for (const [name, value, description] of variables) {
    lines.push(
      `variable ${hclString(name)} {`,
      `  description = ${hclString(description)}`,
      "  type = string",
      `  default = ${hclString(value)}`,
      "}",
      "",
    );
  }
  for (const role of TABLE_ROLES) {
    lines.push(...terraformTable(definitions.tables[role], parameters));
  }
  const policy: PolicyDocument = {
    ...definitions.policy,
    Statement: definitions.policy.Statement.map((statement) => ({
      ...statement,
      Resource: statement.Resource.map((arn) => parameterized(arn, parameters, TF)),
    })),
  };
  lines.push(
    'resource "aws_iam_policy" "harel_dynamodb" {',
    '  name = "${var.prefix}-harel-dynamodb"',
    `  description = ${hclString("The least-privilege policy of @harel/dynamodb's stores")}`,
    `  policy = jsonencode(${JSON.stringify(policy, null, 2).replaceAll("\n", "\n  ")})`,
    "}",
  );
  return alignAssignments(lines).join("\n");
}

/**
 * The lines with the `=` of each run of consecutive one-line attributes aligned one space after
 * the run's longest name, as `terraform fmt` aligns them: a line that is no `name = value` whose
 * value closes its brackets (a blank line, a block's `{` or `}`, `policy = jsonencode({`) ends a run.
 */
export function alignAssignments(lines: readonly string[]): string[] {
  const parts = lines.map((line) => {
    const match = /^(\s*[\w-]+) *= *(.*)$/.exec(line);
    return match && balanced(match[2]!) ? { name: match[1]!, value: match[2]! } : null;
  });
  const aligned = [...lines];
  for (let start = 0; start < lines.length;) {
    let end = start;
    while (end < lines.length && parts[end]) end++;
    const width = Math.max(0, ...parts.slice(start, end).map((p) => p!.name.length));
    for (let i = start; i < end; i++) {
      aligned[i] = `${parts[i]!.name.padEnd(width)} = ${parts[i]!.value}`;
    }
    start = end + 1;
  }
  return aligned;
}

/** Whether `text` closes every bracket it opens (strings aside): a value on one line. */
function balanced(text: string): boolean {
  const opened = text.replace(/"(?:[^"\\]|\\.)*"/g, "").match(/[[({]/g)?.length ?? 0;
  const closed = text.replace(/"(?:[^"\\]|\\.)*"/g, "").match(/[\])}]/g)?.length ?? 0;
  return opened === closed;
}

function terraformTable(definition: TableDefinition, parameters: TablesParameters): string[] {
  const { create, ttlAttribute, role } = definition;
  const key = (keys: CreateTableCommandInput["KeySchema"], type: string) =>
    keys?.find((k) => k.KeyType === type)?.AttributeName;
  const lines = [
    `resource "aws_dynamodb_table" ${hclString(role)} {`,
    `  name = ${hclString(parameterized(create.TableName!, parameters, TF))}`,
    `  billing_mode = ${hclString(create.BillingMode!)}`,
    `  hash_key = ${hclString(key(create.KeySchema, "HASH")!)}`,
  ];
  const range = key(create.KeySchema, "RANGE");
  if (range) lines.push(`  range_key = ${hclString(range)}`);
  for (const attribute of create.AttributeDefinitions ?? []) {
    lines.push(
      "",
      "  attribute {",
      `    name = ${hclString(attribute.AttributeName!)}`,
      `    type = ${hclString(attribute.AttributeType!)}`,
      "  }",
    );
  }
  for (const index of create.GlobalSecondaryIndexes ?? []) {
    lines.push(
      "",
      "  global_secondary_index {",
      `    name = ${hclString(index.IndexName!)}`,
      `    hash_key = ${hclString(key(index.KeySchema, "HASH")!)}`,
      `    range_key = ${hclString(key(index.KeySchema, "RANGE")!)}`,
      `    projection_type = ${hclString(index.Projection!.ProjectionType!)}`,
    );
    const included = index.Projection?.NonKeyAttributes ?? [];
    if (included.length) {
      lines.push(`    non_key_attributes = [${included.map(hclString).join(", ")}]`);
    }
    lines.push("  }");
  }
  if (create.StreamSpecification) {
    lines.push(
      "",
      "  stream_enabled = true",
      `  stream_view_type = ${hclString(create.StreamSpecification.StreamViewType!)}`,
    );
  }
  if (ttlAttribute !== null) {
    lines.push(
      "",
      "  ttl {",
      `    attribute_name = ${hclString(ttlAttribute)}`,
      "    enabled = true",
      "  }",
    );
  }
  lines.push(
    "",
    "  # The table holds the executions: never destroyed by a plan.",
    "  lifecycle {",
    "    prevent_destroy = true",
    "  }",
    "}",
    "",
  );
  return lines;
}

/** Prints `policy` or `tables`, which need no DynamoDB: true; false for any other command. */
export function offlineCommand(
  command: string,
  format: string | boolean | undefined,
  definitions: TableDefinitionsOptions,
  out: (line: string) => void,
  print: (value: unknown) => void,
): boolean {
  if (command === "policy") {
    print(usage(() => leastPrivilegePolicy(definitions)));
    return true;
  }
  if (command === "tables") {
    const checked = parseFormat(format);
    out(usage(() => tablesDocument(checked, definitions)));
    return true;
  }
  return false;
}

/** `check-tables`: every difference with its fix; its exit code (3 when one differs). */
export async function checkTablesCommand(
  client: DynamoDBSender,
  definitions: TableDefinitionsOptions,
  json: boolean,
  out: (line: string) => void,
  print: (value: unknown) => void,
): Promise<number> {
  const all = usage(() => tableDefinitions(definitions)).tables;
  const differences = await checkDefinedTables(client, Object.values(all));
  if (json) print({ differences });
  else if (differences.length === 0) out(`the ${TABLE_ROLES.length} tables match`);
  for (const d of json ? [] : differences) out(`- ${d.problem}\n  fix: ${d.fix}`);
  return differences.length ? 3 : 0;
}
