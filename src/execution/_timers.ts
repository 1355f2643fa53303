// The timers table's reads and writes: due timers by a scan (with `relayIndex: false`, or
// `dueTimers(now, { scan: true })`), the legacy timer index's backfill, and the claim of one due
// timer. Memory grows with the `limit` asked for, never with the table.
import { WRITES_IN_FLIGHT } from "../core/_lanes.ts";
import type { Reads } from "./_seq_queues.ts";
import { ScanCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { byFireAt, Lowest } from "../core/_bounded.ts";
import { fireAtGuard } from "./_fire_at.ts";
import { type Resends, transactOne } from "../dynamo/_lost_answers.ts";
import { eachConcurrently, isNamed, type Item, N, pages, scanAll } from "../dynamo/_dynamo.ts";
import { FAILURE, RELAY_DUE, TIMER, timerFromItem, timerKey } from "../core/_layout.ts";
import { timerShard } from "./_timer_index.ts";
import type { Timer } from "../core/types.ts";

/** Reads of the timers table: which table, and how many shards its index has. */
export interface TimerReads extends Reads {
  table: string;
  shards: number;
}

/** A due timer with the failed attempts a relay recorded on it. */
export type DueTimer = Timer & { attempts: number };

/**
 * The filter of a sweep's read: due, and — for a relay pass (`relay`) — neither waiting for a
 * retry nor dead-lettered; the attempts are read along.
 */
export function dueFilter(now: number, relay: boolean) {
  const names: Record<string, string> = {
    "#e": TIMER.executionId,
    "#p": TIMER.path,
    "#f": TIMER.fireAt,
  };
  if (!relay) return { names, filter: "", values: { ":now": N(now) }, projection: "#e, #p, #f" };
  Object.assign(names, { "#a": FAILURE.attempts }, RELAY_DUE.names);
  return {
    names,
    filter: RELAY_DUE.filter,
    values: { ":now": N(now) },
    projection: "#e, #p, #f, #a",
  };
}

export function dueTimerOf(item: Item): DueTimer {
  return { ...timerFromItem(item), attempts: Number(item[FAILURE.attempts]?.N ?? 0) || 0 };
}

/** Due timers by a projected scan of the timers table, the `limit` earliest kept in a heap. */
export async function dueByScan(
  { client, consistent, table }: TimerReads,
  now: number,
  limit: number,
  relay = false,
): Promise<DueTimer[]> {
  const due = new Lowest<DueTimer>(limit, byFireAt);
  const { names, filter, values, projection } = dueFilter(now, relay);
  await scanAll(client, {
    TableName: table,
    ProjectionExpression: projection,
    FilterExpression: filter ? `#f <= :now AND ${filter}` : "#f <= :now",
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ConsistentRead: consistent,
  }, (items) => {
    for (const item of items) due.offer(dueTimerOf(item));
  });
  return due.sorted();
}

/**
 * The legacy timer index's `timer_shard` of a timer whose fire failed: out of the sweep shards
 * that deploys before the relay index (#24) query, while it waits for a retry or is dead. This
 * module writes it for them and reads it never.
 */
export const PARKED_SHARD = -1;

export const DEAD_SHARD = -2;

/**
 * Writes `timer_shard` onto timers armed without it (by older deploys or the Python store),
 * each guarded by its `fire_at`: a timer re-scheduled or cancelled meanwhile is left alone,
 * never clobbered or brought back.
 */
export async function backfillTimerShards(
  { client, consistent, table, shards }: TimerReads,
): Promise<void> {
  const scan = (start: Item | undefined) =>
    client.send(
      new ScanCommand({
        TableName: table,
        FilterExpression: "attribute_not_exists(#s)",
        ProjectionExpression: "#e, #p, #f",
        ExpressionAttributeNames: {
          "#e": TIMER.executionId,
          "#p": TIMER.path,
          "#f": TIMER.fireAt,
          "#s": TIMER.shard,
        },
        ConsistentRead: consistent,
        ExclusiveStartKey: start,
      }),
    );
  for await (const page of pages(scan)) {
    await eachConcurrently(page.Items ?? [], WRITES_IN_FLIGHT, async (item) => {
      const { executionId, path } = timerFromItem(item), fireAt = item[TIMER.fireAt];
      if (executionId === "" || path === "" || fireAt?.N === undefined) return;
      try {
        await client.send(
          new UpdateItemCommand({
            TableName: table,
            Key: timerKey(executionId, path),
            UpdateExpression: "SET #s = :s",
            ConditionExpression: "#f = :f AND attribute_not_exists(#s)",
            ExpressionAttributeNames: { "#f": TIMER.fireAt, "#s": TIMER.shard },
            ExpressionAttributeValues: {
              ":f": fireAt,
              ":s": N(timerShard(executionId, path, shards)),
            },
          }),
        );
      } catch (error) {
        if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
      }
    });
  }
}

/**
 * Deletes the timer of `executionId` at `path` only if it still fires at `fireAt`: `false` when
 * it was re-scheduled or cancelled meanwhile (`deleteTimer`). Input is checked by the caller.
 * A one-item transaction with an idempotency token: a copy re-sent after a lost answer is
 * answered as the first one was, never as a failed condition (which would lose the timer).
 */
export async function claimTimer(
  reads: TimerReads,
  executionId: string,
  path: string,
  fireAt: number,
  resends: Resends,
): Promise<boolean> {
  // Not `fire_at = :f`: a fire_at stored with more digits than a double reads back as
  // fireAt yet never equals it (it would fire on every sweep).
  const guard = fireAtGuard(fireAt);
  const claimed = await transactOne(
    reads.client,
    {
      Delete: {
        TableName: reads.table,
        Key: timerKey(executionId, path),
        ConditionExpression: guard.condition,
        ExpressionAttributeNames: { "#f": TIMER.fireAt },
        ExpressionAttributeValues: guard.values,
      },
    },
    { operation: "deleteTimer", key: `${executionId}/${path}` },
    resends,
    "the timer is gone if it was, and then it is this call's to fire",
  );
  return claimed.applied;
}
