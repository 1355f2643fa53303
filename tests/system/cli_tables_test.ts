// `cli tables --format cloudformation|terraform|json`: each format, read back as
// CloudFormation and Terraform read it, gives exactly tableDefinitions()'s CreateTable inputs,
// TTL attributes and policy; and `cli check-tables` lists what differs, exiting 3.
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { CreateTableCommandInput } from "@aws-sdk/client-dynamodb";
import {
  type PolicyDocument,
  tableDefinitions,
  type TableDefinitionsOptions,
  type TableRole,
} from "../../mod.ts";
import { main } from "../../src/cli.ts";
import { logicalId } from "../../src/cli/_tables.ts";
import { bareTables, testClient, uniqueName } from "../_support/env.ts";
import { cli } from "../_support/cli.ts";

type Tables = Record<string, { create: CreateTableCommandInput; ttlAttribute: string | null }>;
interface ReadBack {
  tables: Tables;
  policy: PolicyDocument;
}

async function printed(...args: string[]): Promise<string> {
  const lines: string[] = [];
  const code = await main(args, { out: (line) => void lines.push(line) });
  assert.equal(code, 0, args.join(" "));
  return lines.join("\n");
}

/** `Fn::Sub` of `text` with the template's parameters and the stack's region and account. */
function fnSub(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{([\w:]+)\}/g, (_, name: string) => {
    assert.ok(name in values, `Fn::Sub references ${name}`);
    return values[name]!;
  });
}

/** A CloudFormation template's tables and policy, as CloudFormation would create them. */
function fromCloudFormation(text: string, region: string, account: string): ReadBack {
  const template = parse(text);
  assert.equal(template.AWSTemplateFormatVersion, "2010-09-09");
  const values: Record<string, string> = { "AWS::Region": region, "AWS::AccountId": account };
  for (const [name, parameter] of Object.entries(template.Parameters)) {
    values[name] = (parameter as { Default: string }).Default;
  }
  const resolve = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(resolve);
    if (value && typeof value === "object") {
      if ("Fn::Sub" in value) return fnSub((value as { "Fn::Sub": string })["Fn::Sub"], values);
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
    }
    return value;
  };
  const tables: Tables = {};
  let policy: PolicyDocument | undefined;
  for (const [id, resource] of Object.entries(resolve(template.Resources) as object)) {
    const { Type, Properties } = resource as { Type: string; Properties: Record<string, unknown> };
    if (Type === "AWS::IAM::ManagedPolicy") {
      policy = Properties.PolicyDocument as PolicyDocument;
      continue;
    }
    assert.equal(Type, "AWS::DynamoDB::Table", id);
    const { TimeToLiveSpecification, StreamSpecification, ...rest } = Properties;
    const create = rest as unknown as CreateTableCommandInput;
    const ttl = TimeToLiveSpecification as { AttributeName: string; Enabled: boolean } | undefined;
    const stream = StreamSpecification as { StreamViewType: string } | undefined;
    if (stream) {
      create.StreamSpecification = {
        StreamEnabled: true,
        StreamViewType: stream.StreamViewType as "NEW_AND_OLD_IMAGES",
      };
    }
    tables[id] = { create, ttlAttribute: ttl?.Enabled ? ttl.AttributeName : null };
  }
  return { tables, policy: policy! };
}

interface HclBlock {
  type: string;
  labels: string[];
  attributes: Record<string, unknown>;
  blocks: HclBlock[];
}

/**
 * The HCL `cli tables --format terraform` writes, parsed: blocks with quoted labels, one
 * attribute a line (a string, number, bool, list or bare word), and `jsonencode(...)` over lines.
 * Anything else fails the test.
 */
function parseHcl(text: string): HclBlock {
  const root: HclBlock = { type: "", labels: [], attributes: {}, blocks: [] };
  const stack = [root];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    const open = /^([a-z_]+)((?:\s+"[^"]*")*)\s*\{$/.exec(line);
    if (open) {
      const block: HclBlock = {
        type: open[1]!,
        labels: [...open[2]!.matchAll(/"([^"]*)"/g)].map((m) => m[1]!),
        attributes: {},
        blocks: [],
      };
      stack.at(-1)!.blocks.push(block);
      stack.push(block);
      continue;
    }
    if (line === "}") {
      stack.pop();
      continue;
    }
    const attribute = /^([a-z_]+)\s*=\s*(.+)$/.exec(line);
    assert.ok(attribute, `line ${i + 1} is HCL we write: ${line}`);
    let value = attribute[2]!;
    if (value.startsWith("jsonencode(")) {
      while (!value.endsWith(")")) value += "\n" + lines[++i];
      stack.at(-1)!.attributes[attribute[1]!] = {
        jsonencode: JSON.parse(value.slice("jsonencode(".length, -1)),
      };
      continue;
    }
    stack.at(-1)!.attributes[attribute[1]!] = /^[a-z]+$/.test(value) && value !== "true" &&
        value !== "false"
      ? { word: value }
      : JSON.parse(value);
  }
  assert.equal(stack.length, 1, "every block is closed");
  return root;
}

/** A Terraform file's tables and policy, as the AWS provider would create them. */
function fromTerraform(text: string): ReadBack {
  const root = parseHcl(text);
  const variables: Record<string, string> = {};
  for (const block of root.blocks.filter((b) => b.type === "variable")) {
    assert.deepEqual(block.attributes.type, { word: "string" });
    variables[`var.${block.labels[0]}`] = block.attributes.default as string;
  }
  const interpolate = (value: unknown): unknown =>
    typeof value === "string"
      ? value.replace(/\$\{([\w.]+)\}/g, (_, name: string) => {
        assert.ok(name in variables, `interpolates ${name}`);
        return variables[name]!;
      })
      : Array.isArray(value)
      ? value.map(interpolate)
      : value && typeof value === "object"
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v)]))
      : value;
  const tables: Tables = {};
  let policy: PolicyDocument | undefined;
  for (const block of root.blocks.filter((b) => b.type === "resource")) {
    const a = interpolate(block.attributes) as Record<string, string | undefined>;
    if (block.labels[0] === "aws_iam_policy") {
      policy = (a.policy as unknown as { jsonencode: PolicyDocument }).jsonencode;
      continue;
    }
    assert.equal(block.labels[0], "aws_dynamodb_table");
    const inner = (type: string) => block.blocks.filter((b) => b.type === type);
    const keys = (hash: string, range?: string) => [
      { AttributeName: hash, KeyType: "HASH" as const },
      ...(range ? [{ AttributeName: range, KeyType: "RANGE" as const }] : []),
    ];
    const create: CreateTableCommandInput = {
      TableName: a.name,
      BillingMode: a.billing_mode as "PAY_PER_REQUEST",
      AttributeDefinitions: inner("attribute").map(({ attributes }) => ({
        AttributeName: attributes.name as string,
        AttributeType: attributes.type as "S" | "N",
      })),
      KeySchema: keys(a.hash_key!, a.range_key),
    };
    const indexes = inner("global_secondary_index").map(({ attributes: i }) => ({
      IndexName: i.name as string,
      KeySchema: keys(i.hash_key as string, i.range_key as string),
      Projection: i.non_key_attributes
        ? {
          ProjectionType: i.projection_type as "INCLUDE",
          NonKeyAttributes: i.non_key_attributes as string[],
        }
        : { ProjectionType: i.projection_type as "KEYS_ONLY" },
    }));
    if (indexes.length) create.GlobalSecondaryIndexes = indexes;
    if (a.stream_enabled) {
      create.StreamSpecification = {
        StreamEnabled: true,
        StreamViewType: a.stream_view_type as "NEW_AND_OLD_IMAGES",
      };
    }
    const [ttl] = inner("ttl");
    assert.deepEqual(inner("lifecycle")[0]?.attributes, { prevent_destroy: true });
    tables[block.labels[1]!] = {
      create,
      ttlAttribute: ttl?.attributes.enabled ? ttl.attributes.attribute_name as string : null,
    };
  }
  return { tables, policy: policy! };
}

/**
 * The lines whose `=` is not where `terraform fmt` puts it: in each run of consecutive one-line
 * `name = value` attributes (a blank line, a block's brace or a value running on over lines ends
 * a run), one space after the run's longest name.
 */
function fmtMisaligned(text: string): string[] {
  const wrong: string[] = [];
  let run: string[] = [];
  const close = () => {
    const width = Math.max(...run.map((line) => line.match(/^\s*[\w-]+/)![0].length));
    for (const line of run) {
      if (line.indexOf("=") !== width + 1 || line[width + 2] !== " ") wrong.push(line);
    }
    run = [];
  };
  for (const line of text.split("\n")) {
    const value = /^\s*[\w-]+\s*=\s*(.*)$/.exec(line)?.[1];
    const opens = (value ?? "").replace(/"[^"]*"/g, "").match(/[[({]/g)?.length ?? 0;
    const closes = (value ?? "").replace(/"[^"]*"/g, "").match(/[\])}]/g)?.length ?? 0;
    if (value !== undefined && opens === closes) run.push(line);
    else if (run.length) close();
  }
  if (run.length) close();
  return wrong;
}

Deno.test("fmtMisaligned finds what terraform fmt would move", () => {
  const good = 'a {\n  name   = "x"\n  longer = 1\n\n  b = [1, 2]\n  p = jsonencode({\n  })\n}';
  assert.deepEqual(fmtMisaligned(good), []);
  const bad = 'a {\n  name = "x"\n  longer = 1\n  k    = 2\n}';
  assert.deepEqual(fmtMisaligned(bad), ['  name = "x"', "  k    = 2"]);
});

/** The tables a store with other writers reads the streams of. */
const TABLE_ROLES_STREAMED: TableRole[] = ["executions", "outbox", "spawns", "timers"];

const OPTIONS: TableDefinitionsOptions[] = [
  {},
  { prefix: "prod", otherWriters: true, stateTable: "sessions" },
  { prefix: "orders.v2", region: "eu-west-1", account: "123456789012" },
  { prefix: "x", stateTable: "x_state", otherWriters: true, region: "us-east-2", account: "1" },
];

function args(options: TableDefinitionsOptions): string[] {
  return [
    ...(options.prefix ? ["--prefix", options.prefix] : []),
    ...(options.stateTable ? ["--state-table", options.stateTable] : []),
    ...(options.region ? ["--region", options.region] : []),
    ...(options.account ? ["--account", options.account] : []),
    ...(options.otherWriters ? ["--other-writers"] : []),
  ];
}

/** tableDefinitions() keyed as `key` names each role. */
function expected(options: TableDefinitionsOptions, key: (role: TableRole) => string): ReadBack {
  const { tables, policy } = tableDefinitions(options);
  return {
    tables: Object.fromEntries(
      Object.values(tables).map((t) => [key(t.role), {
        create: t.create,
        ttlAttribute: t.ttlAttribute,
      }]),
    ),
    policy,
  };
}

for (const options of OPTIONS) {
  const named = JSON.stringify(options);
  Deno.test(`cli tables --format json prints tableDefinitions(${named}) and its parameters`, async () => {
    const json = JSON.parse(await printed("tables", "--format", "json", ...args(options)));
    const { tables, policy } = tableDefinitions(options);
    assert.deepEqual(json.tables, tables);
    assert.deepEqual(json.policy, policy);
    assert.deepEqual(Object.keys(json.parameters), [
      "prefix",
      "stateTable",
      "region",
      "account",
      "otherWriters",
    ]);
  });

  Deno.test(`cli tables --format cloudformation reads back as tableDefinitions(${named})`, async () => {
    const text = await printed("tables", "--format", "cloudformation", ...args(options));
    const region = options.region ?? "*";
    const account = options.account ?? "*";
    // The stack's region and account stand where the definitions' ARNs have theirs.
    assert.deepEqual(fromCloudFormation(text, region, account), expected(options, logicalId));
    assert.match(text, /Type: AWS::IAM::ManagedPolicy/);
    assert.match(text, /Parameters:\n {2}Prefix:\n/);
    // The description tells the story the tables tell: which of them have a stream.
    const streamed = Object.values(tableDefinitions(options).tables)
      .filter((table) => table.create.StreamSpecification).map((table) => table.role);
    assert.deepEqual(streamed, options.otherWriters ? TABLE_ROLES_STREAMED : []);
    assert.match(
      text,
      options.otherWriters
        ? /other writers: yes, so the executions, outbox, spawns and timers tables have a stream/
        : /other writers: no, so no table has a stream/,
    );
  });

  Deno.test(`cli tables --format terraform reads back as tableDefinitions(${named})`, async () => {
    const text = await printed("tables", "--format", "terraform", ...args(options));
    assert.deepEqual(fromTerraform(text), expected(options, (role) => role));
    for (const variable of ["prefix", "state_table", "region", "account"]) {
      assert.match(text, new RegExp(`variable "${variable}" \\{`));
    }
  });

  Deno.test(`cli tables --format cloudformation(${named}) reads the same to a YAML 1.1 reader`, async () => {
    const text = await printed("tables", "--format", "cloudformation", ...args(options));
    // YAML 1.1 reads an unquoted 2012-10-17 as a date, yes/no/on/off as booleans.
    assert.match(text, /Version: "2012-10-17"/);
    assert.match(text, /AWSTemplateFormatVersion: "2010-09-09"/);
    assert.deepEqual(parse(text, { version: "1.1" }), parse(text));
    // PyYAML, a YAML 1.1 reader (as moto's CloudFormation is), reads it as JSON's equal.
    const python = await new Deno.Command("python3", {
      args: ["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = python.stdin.getWriter();
    await writer.write(new TextEncoder().encode(text));
    await writer.close();
    const { code, stdout, stderr } = await python.output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(stdout)), parse(text));
  });

  Deno.test(`cli tables --format terraform(${named}) aligns as terraform fmt does`, async () => {
    const text = await printed("tables", "--format", "terraform", ...args(options));
    assert.deepEqual(fmtMisaligned(text), []);
    assert.doesNotMatch(text, /",[^ \n]/, "a space after each comma of a list");
  });
}

Deno.test("cli tables refuses a missing or unknown --format and bad parameters as usage errors", async () => {
  const errors: string[] = [];
  const run = (...a: string[]) => main(a, { out: () => {}, err: (line) => void errors.push(line) });
  assert.equal(await run("tables"), 2);
  assert.match(
    errors.join("\n"),
    /tables needs --format cloudformation, terraform, json; got none/,
  );
  assert.equal(await run("tables", "--format", "yaml"), 2);
  assert.equal(await run("tables", "--format", "json", "--prefix", "a b"), 2);
  assert.equal(await run("tables", "--format", "json", "--account", "1:2"), 2);
  assert.equal(await run("check-tables", "--format", "json"), 2);
});

Deno.test("cli policy grants the four tables' streams only with --other-writers", async () => {
  const without = await printed("policy", "--prefix", "p");
  const withStream = JSON.parse(await printed("policy", "--prefix", "p", "--other-writers"));
  assert.ok(!without.includes("/stream/"));
  assert.deepEqual(withStream, tableDefinitions({ prefix: "p", otherWriters: true }).policy);
});

Deno.test("cli check-tables lists each difference with its fix and exits 3; 0 when the tables match", async () => {
  using client = testClient();
  const prefix = uniqueName("clicheck");
  await bareTables(client, prefix);
  const drifted = await cli("check-tables", "--prefix", prefix);
  assert.equal(drifted.code, 3, drifted.stderr);
  assert.match(drifted.stdout, new RegExp(`- the table ${prefix}_outbox has no index relay_part`));
  assert.match(drifted.stdout, new RegExp(`- the table ${prefix}_state does not exist`));
  assert.match(drifted.stdout, /\n {2}fix: turn TTL on for "ttl"/);
  assert.equal(drifted.stdout.match(/^- /gm)?.length, 7, drifted.stdout);
  const json = await cli("check-tables", "--prefix", prefix, "--json");
  assert.equal(json.code, 3);
  assert.deepEqual(
    JSON.parse(json.stdout).differences.map((d: { kind: string }) => d.kind).sort(),
    [
      "missing index",
      "missing index",
      "missing index",
      "missing index",
      "missing table",
      "ttl off",
      "ttl off",
    ],
  );

  const fine = uniqueName("clifine");
  const created = await cli("ensure-tables", "--prefix", fine);
  assert.equal(created.code, 0, created.stderr);
  const matched = await cli("check-tables", "--prefix", fine);
  assert.equal(matched.code, 0, matched.stderr);
  assert.equal(matched.stdout.trim(), "the 8 tables match");
  // A default store's tables have no stream: a store with other writers needs one.
  const streamed = await cli("check-tables", "--prefix", fine, "--other-writers");
  assert.equal(streamed.code, 3, streamed.stdout);
  // The four tables whose streams a mixed store reads, and nothing else.
  for (const table of ["executions", "outbox", "spawns", "timers"]) {
    assert.match(streamed.stdout, new RegExp(`- the table ${fine}_${table} has no stream`));
  }
  assert.equal(streamed.stdout.match(/^- /gm)?.length, 4, streamed.stdout);
});
