/**
 * The tables' names and keys (no AWS SDK here, so the in-memory twins load without it).
 *
 * @module
 */
import { EXECUTION, FAILURE, OUTBOX, RELAY, TIMER } from "./_layout.ts";

/**
 * A table's name and key.
 *
 * @example Reading a table's key
 * ```ts
 * import assert from "node:assert/strict";
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const { name, hash, range } = store.tables.timers;
 * assert.equal(name, "harel_timers");
 * assert.deepEqual(hash, ["execution_id", "S"]);
 * assert.deepEqual(range, ["path", "S"]);
 * ```
 */
export interface TableSpec {
  /** The full table name. */
  name: string;
  /** HASH key attribute and type. */
  hash: [string, "S" | "N"];
  /** RANGE key attribute and type, if any. */
  range?: [string, "S" | "N"];
}

/**
 * The seven execution-store tables, by their role.
 *
 * @example Naming the tables of a prefix
 * ```ts
 * import assert from "node:assert/strict";
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT"), prefix: "prod" });
 * assert.equal(store.tables.executions.name, "prod_executions");
 * ```
 */
export interface ExecutionTables {
  /** Execution documents, key `id`. */
  executions: TableSpec;
  /** Outbox entries, key `seq`. */
  outbox: TableSpec;
  /** Spawn intents, key `seq`. */
  spawns: TableSpec;
  /** Durable timers, key `execution_id` + `path`. */
  timers: TableSpec;
  /** Dedupe marks, key `execution_id` + `event_id`. */
  processed: TableSpec;
  /** Seq counters (`outbox`, `spawn`), key `id`. */
  counters: TableSpec;
  /** Trace steps, key `execution_id` + `idx`. */
  trace: TableSpec;
}

const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;

/** Throws unless `name` is a valid DynamoDB table name. */
export function checkTableName(field: string, name: unknown): string {
  if (typeof name !== "string" || !TABLE_NAME.test(name)) {
    throw new TypeError(
      `${field} must be 3 to 255 characters of A-Z a-z 0-9 _ - . (a DynamoDB table name), got ${
        JSON.stringify(name)
      }`,
    );
  }
  return name;
}

/** The seven tables named `{prefix}_{name}`, laid out as the wire format says. */
export function executionTables(prefix: string): ExecutionTables {
  if (typeof prefix !== "string" || !/^[A-Za-z0-9_.-]{1,200}$/.test(prefix)) {
    throw new TypeError(
      `prefix must be 1 to 200 characters of A-Z a-z 0-9 _ - . (it starts DynamoDB table names), got ${
        JSON.stringify(prefix)
      }`,
    );
  }
  const table = (name: string, hash: TableSpec["hash"], range?: TableSpec["range"]) => ({
    name: `${prefix}_${name}`,
    hash,
    range,
  });
  return {
    executions: table("executions", ["id", "S"]),
    outbox: table("outbox", ["seq", "N"]),
    spawns: table("spawns", ["seq", "N"]),
    timers: table("timers", ["execution_id", "S"], ["path", "S"]),
    processed: table("processed", ["execution_id", "S"], ["event_id", "S"]),
    counters: table("counters", ["id", "S"]),
    trace: table("trace", ["execution_id", "S"], ["idx", "N"]),
  };
}

/** A global secondary index: its name and key, projecting keys only unless `include` says more. */
export interface IndexSpec {
  /** The index name. */
  readonly name: string;
  /** HASH key attribute and type. */
  readonly hash: readonly [string, "S" | "N"];
  /** RANGE key attribute and type. */
  readonly range: readonly [string, "S" | "N"];
  /** Attributes projected besides the keys (an INCLUDE projection). @default {[]} */
  readonly include?: readonly string[];
}

/** The status index, projecting `definition_id` for its filter (it never changes: no write). */
export const STATUS_INDEX = {
  name: "status_shard-status_at",
  hash: [EXECUTION.statusShard, "S"],
  range: [EXECUTION.statusAt, "N"],
  include: [EXECUTION.definitionId],
} as const;

/** The index on each relay table, projecting what a pass decides with, never the bodies. */
export const RELAY_INDEX = {
  name: "relay_part-relay_order",
  hash: [RELAY.part, "S"],
  range: [RELAY.order, "N"],
  include: [
    OUTBOX.targetId,
    OUTBOX.prevSeq,
    OUTBOX.createdAt,
    FAILURE.attempts,
    FAILURE.retryAt,
    FAILURE.deadAt,
    FAILURE.unreadable,
    TIMER.fireAt,
  ],
} as const;
