// inspectExecution (one GetItem and a Query of its timers, in parallel) and readTimers.
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
import { checkKey, LIMITS, MAX_EPOCH_SECONDS } from "../../core/_validate.ts";
import { byFireAt } from "../../core/_bounded.ts";
import type {
  ExecutionInspection,
  InspectOptions,
  TimerReadOptions,
  TimerState,
} from "../../core/operator_types.ts";
import type { ExecutionReads } from "./_execution_reads.ts";
import { planInspect, planTimerRead } from "./_part_reads.ts";
import { isExpired, secondsOf } from "../commit/_retention.ts";
import { lastCommitTime } from "./_status_index.ts";

/**
 * The execution `id` with its first `timerLimit` timers by path, or null when it is absent or
 * expired; an {@linkcode UnreadableExecution} when its document cannot be read.
 */
export async function inspect(
  reads: ExecutionReads,
  id: string,
  options?: InspectOptions,
): Promise<ExecutionInspection | null> {
  const { client, tables } = reads;
  const timerLimit = planInspect(options);
  const [found, timers] = await Promise.all([
    client.send(
      new GetItemCommand({
        TableName: tables.executions.name,
        Key: executionKey(id),
        ConsistentRead: reads.consistent,
      }),
    ),
    timerLimit === 0 ? [] : readTimers(reads, id, { limit: timerLimit }),
  ]);
  const item = found.Item;
  if (!item || isExpired(item, secondsOf(reads.now))) return null;
  return {
    execution: executionFromItem(item, id),
    updatedAt: lastCommitTime(item),
    expiresAt: expiryOf(item),
    timers: timers.sort(byFireAt),
  };
}

/** The first `limit` timers of execution `id` by path after `after`, with their bookkeeping. */
export async function readTimers(
  reads: ExecutionReads,
  id: string,
  options?: TimerReadOptions,
): Promise<TimerState[]> {
  checkKey("id", id, LIMITS.partitionKeyBytes);
  const { limit, after } = planTimerRead(options);
  const names: Record<string, string> = { "#e": TIMER.executionId };
  const values: Item = { ":id": S(id) };
  let condition = "#e = :id";
  if (after !== null) {
    condition += " AND #p > :after";
    names["#p"] = TIMER.path;
    values[":after"] = S(after);
  }
  const timers: TimerState[] = [];
  const query = (start: Item | undefined) =>
    reads.client.send(
      new QueryCommand({
        TableName: reads.tables.timers.name,
        KeyConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ConsistentRead: reads.consistent,
        ExclusiveStartKey: start,
        ...(limit === Infinity ? {} : { Limit: Math.min(limit - timers.length, MAX_QUERY_PAGE) }),
      }),
    );
  for await (const page of pages(query)) {
    timers.push(...(page.Items ?? []).map(timerState));
    if (timers.length >= limit) break;
  }
  return timers;
}

/** The most items one Query page of a bounded read asks for (DynamoDB stops at 1 MB anyway). */
const MAX_QUERY_PAGE = 1000;

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
