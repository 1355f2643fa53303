/**
 * The options of `DynamoDBStore`: of the constructor, of `create()` and of `dueTimers()`.
 * Re-exported by `execution_store.ts` (and so by `mod.ts`) unchanged.
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
   * Read executions, dedupe marks, listings and trace rings with strongly consistent reads. The
   * relay's reads that order and exactly-once rest on (holds, bodies, predecessors, other
   * writers' seqs) are strongly consistent whatever this says. @default {true}
   */
  consistentReads?: boolean;
  /**
   * Lifetime of dedupe marks in seconds: marks carry a `ttl` attribute, `ensureTables`
   * enables TTL on the processed table, and expired marks read as absent. A whole number
   * of seconds from 1 to 315,360,000 (ten years); `null` keeps marks forever.
   * @default {null}
   */
  processedTtlSeconds?: number | null;
  /**
   * Retention of finished executions in seconds: a commit that leaves an execution `DONE`,
   * `CANCELLED` or `FAILED` writes its `ttl` (now + this) in the same call, a commit that
   * reopens it removes it, `ensureTables` enables TTL on the executions table, and every read
   * treats an execution past its `ttl` as absent. A whole number of seconds from 1 to
   * 315,360,000 (ten years); `null` keeps finished executions forever. Trace steps, timers and
   * dedupe marks do not expire with it: see docs/retention.md.
   * @default {null}
   */
  finishedTtlSeconds?: number | null;
  /**
   * The clock expiries are measured with, in epoch milliseconds (as `Date.now`): the `ttl` of
   * finished executions and dedupe marks, and when reads count them as expired. For tests that
   * let time pass; DynamoDB itself deletes expired items by its own clock.
   * @default {Date.now}
   */
  now?: () => number;
  /** How many outbox (and spawn) seqs one counter call reserves for this store, 1 to 1,000,000. @default {1000} */
  seqBlockSize?: number;
  /** How often a commit is retried when DynamoDB reports a transaction conflict, 0 to 100. @default {8} */
  conflictRetries?: number;
  /**
   * How often a commit (and a `deleteTimer` or `appendTrace`) whose answer was lost is re-sent
   * with the same idempotency token, 0 to 100. @default {3}
   */
  ambiguousRetries?: number;
  /**
   * Whether another writer (the Python harel store, the seed) commits to these tables: `true`
   * runs what its rows need, `false` pays nothing for it. With `true`, relay passes find its
   * outbox entries and spawns by seq (a strong read of the counter item and a probe of the seqs
   * this module did not take) and its timers by a scan of a 1 MB page of the timers table per
   * sweep, and adopt them into the relay index; seq blocks are recorded in the counter item; and
   * `ensureTables` turns on the executions table's stream, which listings and passes read (the
   * status feed, at most every 10 s per store; the Streams permissions, and a client built by
   * the AWS SDK) to list its executions by status. With `false` none of this runs: no stream, no
   * scan, no read of the counters beyond reserving seqs; a store that reads an execution another
   * writer committed says so once (`console.warn`). See docs/operations.md ("Other writers").
   * @default {false}
   */
  otherWriters?: boolean;
}

/**
 * Options of {@linkcode DynamoDBStore.dueTimers}: the read limit, and a full scan for timers
 * the relay index does not hold yet.
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
   * Scan the timers table instead of querying the relay index: finds at once timers written
   * without the index's attributes (the Python store) that no adoption reached yet (the sweeps of
   * a store built with `otherWriters: true` adopt them as they go), at the cost of reading every
   * timer.
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
   * Create the tables where missing (on existing tables 13 calls: 11 DescribeTable and 2
   * DescribeTimeToLive; more for a new table).
   * `false` for a cold start that goes straight to work: one DescribeTable of the
   * executions table checks that DynamoDB answers and the tables were created (at deploy
   * time, with `ensureTables()`); a missing table is an immediate {@linkcode TableNotFound}.
   * @default {true}
   */
  ensureTables?: boolean;
  /**
   * Before the first call, compare the tables with their definitions (`checkTables()`: 7
   * DescribeTable and 2 DescribeTimeToLive calls, at once) and fail with a
   * {@linkcode TableDrift} listing every difference and its fix: a missing table, index or
   * projection, a wrong key, TTL off, a missing stream. For tables made as code, with
   * `ensureTables: false`.
   * @default {false}
   */
  checkTables?: boolean;
}
