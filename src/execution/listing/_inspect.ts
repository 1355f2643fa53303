// inspectExecution (#25): one execution as an operator sees it — the document, when this module
// last committed it, when it expires, and its timers with their relay bookkeeping. One GetItem
// and a Query of its timers (page by page), in parallel.
import { GetItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import { type Item, pages, S } from "../../dynamo/_dynamo.ts";
import {
  EXECUTION,
  executionFromItem,
  executionKey,
  FAILURE,
  TIMER,
  timerFromItem,
} from "../../core/_layout.ts";
import { MAX_EPOCH_SECONDS } from "../../core/_validate.ts";
import { byFireAt } from "../../core/_bounded.ts";
import type { ExecutionInspection, TimerState } from "../../core/operator_types.ts";
import type { ExecutionReads } from "./_execution_reads.ts";
import { isExpired, secondsOf } from "../commit/_retention.ts";
import { lastCommitTime } from "./_status_index.ts";

/** The execution `id` with its timers, or null when it is absent or expired. */
export async function inspect(
  reads: ExecutionReads,
  id: string,
): Promise<ExecutionInspection | null> {
  const { client, tables } = reads;
  const query = (start: Item | undefined) =>
    client.send(
      new QueryCommand({
        TableName: tables.timers.name,
        KeyConditionExpression: "#e = :id",
        ExpressionAttributeNames: { "#e": TIMER.executionId },
        ExpressionAttributeValues: { ":id": S(id) },
        ConsistentRead: reads.consistent,
        ExclusiveStartKey: start,
      }),
    );
  const readTimers = async () => {
    const timers: TimerState[] = [];
    for await (const page of pages(query)) timers.push(...(page.Items ?? []).map(timerState));
    return timers;
  };
  const [found, timers] = await Promise.all([
    client.send(
      new GetItemCommand({
        TableName: tables.executions.name,
        Key: executionKey(id),
        ConsistentRead: reads.consistent,
      }),
    ),
    readTimers(),
  ]);
  const item = found.Item;
  if (!item || isExpired(item, secondsOf(reads.now))) return null;
  return {
    execution: executionFromItem(item, `execution ${id}`),
    updatedAt: lastCommitTime(item),
    expiresAt: expiryOf(item),
    timers: timers.sort(byFireAt),
  };
}

/** When an item expires: its numeric `ttl` in epoch seconds; another `ttl` never expires. */
export function expiryOf(item: Item): number | null {
  const ttl = Number(item[EXECUTION.ttl]?.N);
  return Number.isFinite(ttl) && ttl <= MAX_EPOCH_SECONDS ? ttl : null;
}

/** A stored timer with what a relay recorded on it. */
function timerState(item: Item): TimerState {
  const number = (name: string) => {
    const value = item[name]?.N;
    return value === undefined ? null : Number(value);
  };
  return {
    ...timerFromItem(item),
    attempts: number(FAILURE.attempts) ?? 0,
    retryAt: number(FAILURE.retryAt),
    deadAt: number(FAILURE.deadAt),
    lastError: item[FAILURE.lastError]?.S ?? null,
  };
}
