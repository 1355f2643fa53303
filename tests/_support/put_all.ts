// Filling a table fast for a test or the bench: items written straight with BatchWriteItem, 25 a
// call, what comes back unprocessed sent again, a few calls in flight.
import {
  type AttributeValue,
  BatchWriteItemCommand,
  type DynamoDBClient,
  type WriteRequest,
} from "@aws-sdk/client-dynamodb";

/** Writes `items` into `table` (Puts, 25 a call, `lanes` calls in flight). */
export async function putAll(
  client: Pick<DynamoDBClient, "send">,
  table: string,
  items: Record<string, AttributeValue>[],
  lanes = 16,
): Promise<void> {
  const batches: WriteRequest[][] = [];
  for (let i = 0; i < items.length; i += 25) {
    batches.push(items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })));
  }
  let next = 0;
  const lane = async () => {
    while (next < batches.length) {
      let pending = batches[next++]!;
      while (pending.length > 0) {
        const result = await client.send(
          new BatchWriteItemCommand({ RequestItems: { [table]: pending } }),
        );
        pending = result.UnprocessedItems?.[table] ?? [];
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}
