/**
 * The options of `DynamoDBStore`: of the constructor, of `create()` and of `dueTimers()`.
 *
 * @module
 */
import type { ConnectOptions } from "../dynamo/connect.ts";
import type { ReadLimitOptions } from "../core/types.ts";

/**
 * Options of {@linkcode DynamoDBStore}.
 *
 * @example A store with a short trace and expiring dedupe marks
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 * import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
 *
 * const store = new DynamoDBStore(new DynamoDBClient({}), {
 *   prefix: "orders",
 *   traceMax: 50,
 *   processedTtlSeconds: 7 * 86_400,
 * });
 * ```
 */
export interface DynamoDBStoreOptions {
  /** Table name prefix: the tables are `{prefix}_executions`, `{prefix}_outbox`, ... @default {"harel"} */
  prefix?: string;
  /** How many trace steps each execution keeps (a ring), 0 to 1,000,000; 0 keeps every step. @default {200} */
  traceMax?: number;
  /**
   * Read executions, dedupe marks, listings and trace rings strongly consistent. The relay's
   * reads that order rests on are strongly consistent whatever this says. @default {true}
   */
  consistentReads?: boolean;
  /** Lifetime of dedupe marks, seconds from 1 to 315,360,000; `null`: forever. @default {null} */
  processedTtlSeconds?: number | null;
  /**
   * Retention of finished executions, whole seconds from 1 to 315,360,000 (docs/retention.md);
   * `null` keeps them forever. @default {null}
   */
  finishedTtlSeconds?: number | null;
  /** The clock expiries are measured with, in epoch ms (for tests). @default {Date.now} */
  now?: () => number;
  /** How many outbox (and spawn) seqs one counter call reserves for this store, 1 to 1,000,000. @default {1000} */
  seqBlockSize?: number;
  /** How often a commit is retried when DynamoDB reports a transaction conflict, 0 to 100. @default {8} */
  conflictRetries?: number;
  /** How often a write whose answer was lost is re-sent, 0 to 100. @default {3} */
  ambiguousRetries?: number;
  /**
   * Whether another writer (the Python harel store) commits to these tables: `true` finds and
   * adopts its rows; `false` pays nothing for it. See docs/operations.md ("Other writers").
   * @default {false}
   */
  otherWriters?: boolean;
}

/**
 * Options of {@linkcode DynamoDBStore.dueTimers}: the read limit, and a full scan.
 *
 * @example A sweep that also finds timers written without the relay index's attributes
 * ```ts
 * import { DynamoDBStore, type DueTimersOptions } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const options: DueTimersOptions = { limit: 100, scan: true };
 * console.log(await store.dueTimers(Date.now() / 1000, options));
 * ```
 */
export interface DueTimersOptions extends ReadLimitOptions {
  /**
   * Scan the timers table instead of the relay index: finds timers written without the index's
   * attributes (the Python store's) that no adoption reached yet, reading every timer.
   * @default {false}
   */
  scan?: boolean;
}

/**
 * Options of {@linkcode DynamoDBStore.create}: the store's options plus where DynamoDB is.
 *
 * @example Connecting and configuring in one call
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *   prefix: "orders",
 *   traceMax: 50,
 * });
 * ```
 */
export interface CreateStoreOptions extends DynamoDBStoreOptions, ConnectOptions {
  /**
   * Create the tables where missing (13 calls on existing tables). `false` for a cold start: one
   * DescribeTable checks they exist (with `otherWriters: true`, their streams too).
   * @default {true}
   */
  ensureTables?: boolean;
  /**
   * Before the first call, compare the tables with their definitions and fail with a
   * {@linkcode TableDrift} listing every difference (for tables made as code).
   * @default {false}
   */
  checkTables?: boolean;
}
