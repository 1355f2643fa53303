/**
 * The options of `DynamoDBStateStore`: of the constructor and of `create()`.
 *
 * @module
 */
import type { ConnectOptions } from "../dynamo/connect.ts";

/**
 * Options of {@linkcode DynamoDBStateStore}.
 *
 * @example A state table of your own
 * ```ts
 * import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
 * import { DynamoDBStateStore } from "@harel/dynamodb";
 *
 * const state = new DynamoDBStateStore(new DynamoDBClient({}), {
 *   tableName: "agents_state",
 *   consistentReads: false,
 * });
 * ```
 */
export interface DynamoDBStateStoreOptions {
  /** The table's name. @default {"harel_state"} */
  tableName?: string;
  /** Read with strongly consistent reads (read-your-writes). @default {true} */
  consistentReads?: boolean;
  /**
   * The clock TTLs are measured with, in epoch milliseconds, for tests that let time pass
   * (DynamoDB still deletes expired items by its own clock).
   * @default {Date.now}
   */
  now?: () => number;
}

/**
 * Options of {@linkcode DynamoDBStateStore.create}: the store's options plus where DynamoDB is.
 *
 * @example Connecting to LocalStack
 * ```ts
 * import { DynamoDBStateStore } from "@harel/dynamodb";
 *
 * await using state = await DynamoDBStateStore.create({
 *   endpoint: "http://localhost:4566",
 *   tableName: "agents_state",
 * });
 * ```
 */
export interface CreateStateStoreOptions extends DynamoDBStateStoreOptions, ConnectOptions {
  /**
   * Create the table where missing and enable TTL on it. `false` for a cold start: one
   * DescribeTable checks the table exists, else {@linkcode TableNotFound}.
   * @default {true}
   */
  ensureTable?: boolean;
}
