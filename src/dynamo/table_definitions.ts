/**
 * The tables both stores need, as exact `CreateTable` inputs with their TTL attribute, and the
 * IAM policy: what `ensureTables()` creates and `checkTables()` compares with.
 *
 * @module
 */
import {
  checkTableName,
  type ExecutionTables,
  executionTables,
  type IndexSpec,
  RELAY_INDEX,
  STATUS_INDEX,
  type TableSpec,
} from "../core/table_specs.ts";
import { EXECUTION, PROCESSED, STATE } from "../core/_layout.ts";
import { leastPrivilegePolicy, type PolicyDocument } from "./iam_policy.ts";
import { describe } from "../core/_validate.ts";
import { checkOptionNames } from "../core/_option_names.ts";

/** A table's role: one of the execution store's seven, or the state store's. */
export type TableRole = keyof ExecutionTables | "state";

/**
 * Options of {@linkcode tableDefinitions}.
 *
 * @example The tables of a production prefix that shares them with Python workers
 * ```ts
 * import { tableDefinitions, type TableDefinitionsOptions } from "@harel/dynamodb";
 *
 * const options: TableDefinitionsOptions = { prefix: "prod", otherWriters: true };
 * console.log(tableDefinitions(options).tables.executions.create.StreamSpecification);
 * ```
 */
export interface TableDefinitionsOptions {
  /** The execution store's table prefix. @default {"harel"} */
  prefix?: string;
  /**
   * Whether another writer (the Python harel store) commits to these tables: then the
   * executions and relay tables have a stream (new and old images), and the policy reads it.
   * @default {false}
   */
  otherWriters?: boolean;
  /** The state store's table name. @default {`${prefix}_state` ("harel_state")} */
  stateTable?: string;
  /** The region in the policy's table ARNs. @default {"*"} */
  region?: string;
  /** The account id in the policy's table ARNs. @default {"*"} */
  account?: string;
}

/**
 * A `CreateTable` input as {@linkcode tableDefinitions} builds it: assignable to the SDK's
 * `CreateTableCommandInput`, and equal to its own JSON.
 *
 * @example Passing it to the SDK
 * ```ts
 * import { CreateTableCommand } from "@aws-sdk/client-dynamodb";
 * import { type CreateTableInput, tableDefinitions } from "@harel/dynamodb";
 *
 * const input: CreateTableInput = tableDefinitions().tables.trace.create;
 * console.log(new CreateTableCommand(input).input.KeySchema);
 * ```
 */
export interface CreateTableInput {
  /** The table's name. */
  TableName: string;
  /** Always on demand. */
  BillingMode: "PAY_PER_REQUEST";
  /** The type of each attribute a key of the table or of an index uses. */
  AttributeDefinitions: { AttributeName: string; AttributeType: "S" | "N" }[];
  /** The table's key: HASH, then RANGE if any. */
  KeySchema: { AttributeName: string; KeyType: "HASH" | "RANGE" }[];
  /** The global secondary indexes, with their keys and projections. */
  GlobalSecondaryIndexes?: {
    IndexName: string;
    KeySchema: { AttributeName: string; KeyType: "HASH" | "RANGE" }[];
    Projection: { ProjectionType: "INCLUDE" | "KEYS_ONLY"; NonKeyAttributes?: string[] };
  }[];
  /** The stream, only where a store reads it (with other writers). */
  StreamSpecification?: { StreamEnabled: true; StreamViewType: "NEW_AND_OLD_IMAGES" };
}

/**
 * One table as {@linkcode tableDefinitions} defines it.
 *
 * @example Creating a table from its definition with the AWS SDK
 * ```ts
 * import { CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
 * import { tableDefinitions, type TableDefinition } from "@harel/dynamodb";
 *
 * const timers: TableDefinition = tableDefinitions({ prefix: "prod" }).tables.timers;
 * const command = new CreateTableCommand(timers.create); // then client.send(command)
 * console.log(timers.role, command.input.TableName, timers.ttlAttribute);
 * ```
 */
export interface TableDefinition {
  /** What the table holds: `"executions"`, ..., `"trace"`, or `"state"`. */
  role: TableRole;
  /** The exact `CreateTable` input: keys, billing, indexes, and the stream where needed. */
  create: CreateTableInput;
  /** The attribute DynamoDB's TTL deletes expired rows by, or `null` for a table without TTL. */
  ttlAttribute: string | null;
}

/**
 * What {@linkcode tableDefinitions} returns: the eight tables by role, and the IAM policy.
 *
 * @example Listing the table names
 * ```ts
 * import { tableDefinitions, type TableDefinitions } from "@harel/dynamodb";
 *
 * const all: TableDefinitions = tableDefinitions();
 * console.log(Object.values(all.tables).map((table) => table.create.TableName));
 * ```
 */
export interface TableDefinitions {
  /** Each table by its role, the execution store's seven and the state store's. */
  tables: Record<TableRole, TableDefinition>;
  /** The least-privilege IAM policy of both stores on these tables. */
  policy: PolicyDocument;
}

/** The roles, in the order the definitions list them. */
export const TABLE_ROLES: readonly TableRole[] = [
  "executions",
  "outbox",
  "spawns",
  "timers",
  "processed",
  "counters",
  "trace",
  "state",
];

/** The stream a store with other writers reads: new and old images. */
export const STREAM = { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" } as const;

/**
 * The tables both stores need, as the exact `CreateTable` inputs `ensureTables()` sends, each
 * with its TTL attribute, and their IAM policy: for tables made as code. TTL is on wherever rows
 * can carry an expiry, whatever the retention options (a row without it never expires).
 *
 * @example Creating the tables of a prefix yourself
 * ```ts
 * import assert from "node:assert/strict";
 * import { tableDefinitions } from "@harel/dynamodb";
 *
 * const { tables, policy } = tableDefinitions({ prefix: "prod" });
 * assert.equal(tables.timers.create.TableName, "prod_timers");
 * assert.equal(tables.processed.ttlAttribute, "ttl");
 * assert.equal(tables.executions.create.StreamSpecification, undefined); // no other writers
 * assert.ok(policy.Statement.length > 0);
 * ```
 *
 * @param options The prefix, whether other writers share the tables, the state table, and the
 *   region and account of the policy's ARNs.
 * @returns The eight tables by role, and the policy.
 * @throws {TypeError} For a bad prefix, table name or option, before anything else.
 */
export function tableDefinitions(options: TableDefinitionsOptions = {}): TableDefinitions {
  if (options === null || typeof options !== "object") {
    throw new TypeError(
      `options must be an object like { prefix: "prod" }, got ${describe(options)}`,
    );
  }
  checkOptionNames("tableDefinitions()", options);
  const { prefix = "harel", otherWriters = false, region, account } = options;
  if (typeof otherWriters !== "boolean") {
    throw new TypeError(`otherWriters must be true or false, got ${describe(otherWriters)}`);
  }
  for (const [field, value] of [["region", region], ["account", account]] as const) {
    if (value !== undefined && (typeof value !== "string" || !/^[\w*-]+$/.test(value))) {
      throw new TypeError(
        `${field} must be letters, digits, - or * (it goes into ARNs), got ${describe(value)}`,
      );
    }
  }
  const specs = executionTables(prefix);
  const stateTable = checkTableName("stateTable", options.stateTable ?? `${prefix}_state`);
  const { executions, outbox, spawns, timers, processed, counters, trace } = specs;
  const relay = (spec: TableSpec) => definition(spec, [RELAY_INDEX], otherWriters);
  return {
    tables: {
      executions: {
        role: "executions",
        create: createTableInput(executions, [STATUS_INDEX], otherWriters),
        ttlAttribute: EXECUTION.ttl,
      },
      outbox: { role: "outbox", ...relay(outbox) },
      spawns: { role: "spawns", ...relay(spawns) },
      timers: { role: "timers", ...relay(timers) },
      processed: {
        role: "processed",
        create: createTableInput(processed),
        ttlAttribute: PROCESSED.ttl,
      },
      counters: { role: "counters", ...definition(counters, [], false) },
      trace: { role: "trace", ...definition(trace, [], false) },
      state: stateTableDefinition(stateTable),
    },
    policy: leastPrivilegePolicy({ prefix, stateTable, region, account, otherWriters }),
  };
}

/** The state store's table `name`: key `pk`, TTL on `ttl`. */
export function stateTableDefinition(name: string): TableDefinition {
  const create = createTableInput({
    name: checkTableName("stateTable", name),
    hash: [STATE.key, "S"],
  });
  return { role: "state", create, ttlAttribute: STATE.ttl };
}

function definition(spec: TableSpec, indexes: readonly IndexSpec[], stream: boolean) {
  return { create: createTableInput(spec, indexes, stream), ttlAttribute: null };
}

/** A table's `CreateTable` input; keys absent rather than undefined, so it equals its JSON. */
export function createTableInput(
  spec: TableSpec,
  indexes: readonly IndexSpec[] = [],
  stream = false,
): CreateTableInput {
  const keys: (readonly [string, "S" | "N", "HASH" | "RANGE"])[] = [[...spec.hash, "HASH"]];
  if (spec.range) keys.push([...spec.range, "RANGE"]);
  const attributes = new Map<string, "S" | "N">(keys.map(([name, type]) => [name, type]));
  for (const index of indexes) {
    for (const [name, type] of [index.hash, index.range]) attributes.set(name, type);
  }
  const input: CreateTableInput = {
    TableName: spec.name,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType,
    })),
    KeySchema: keys.map(([AttributeName, , KeyType]) => ({ AttributeName, KeyType })),
  };
  if (indexes.length) input.GlobalSecondaryIndexes = indexes.map(indexDefinition);
  if (stream) input.StreamSpecification = { ...STREAM };
  return input;
}

/** A global secondary index as CreateTable and UpdateTable take it. */
export function indexDefinition(
  index: IndexSpec,
): NonNullable<CreateTableInput["GlobalSecondaryIndexes"]>[number] {
  return {
    IndexName: index.name,
    KeySchema: [
      { AttributeName: index.hash[0], KeyType: "HASH" },
      { AttributeName: index.range[0], KeyType: "RANGE" },
    ],
    Projection: index.include?.length
      ? { ProjectionType: "INCLUDE", NonKeyAttributes: [...index.include] }
      : { ProjectionType: "KEYS_ONLY" },
  };
}
