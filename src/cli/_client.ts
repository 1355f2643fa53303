// The CLI's client: connecting while an operator waits, and reads that name a missing table.
import { type DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { awaitAnswer, buildClient, checkSetup, type ConnectRetry } from "../dynamo/connect.ts";
import { isNamed, isUnreachable, type Item, pages } from "../dynamo/_dynamo.ts";
import { MissingSetup } from "../core/errors.ts";
import { IndexNotFound } from "../dynamo/tables.ts";
import { CliError, endpointOf, usage, type Values } from "./_args.ts";

/** How long the CLI waits for DynamoDB to answer: an operator is waiting. */
export const CLI_DEADLINE_MS = 5_000;

/** A line on stderr per failed attempt while the CLI waits for DynamoDB. */
export function progress(retry: ConnectRetry): string {
  const why = retry.error instanceof Error
    ? retry.error.message.split("\n")[0]
    : String(retry.error);
  return `waiting for DynamoDB at ${retry.endpoint}: attempt ${retry.attempt} failed (${why}); ` +
    `retrying in ${(retry.delayMs / 1000).toFixed(1)} s (gives up after ${
      retry.deadlineMs / 1000
    } s)`;
}

/** A client, once DynamoDB answers (within a few seconds); an operator is waiting. */
export async function connect(
  endpoint: string | null,
  values: Values,
  probeTable: string,
  onRetry: (retry: ConnectRetry) => void,
): Promise<DynamoDBClient> {
  const client = usage(() =>
    buildClient({
      endpoint,
      region: values.region as string | undefined,
      requestTimeoutMs: 10_000,
      clientConfig: { maxAttempts: 2 },
    })
  );
  try {
    const region = await checkSetup(client);
    await awaitAnswer(client, probeTable, {
      endpoint: endpoint || null,
      deadlineMs: CLI_DEADLINE_MS,
      backoff: { minDelayMs: 250, maxDelayMs: 1_000 },
      onRetry,
    }, region);
  } catch (error) {
    client.destroy();
    if (error instanceof MissingSetup && error.missing === "region") {
      throw new CliError(
        "no AWS region: pass --region or set AWS_REGION for AWS, " +
          "or pass --endpoint or set DYNAMODB_ENDPOINT for a local DynamoDB",
        { cause: error },
      );
    }
    throw error;
  }
  return client;
}

export function describeFailure(error: unknown, values: Values): string {
  // Says what failed already (SQS, a missing table, ...), whatever its cause.
  if (error instanceof CliError) return error.message;
  if (error instanceof IndexNotFound) {
    return `the table ${error.table} has no index ${error.index} (tables made without it): ` +
      "run `ensure-tables` once (it adds the index), or pass --scan (reads the whole table)";
  }
  if (isUnreachable(error)) {
    let where = "AWS";
    try {
      where = endpointOf(values) ?? "AWS";
    } catch { /* refused before connecting: not this failure */ }
    return `cannot reach DynamoDB at ${where}: ${(error as Error).message || String(error)}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** `work`, with a missing table reported by its name (DynamoDB's message names none). */
export async function onTable<T>(tableName: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (!isNamed(error, "ResourceNotFoundException")) throw error;
    throw new CliError(
      `table ${tableName} does not exist; check --prefix and --endpoint, ` +
        "or create the tables with `ensure-tables`",
      { cause: error },
    );
  }
}

/** The number of items in a table, by `Select: "COUNT"` scans (every page). */
export async function count(client: DynamoDBClient, tableName: string): Promise<number> {
  let total = 0;
  const scan = (start: Item | undefined) =>
    client.send(
      new ScanCommand({ TableName: tableName, Select: "COUNT", ExclusiveStartKey: start }),
    );
  await onTable(
    tableName,
    (async () => {
      for await (const page of pages(scan)) total += page.Count ?? 0;
    })(),
  );
  return total;
}
