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
  type KeySchemaElement,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { sleep } from "./_backoff.ts";
import { type DynamoDBSender, isNamed } from "./connect.ts";
import type { TableSpec } from "./table_specs.ts";

export {
  checkTableName,
  type ExecutionTables,
  executionTables,
  type TableSpec,
} from "./table_specs.ts";

/**
 * Creates the table unless it exists (PAY_PER_REQUEST), then waits until it is ACTIVE.
 * "Already exists" is fine; every other error is real.
 */
export async function ensureTable(client: DynamoDBSender, spec: TableSpec): Promise<void> {
  const describe = () => client.send(new DescribeTableCommand({ TableName: spec.name }));
  let status: string | undefined;
  try {
    status = (await describe()).Table?.TableStatus;
  } catch (error) {
    if (!isNamed(error, "ResourceNotFoundException")) throw error;
    const keys: [string, "S" | "N", "HASH" | "RANGE"][] = [[...spec.hash, "HASH"]];
    if (spec.range) keys.push([...spec.range, "RANGE"]);
    try {
      const created = await client.send(
        new CreateTableCommand({
          TableName: spec.name,
          BillingMode: "PAY_PER_REQUEST",
          AttributeDefinitions: keys.map(([AttributeName, AttributeType]): AttributeDefinition => ({
            AttributeName,
            AttributeType,
          })),
          KeySchema: keys.map(([AttributeName, , KeyType]): KeySchemaElement => ({
            AttributeName,
            KeyType,
          })),
        }),
      );
      status = created.TableDescription?.TableStatus;
    } catch (createError) {
      if (!isNamed(createError, "ResourceInUseException")) throw createError;
    }
  }
  // On AWS a new table is CREATING for a few seconds; writes before ACTIVE fail.
  for (let n = 0; status !== "ACTIVE"; n++) {
    if (n > 0) await sleep(Math.min(2000, 100 * 2 ** n));
    status = (await describe()).Table?.TableStatus;
  }
}

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
 *     endpoint: "http://127.0.0.1:8000",
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
