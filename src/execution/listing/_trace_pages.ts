// A page of an execution's trace: a descending Query that stops at the limit, so that a trace
// kept whole (`traceMax: 0`) is read O(page), not O(steps).
import { checkKey, LIMITS } from "../../core/_validate.ts";
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { type Item, N, pages, S } from "../../dynamo/_dynamo.ts";
import { TRACE, traceStepFromItem } from "../../core/_layout.ts";
import type { ExecutionReads } from "./_execution_reads.ts";
import { planTraceRead, type TraceRead } from "./_part_reads.ts";
import type { TraceReadOptions } from "../../core/operator_types.ts";
import type { TraceRing } from "../commit/_trace_ring.ts";

/** The most steps one Query page asks for (DynamoDB stops at 1 MB anyway). */
const MAX_QUERY_PAGE = 1000;

/** `readTrace`: the whole ring, or a page of it (the newest `limit` steps below `before`). */
export async function readTraceSteps(
  reads: ExecutionReads & { ring: TraceRing },
  id: string,
  options?: TraceReadOptions,
): Promise<Record<string, unknown>[]> {
  checkKey("id", id, LIMITS.partitionKeyBytes);
  const read = planTraceRead(options);
  return read.whole ? await reads.ring.read(id) : await readTracePage(reads, id, read);
}

/** The newest `limit` steps of execution `id` below index `before`, oldest first. */
export async function readTracePage(
  reads: ExecutionReads,
  id: string,
  { limit, before }: TraceRead,
): Promise<Record<string, unknown>[]> {
  const names: Record<string, string> = { "#e": TRACE.executionId };
  const values: Item = { ":id": S(id) };
  let condition = "#e = :id";
  if (before !== null) {
    condition += " AND #i < :before";
    names["#i"] = TRACE.idx;
    values[":before"] = N(before);
  }
  const steps: Record<string, unknown>[] = [];
  const query = (start: Item | undefined) =>
    reads.client.send(
      new QueryCommand({
        TableName: reads.tables.trace.name,
        KeyConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ScanIndexForward: false,
        ConsistentRead: reads.consistent,
        ExclusiveStartKey: start,
        ...(limit === Infinity ? {} : { Limit: Math.min(limit - steps.length, MAX_QUERY_PAGE) }),
      }),
    );
  for await (const page of pages(query)) {
    for (const item of page.Items ?? []) steps.push(traceStepFromItem(item, id));
    if (steps.length >= limit) break;
  }
  return steps.slice(0, limit).reverse();
}
