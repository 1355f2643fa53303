/**
 * The tables both stores keep, and creating them idempotently.
 *
 * @module
 */
import {
  type AttributeDefinition,
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type GlobalSecondaryIndex,
  type TableDescription,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import type { DynamoDBSender } from "./_dynamo.ts";
import { isNamed, repeat } from "./_dynamo.ts";
import { STREAM, type TableDefinition } from "./table_definitions.ts";

export {
  checkTableName,
  type ExecutionTables,
  executionTables,
  type IndexSpec,
  type TableSpec,
} from "../core/table_specs.ts";

/**
 * Creates the table as `input` defines it (with its indexes and stream: one call, nothing to
 * backfill) unless it exists, then waits until it is ACTIVE. "Already exists" is fine; every
 * other error is real. An existing table is left to {@linkcode ensureIndex},
 * {@linkcode ensureStream} and {@linkcode ensureTtl} ({@linkcode ensureDefinedTable} runs them).
 */
export async function ensureTable(
  client: DynamoDBSender,
  input: CreateTableCommandInput,
): Promise<void> {
  const describe = () => client.send(new DescribeTableCommand({ TableName: input.TableName }));
  let status: string | undefined;
  try {
    status = (await describe()).Table?.TableStatus;
  } catch (error) {
    if (!isNamed(error, "ResourceNotFoundException")) throw error;
    try {
      const created = await client.send(new CreateTableCommand(input));
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

/**
 * Makes a table what its definition says, as far as DynamoDB can change a table in place:
 * creates it when missing, adds the indexes it lacks, turns on its stream (when it has one) and
 * its TTL. Resolves to whether an index was added to an existing table (its rows may need
 * adopting).
 */
export async function ensureDefinedTable(
  client: DynamoDBSender,
  definition: TableDefinition,
): Promise<boolean> {
  const { create, ttlAttribute } = definition;
  const name = create.TableName!;
  await ensureTable(client, create);
  let added = false;
  for (const index of create.GlobalSecondaryIndexes ?? []) {
    if (await ensureIndex(client, name, index, create.AttributeDefinitions ?? [])) added = true;
  }
  if (create.StreamSpecification?.StreamEnabled) await ensureStream(client, name);
  if (ttlAttribute !== null) await ensureTtl(client, name, ttlAttribute);
  return added;
}

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

/**
 * Adds a global secondary index (its key's types in `attributes`) to an existing table unless it
 * has it, then waits until the index is ACTIVE (on AWS, adding an index to a full table backfills it first, which
 * can take minutes). Safe when several processes do it at once. Resolves to whether this call
 * added it.
 */
export async function ensureIndex(
  client: DynamoDBSender,
  tableName: string,
  index: GlobalSecondaryIndex,
  attributes: readonly AttributeDefinition[],
): Promise<boolean> {
  let added = false;
  await repeat(async () => {
    const table = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
    const found = table?.GlobalSecondaryIndexes?.find((gsi) => gsi.IndexName === index.IndexName);
    if (found) return found.IndexStatus === "ACTIVE" && !found.Backfilling;
    // One index change at a time per table: wait while the table is busy with another.
    if (table?.TableStatus !== "ACTIVE") return false;
    try {
      await client.send(
        new UpdateTableCommand({
          TableName: tableName,
          AttributeDefinitions: attributes.filter(({ AttributeName }) =>
            index.KeySchema?.some((key) => key.AttributeName === AttributeName)
          ),
          GlobalSecondaryIndexUpdates: [{ Create: { ...index, ...provisioned(table) } }],
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
 * Makes the table's stream the one a store with other writers reads (new and old images): turns
 * it on, or replaces one of another view (DynamoDB cannot change a stream's view: it is turned
 * off, then on again once the table is ACTIVE, a new stream that the feeds follow), waiting while
 * the table is busy. Safe when several processes do it at once.
 */
export async function ensureStream(client: DynamoDBSender, tableName: string): Promise<void> {
  await repeat(async () => {
    const table = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
    const on = table?.StreamSpecification?.StreamEnabled === true;
    if (on && table?.StreamSpecification?.StreamViewType === STREAM.StreamViewType) return true;
    if (table?.TableStatus !== "ACTIVE") return false;
    try {
      await client.send(
        new UpdateTableCommand({
          TableName: tableName,
          StreamSpecification: on ? { StreamEnabled: false } : { ...STREAM },
        }),
      );
      return !on;
    } catch (error) {
      // Another process changes the table right now (or turned the stream on or off): look again.
      if (
        !isNamed(error, "ResourceInUseException") && !isNamed(error, "LimitExceededException") &&
        !(isNamed(error, "ValidationException") &&
          /already has an enabled stream|no stream|already disabled/i.test(String(error)))
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
