/**
 * The least-privilege IAM policy of both stores, built from the table specs (the CLI's `policy`).
 *
 * @module
 */
import { checkTableName, executionTables, RELAY_INDEX, STATUS_INDEX } from "../core/table_specs.ts";

/**
 * Options of {@linkcode leastPrivilegePolicy}.
 *
 * @example The policy of a production prefix in one region and account
 * ```ts
 * import { leastPrivilegePolicy } from "@harel/dynamodb/cli";
 *
 * const policy = leastPrivilegePolicy({ prefix: "prod", region: "eu-west-1", account: "123456789012" });
 * console.log(JSON.stringify(policy, null, 2));
 * ```
 */
export interface PolicyOptions {
  /** The execution store's table prefix. @default {"harel"} */
  prefix?: string;
  /** The state store's table name. @default {`${prefix}_state` ("harel_state")} */
  stateTable?: string;
  /** The region in the table ARNs. @default {"*"} */
  region?: string;
  /** The account id in the table ARNs. @default {"*"} */
  account?: string;
  /** The stores have `otherWriters: true`: grant reading their streams. @default {false} */
  otherWriters?: boolean;
}

/**
 * An IAM policy document.
 *
 * @example Listing the actions a policy grants
 * ```ts
 * import { leastPrivilegePolicy, type PolicyDocument } from "@harel/dynamodb/cli";
 *
 * const policy: PolicyDocument = leastPrivilegePolicy();
 * console.log(policy.Statement.flatMap((statement) => statement.Action));
 * ```
 */
export interface PolicyDocument {
  /** The policy language version. */
  Version: "2012-10-17";
  /** One statement per group of tables with the same actions. */
  Statement: {
    Sid: string;
    Effect: "Allow";
    Action: string[];
    Resource: string[];
  }[];
}

type Role = keyof ReturnType<typeof executionTables> | "state";

/** In place of an index name: the statement is about the table's stream (any of its ARNs). */
const STREAM = Symbol("stream");

/** What ensureTables() and a relay pass call on the outbox and spawns tables. */
const QUEUE_TABLE = [
  "DescribeTable",
  "CreateTable",
  "UpdateTable",
  "PutItem",
  "Scan",
  "BatchGetItem",
  "BatchWriteItem",
  "UpdateItem",
  "DeleteItem",
];

/** What ensureTables() / ensureTable() call on a table whose TTL they turn on. */
const ENSURE_WITH_TTL = ["DescribeTable", "CreateTable", "DescribeTimeToLive", "UpdateTimeToLive"];

// What each table needs, from the calls the stores make (tests/iam_test.ts records them).
// CreateTable / UpdateTable / UpdateTimeToLive are for ensureTables() only. A Query of an index
// is granted on the index's own ARN.
const STATEMENTS: {
  sid: string;
  roles: Role[];
  actions: string[];
  index?: string | typeof STREAM;
  /** Only for stores built with `otherWriters: true`. */
  otherWriters?: true;
}[] = [
  {
    sid: "HarelExecutions",
    roles: ["executions"],
    actions: [
      ...ENSURE_WITH_TTL,
      "UpdateTable",
      "GetItem",
      "BatchGetItem",
      "UpdateItem",
      "DeleteItem",
      "Scan",
    ],
  },
  {
    sid: "HarelExecutionsByStatus",
    roles: ["executions"],
    index: STATUS_INDEX.name,
    actions: ["Query"],
  },
  {
    // The feeds read the executions and relay tables' streams (`otherWriters: true`).
    sid: "HarelExecutionsStream",
    roles: ["executions", "outbox", "spawns", "timers"],
    index: STREAM,
    actions: ["DescribeStream", "GetShardIterator", "GetRecords"],
    otherWriters: true,
  },
  { sid: "HarelOutbox", roles: ["outbox"], actions: [...QUEUE_TABLE, "ConditionCheckItem"] },
  { sid: "HarelSpawns", roles: ["spawns"], actions: QUEUE_TABLE },
  {
    sid: "HarelTimers",
    roles: ["timers"],
    actions: [
      "DescribeTable",
      "CreateTable",
      "UpdateTable",
      "PutItem",
      "DeleteItem",
      "Scan",
      "Query",
      "BatchGetItem",
      "BatchWriteItem",
      "UpdateItem",
    ],
  },
  {
    sid: "HarelRelayIndex",
    roles: ["outbox", "spawns", "timers"],
    index: RELAY_INDEX.name,
    actions: ["Query"],
  },
  {
    sid: "HarelDedupeMarks",
    roles: ["processed"],
    actions: [
      ...ENSURE_WITH_TTL,
      "PutItem",
      "GetItem",
      "BatchGetItem",
      "Query",
      "BatchWriteItem",
    ],
  },
  {
    sid: "HarelCounters",
    roles: ["counters"],
    actions: ["DescribeTable", "CreateTable", "UpdateItem", "BatchGetItem"],
  },
  {
    sid: "HarelTrace",
    roles: ["trace"],
    actions: [
      "DescribeTable",
      "CreateTable",
      "PutItem",
      "DeleteItem",
      "ConditionCheckItem",
      "Query",
      "BatchWriteItem",
    ],
  },
  {
    sid: "HarelStateStore",
    roles: ["state"],
    actions: [
      ...ENSURE_WITH_TTL,
      "GetItem",
      "PutItem",
      "UpdateItem",
      "DeleteItem",
      "Scan",
    ],
  },
];

/**
 * The IAM policy granting exactly the DynamoDB actions both stores call, per table.
 *
 * @example The default tables, any region and account
 * ```ts
 * import assert from "node:assert/strict";
 * import { leastPrivilegePolicy } from "@harel/dynamodb/cli";
 *
 * assert.deepEqual(leastPrivilegePolicy().Statement[0]?.Resource, [
 *   "arn:aws:dynamodb:*:*:table/harel_executions",
 * ]);
 * ```
 *
 * @param options The prefix, state table, region, account and whether there are other writers.
 * @returns The policy document.
 */
export function leastPrivilegePolicy(options: PolicyOptions = {}): PolicyDocument {
  const prefix = options.prefix ?? "harel";
  const tables = executionTables(prefix);
  const stateTable = checkTableName("stateTable", options.stateTable ?? `${prefix}_state`);
  const otherWriters = options.otherWriters ?? false;
  if (typeof otherWriters !== "boolean") {
    throw new TypeError(`otherWriters must be a boolean, got ${JSON.stringify(otherWriters)}`);
  }
  const arn = (table: string) =>
    `arn:aws:dynamodb:${options.region ?? "*"}:${options.account ?? "*"}:table/${table}`;
  return {
    Version: "2012-10-17",
    Statement: STATEMENTS.filter((statement) => !statement.otherWriters || otherWriters).map((
      { sid, roles, actions, index },
    ) => ({
      Sid: sid,
      Effect: "Allow",
      Action: actions.map((action) => `dynamodb:${action}`),
      Resource: roles.map((role) =>
        arn(role === "state" ? stateTable : tables[role].name) +
        (index === STREAM ? "/stream/*" : index ? `/index/${index}` : "")
      ),
    })),
  };
}
