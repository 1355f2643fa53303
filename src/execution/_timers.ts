// The timers table's reads and writes: due timers by the index or by a scan (with the parked
// and dead shards), the index's backfill, and the claim of one due timer. Memory grows with the
// `limit` asked for, never with the table.
import { type Reads, WRITE_CONCURRENCY } from "./_seq_queues.ts";
import {
  QueryCommand,
  type QueryCommandOutput,
  ScanCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { byFireAt, Lowest } from "../core/_bounded.ts";
import { fireAtGuard } from "./_fire_at.ts";
import { type Resends, transactOne } from "../dynamo/_lost_answers.ts";
import {
  batchGet,
  eachConcurrently,
  isNamed,
  type Item,
  N,
  pages,
  scanAll,
} from "../dynamo/_dynamo.ts";
import { FAILURE, isRetryDue, RELAY_DUE, TIMER, timerFromItem, timerKey } from "../core/_layout.ts";
import { TIMER_INDEX, timerShard } from "./_timer_index.ts";
import { LIMITS } from "../core/_validate.ts";
import type { DynamoDBSender } from "../dynamo/_dynamo.ts";
import { IndexNotFound } from "../dynamo/tables.ts";
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
 * The `limit` earliest due timers, read from the timer index: one Query per shard (in
 * parallel), each reading at most `limit` index entries, merged by due time. The index is
 * eventually consistent: a timer may show a sweep late, or still show after a re-schedule
 * or cancel; `deleteTimer`'s guard on `fire_at` makes the stale entry lose.
 */
export async function dueFromIndex(
  reads: TimerReads,
  now: number,
  limit: number,
  relay = false,
): Promise<DueTimer[]> {
  const due = new Lowest<DueTimer>(limit, byFireAt);
  const all = Array.from({ length: reads.shards }, (_, shard) => shard);
  await eachConcurrently(all, WRITE_CONCURRENCY, async (shard) => {
    for (const item of await queryShard(reads, shard, now, limit)) due.offer(dueTimerOf(item));
  });
  if (relay) await dueParked(reads, now, limit, due);
  return due.sorted();
}

/**
 * The index's shard of timers whose fire failed and wait for a retry (a relay moves them there,
 * so that they never fill a sweep's `limit`); dead-lettered timers go to {@linkcode DEAD_SHARD},
 * which no sweep reads. Re-scheduling a timer puts it back in its own shard.
 */
export const PARKED_SHARD = -1;

export const DEAD_SHARD = -2;

/**
 * Offers the parked timers (see {@linkcode PARKED_SHARD}) due at `now` whose retry is due too:
 * the index keeps keys only, so each page of the shard is read from the table, page after page
 * until `limit` are found, so that timers still waiting never hide one whose retry is due.
 */
export async function dueParked(
  reads: TimerReads,
  now: number,
  limit: number,
  due: Lowest<DueTimer>,
): Promise<void> {
  const { client, table } = reads;
  let found = 0;
  for await (const page of shardPages(reads, PARKED_SHARD, now, () => LIMITS.batchGetKeys)) {
    const keys = (page.Items ?? []).map((item) => {
      const { executionId, path } = timerFromItem(item);
      return timerKey(executionId, path);
    });
    if (keys.length === 0) continue;
    await batchGet(client, { [table]: { Keys: keys, ConsistentRead: true } }, (responses) => {
      for (const item of responses[table] ?? []) {
        if (item[FAILURE.deadAt] === undefined && isRetryDue(item, now)) {
          due.offer(dueTimerOf(item));
          found++;
        }
      }
    });
    if (found >= limit) return;
  }
}

/** The index entries of one shard due at `now`, at most `limit` of them. */
export async function queryShard(
  reads: TimerReads,
  shard: number,
  now: number,
  limit: number,
): Promise<Item[]> {
  const found: Item[] = [];
  // DynamoDB refuses a Limit past 32 bits: a huge finite limit reads pages.
  const pageLimit = () => limit === Infinity ? undefined : Math.min(limit - found.length, 1000);
  for await (const page of shardPages(reads, shard, now, pageLimit)) {
    found.push(...page.Items ?? []);
    if (found.length >= limit) break;
  }
  return found;
}

/** The pages of one shard of the timer index due at `now`, each of at most `pageLimit()` keys. */
export function shardPages(
  { client, table }: TimerReads,
  shard: number,
  now: number,
  pageLimit: () => number | undefined,
): AsyncGenerator<QueryCommandOutput, void, undefined> {
  return pages((start: Item | undefined) =>
    queryIndex(
      client,
      table,
      new QueryCommand({
        TableName: table,
        IndexName: TIMER_INDEX.name,
        KeyConditionExpression: "#s = :s AND #f <= :now",
        ExpressionAttributeNames: { "#s": TIMER.shard, "#f": TIMER.fireAt },
        ExpressionAttributeValues: { ":s": N(shard), ":now": N(now) },
        Limit: pageLimit(),
        ExclusiveStartKey: start,
      }),
    )
  );
}

/** One Query of the timer index; a table without the index is an {@linkcode IndexNotFound}. */
export async function queryIndex(
  client: DynamoDBSender,
  table: string,
  query: QueryCommand,
): Promise<QueryCommandOutput> {
  try {
    return await client.send(query);
  } catch (error) {
    if (!(isNamed(error, "ValidationException") && /specified index/.test(String(error)))) {
      throw error;
    }
    throw new IndexNotFound(
      table,
      TIMER_INDEX.name,
      "run ensureTables() of a store with timerIndex: true",
      { cause: error },
    );
  }
}

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
    await eachConcurrently(page.Items ?? [], WRITE_CONCURRENCY, async (item) => {
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
