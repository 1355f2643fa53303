/**
 * The tables both stores keep, and creating them idempotently.
 *
 * @module
 */
import {
  type AttributeDefinition,
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type GlobalSecondaryIndex,
  type KeySchemaElement,
  type TableDescription,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import type { DynamoDBSender } from "./_dynamo.ts";
import { isNamed, repeat } from "./_dynamo.ts";
import type { TableSpec } from "../core/table_specs.ts";

export {
  checkTableName,
  type ExecutionTables,
  executionTables,
  type TableSpec,
} from "../core/table_specs.ts";

/**
 * Creates the table unless it exists (PAY_PER_REQUEST), then waits until it is ACTIVE.
 * "Already exists" is fine; every other error is real. A table created here gets `indexes`
 * with it (one call, nothing to backfill), and with `stream` its stream (new and old images); an
 * existing one is left to {@linkcode ensureIndex} and {@linkcode ensureStream}.
 */
export async function ensureTable(
  client: DynamoDBSender,
  spec: TableSpec,
  indexes: readonly IndexSpec[] = [],
  stream = false,
): Promise<void> {
  const describe = () => client.send(new DescribeTableCommand({ TableName: spec.name }));
  let status: string | undefined;
  try {
    status = (await describe()).Table?.TableStatus;
  } catch (error) {
    if (!isNamed(error, "ResourceNotFoundException")) throw error;
    const keys: [string, "S" | "N", "HASH" | "RANGE"][] = [[...spec.hash, "HASH"]];
    if (spec.range) keys.push([...spec.range, "RANGE"]);
    const attributes = new Map(keys.map(([name, type]) => [name, type]));
    for (const index of indexes) {
      for (const [name, type] of [index.hash, index.range]) attributes.set(name, type);
    }
    try {
      const created = await client.send(
        new CreateTableCommand({
          TableName: spec.name,
          BillingMode: "PAY_PER_REQUEST",
          AttributeDefinitions: [...attributes].map((
            [AttributeName, AttributeType],
          ): AttributeDefinition => ({ AttributeName, AttributeType })),
          KeySchema: keys.map(([AttributeName, , KeyType]): KeySchemaElement => ({
            AttributeName,
            KeyType,
          })),
          GlobalSecondaryIndexes: indexes.length ? indexes.map(indexDefinition) : undefined,
          // With the table, not after it: turning it on later is another change of the table.
          StreamSpecification: stream ? STREAM : undefined,
        }),
      );
      status = created.TableDescription?.TableStatus;
    } catch (createError) {
      if (!isNamed(createError, "ResourceInUseException")) throw createError;
    }
  }
  // On AWS a new table is CREATING for a few seconds; writes before ACTIVE fail.
  await repeat(async () => {
    if (status !== "ACTIVE") status = (await describe()).Table?.TableStatus;
    return status === "ACTIVE";
  }, POLL);
}

/** The stream ensureTable() and ensureStream() turn on: new and old images. */
const STREAM = { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" } as const;

/** How often table and index states are polled while DynamoDB changes them. */
const POLL = { minDelayMs: 200, maxDelayMs: 2000 };

/** Turns on DynamoDB's TTL on `attribute` unless it is already on. */
export async function ensureTtl(
  client: DynamoDBSender,
  tableName: string,
  attribute: string,
): Promise<void> {
  const current = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const description = current.TimeToLiveDescription;
  if (
    description?.AttributeName === attribute &&
    (description.TimeToLiveStatus === "ENABLED" || description.TimeToLiveStatus === "ENABLING")
  ) return;
  try {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: attribute, Enabled: true },
      }),
    );
  } catch (error) {
    // Two processes enabling it at once: the loser is told it is already enabled.
    if (!(isNamed(error, "ValidationException") && /already enabled/i.test(String(error)))) {
      throw error;
    }
  }
}

/**
 * A table a store was told exists (`create()` with `ensureTables: false` or
 * `ensureTable: false`) and does not: create it at deploy time, or let `create()` do it.
 *
 * @example Telling a missing table from an unreachable DynamoDB
 * ```ts
 * import { DynamoDBStore, TableNotFound } from "@harel/dynamodb";
 *
 * try {
 *   await using _store = await DynamoDBStore.create({
 *     endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *     ensureTables: false,
 *   });
 * } catch (error) {
 *   if (error instanceof TableNotFound) console.error(error.table, error.message);
 *   else throw error;
 * }
 * ```
 */
export class TableNotFound extends Error {
  /** Always `"TableNotFound"`. */
  override name = "TableNotFound";

  /**
   * Builds the error for a missing table.
   *
   * @param table The table that does not exist.
   * @param remedy How to create it.
   * @param options DynamoDB's ResourceNotFoundException, as `cause`.
   */
  constructor(readonly table: string, remedy: string, options?: ErrorOptions) {
    super(`table ${table} does not exist: ${remedy}`, options);
  }
}

/**
 * A table lacks a global secondary index a store reads (the relay index or the status index, on
 * tables made without it): run `ensureTables()` once.
 *
 * @example Reading which index is missing
 * ```ts
 * import assert from "node:assert/strict";
 * import { IndexNotFound } from "@harel/dynamodb";
 *
 * const error = new IndexNotFound("harel_timers", "relay_part-relay_order", "run ensureTables()");
 * assert.equal(error.index, "relay_part-relay_order");
 * assert.match(error.message, /has no index relay_part-relay_order: run ensureTables\(\)/);
 * ```
 */
export class IndexNotFound extends Error {
  /** Always `"IndexNotFound"`. */
  override name = "IndexNotFound";

  /**
   * Builds the error for a missing index.
   *
   * @param table The table without the index.
   * @param index The index it lacks.
   * @param remedy How to add it.
   * @param options DynamoDB's ValidationException, as `cause`.
   */
  constructor(
    readonly table: string,
    readonly index: string,
    remedy: string,
    options?: ErrorOptions,
  ) {
    super(`the table ${table} has no index ${index}: ${remedy}`, options);
  }
}

/**
 * One DescribeTable of table `name`: resolves when the table exists (which also proves DynamoDB
 * answers), throws {@linkcode TableNotFound} with `remedy` when it does not.
 */
export async function checkTableExists(
  client: DynamoDBSender,
  name: string,
  remedy: string,
): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: name }));
  } catch (error) {
    if (isNamed(error, "ResourceNotFoundException")) {
      throw new TableNotFound(name, remedy, { cause: error });
    }
    throw error;
  }
}

/** A global secondary index: its name and key, projecting keys only unless `include` says more. */
export interface IndexSpec {
  /** The index name. */
  name: string;
  /** HASH key attribute and type. */
  hash: readonly [string, "S" | "N"];
  /** RANGE key attribute and type. */
  range: readonly [string, "S" | "N"];
  /** Attributes projected besides the keys (an INCLUDE projection). @default {[]} */
  include?: readonly string[];
}

/**
 * Adds a keys-only global secondary index to an existing table unless it has it, then waits
 * until the index is ACTIVE (on AWS, adding an index to a full table backfills it first, which
 * can take minutes). Safe when several processes do it at once. Resolves to whether this call
 * added it.
 */
export async function ensureIndex(
  client: DynamoDBSender,
  tableName: string,
  index: IndexSpec,
): Promise<boolean> {
  let added = false;
  await repeat(async () => {
    const table = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
    const found = table?.GlobalSecondaryIndexes?.find((gsi) => gsi.IndexName === index.name);
    if (found) return found.IndexStatus === "ACTIVE" && !found.Backfilling;
    // One index change at a time per table: wait while the table is busy with another.
    if (table?.TableStatus !== "ACTIVE") return false;
    try {
      await client.send(
        new UpdateTableCommand({
          TableName: tableName,
          AttributeDefinitions: [index.hash, index.range].map(([AttributeName, AttributeType]) => ({
            AttributeName,
            AttributeType,
          })),
          GlobalSecondaryIndexUpdates: [{
            Create: { ...indexDefinition(index), ...provisioned(table) },
          }],
        }),
      );
      added = true;
    } catch (error) {
      // Another process is adding it (or another index) right now: look again.
      if (
        !isNamed(error, "ResourceInUseException") && !isNamed(error, "LimitExceededException")
      ) throw error;
    }
    return false;
  }, POLL);
  return added;
}

/**
 * Turns on the table's stream (new and old images) unless it has one, waiting while the table
 * is busy (an index being added). A stream another user turned on with another view is kept:
 * the status feed reads the items of a keys-only one by key. Safe when several processes do it
 * at once.
 */
export async function ensureStream(client: DynamoDBSender, tableName: string): Promise<void> {
  await repeat(async () => {
    const table = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
    if (table?.StreamSpecification?.StreamEnabled) return true;
    if (table?.TableStatus !== "ACTIVE") return false;
    try {
      await client.send(
        new UpdateTableCommand({
          TableName: tableName,
          StreamSpecification: STREAM,
        }),
      );
      return true;
    } catch (error) {
      // Another process changes the table right now (or turned the stream on): look again.
      if (
        !isNamed(error, "ResourceInUseException") && !isNamed(error, "LimitExceededException") &&
        !(isNamed(error, "ValidationException") &&
          /already has an enabled stream/i.test(String(error)))
      ) throw error;
    }
    return false;
  }, POLL);
}

/** A provisioned table's index needs its own throughput: the table's. On-demand needs none. */
function provisioned(table: TableDescription | undefined) {
  const throughput = table?.ProvisionedThroughput;
  if (
    table?.BillingModeSummary?.BillingMode === "PAY_PER_REQUEST" || !throughput?.ReadCapacityUnits
  ) {
    return {};
  }
  return {
    ProvisionedThroughput: {
      ReadCapacityUnits: throughput.ReadCapacityUnits,
      WriteCapacityUnits: throughput.WriteCapacityUnits ?? 1,
    },
  };
}

/** A global secondary index as CreateTable and UpdateTable take it. */
function indexDefinition(index: IndexSpec): GlobalSecondaryIndex {
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
