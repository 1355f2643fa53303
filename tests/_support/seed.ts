// Writes as the Python seed store makes them: an execution committed with a whole-item Put, and
// trace steps appended with its algorithm and its own trace_max (Query the highest index, Put at
// entry.index, else that index, or -1, plus 1, Delete index - trace_max; no guards).
import {
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  QueryCommand,
} from "@aws-sdk/client-dynamodb";

/** Appends one trace step the way the seed does; returns the index it wrote. */
export async function seedAppendTrace(
  client: DynamoDBClient,
  table: string,
  id: string,
  entry: Record<string, unknown>,
  traceMax: number,
): Promise<number> {
  const top = await client.send(
    new QueryCommand({
      TableName: table,
      KeyConditionExpression: "execution_id = :id",
      ExpressionAttributeValues: { ":id": { S: id } },
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  const max = top.Items?.[0]?.idx?.N;
  const index = typeof entry.index === "number"
    ? entry.index
    : (max === undefined ? -1 : Number(max)) + 1;
  await client.send(
    new PutItemCommand({
      TableName: table,
      Item: {
        execution_id: { S: id },
        idx: { N: String(index) },
        entry: { S: JSON.stringify(entry) },
      },
    }),
  );
  if (traceMax > 0 && index - traceMax >= 0) {
    await client.send(
      new DeleteItemCommand({
        TableName: table,
        Key: { execution_id: { S: id }, idx: { N: String(index - traceMax) } },
      }),
    );
  }
  return index;
}

/**
 * Commits `exe` as the Python store does: a whole-item Put of `id`, `data`, `version` and
 * `definition_id`, at `exe.version` — every attribute this module adds is gone afterwards.
 * `extra` adds attributes another writer stores beside them (a `ttl` of its own making).
 */
export async function seedPutExecution(
  client: Pick<DynamoDBClient, "send">,
  table: string,
  exe: { id: string; version: number; definition_id: string },
  extra: Record<string, unknown> = {},
): Promise<void> {
  await client.send(
    new PutItemCommand({
      TableName: table,
      Item: {
        id: { S: exe.id },
        data: { S: JSON.stringify(exe) },
        version: { N: String(exe.version) },
        definition_id: { S: exe.definition_id },
        ...extra as Record<string, never>,
      },
    }),
  );
}
