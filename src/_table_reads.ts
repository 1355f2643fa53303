// The execution store's reads and deletes that walk a whole table: the relay tables (lowest
// seqs, acknowledgements) and the timers (due timers by the index or by a scan, and the
// index's backfill), and the claim of one due timer. Memory grows with the `limit` asked for,
// never with the table.
import {
  QueryCommand,
  type QueryCommandOutput,
  ScanCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { byFireAt, bySeq, Lowest } from "./_bounded.ts";
import { fireAtGuard } from "./_fire_at.ts";
import { type Resends, transactOne } from "./_lost_answers.ts";
import {
  batchGet,
  batchWrite,
  chunks,
  eachConcurrently,
  isNamed,
  type Item,
  N,
  pages,
  scanAll,
} from "./_dynamo.ts";
import { seqKey, TIMER, timerFromItem, timerKey } from "./_layout.ts";
import { TIMER_INDEX, timerShard } from "./_timer_index.ts";
import { checkInteger, LIMITS } from "./_validate.ts";
import type { DynamoDBSender } from "./connect.ts";
import { IndexNotFound } from "./tables.ts";
import type { Timer } from "./types.ts";

/** How a store reads: its client and whether reads are strongly consistent. */
export interface Reads {
  client: DynamoDBSender;
  consistent: boolean;
}

/** Reads of the timers table: which table, and how many shards its index has. */
export interface TimerReads extends Reads {
  table: string;
  shards: number;
}

/** How many BatchWriteItem calls (and timer Queries) are kept in flight. */
const WRITE_CONCURRENCY = 16;
/** How many BatchGetItem calls a bounded read keeps in flight. */
const GET_CONCURRENCY = 4;

/**
 * The items of the `limit` lowest seqs of a seq-keyed table, ascending. A keys-only scan
 * keeps the lowest seqs in a bounded heap (one page and `limit` numbers in memory), then
 * BatchGetItem reads their bodies; an entry acknowledged in between is left out.
 */
export async function lowestSeqItems(
  { client, consistent }: Reads,
  table: string,
  limit: number,
): Promise<Item[]> {
  if (limit === Infinity) {
    const all: Item[] = [];
    await scanAll(client, { TableName: table, ConsistentRead: consistent }, (items) => {
      all.push(...items);
    });
    return all.sort((a, b) => Number(a.seq?.N) - Number(b.seq?.N));
  }
  const lowest = new Lowest(limit, bySeq);
  await scanAll(client, {
    TableName: table,
    ProjectionExpression: "#s",
    ExpressionAttributeNames: { "#s": "seq" },
    ConsistentRead: consistent,
  }, (items) => {
    for (const item of items) lowest.offer(Number(item.seq?.N));
  });
  const seqs = lowest.sorted();
  const found = new Map<number, Item>();
  await eachConcurrently(chunks(seqs, LIMITS.batchGetKeys), GET_CONCURRENCY, (chunk) =>
    batchGet(
      client,
      { [table]: { Keys: chunk.map(seqKey), ConsistentRead: consistent } },
      (responses) => {
        for (const item of responses[table] ?? []) found.set(Number(item.seq?.N), item);
      },
    ));
  return seqs.flatMap((seq): Item[] => {
    const item = found.get(seq);
    return item ? [item] : [];
  });
}

/** Deletes seq-keyed items in parallel batches of 25, retrying what comes back unprocessed. */
export async function deleteSeqs(
  client: DynamoDBSender,
  table: string,
  key: string,
  seq: number | number[],
): Promise<void> {
  const given = Array.isArray(seq) ? seq : [seq];
  // Checked before removing duplicates, so the error names the caller's own position.
  given.forEach((s, i) =>
    checkInteger(Array.isArray(seq) ? `seq[${i}]` : "seq", s, 0, Number.MAX_SAFE_INTEGER)
  );
  const seqs = [...new Set(given)];
  // Parallel, but within the SDK's default 50 sockets, so a big backlog does not queue.
  await eachConcurrently(
    chunks(seqs, LIMITS.batchWriteItems),
    WRITE_CONCURRENCY,
    (batch) =>
      batchWrite(client, table, batch.map((s) => ({ DeleteRequest: { Key: { [key]: N(s) } } }))),
  );
}

/** Due timers by a projected scan of the timers table, the `limit` earliest kept in a heap. */
export async function dueByScan(
  { client, consistent, table }: TimerReads,
  now: number,
  limit: number,
): Promise<Timer[]> {
  const due = new Lowest<Timer>(limit, byFireAt);
  await scanAll(client, {
    TableName: table,
    ProjectionExpression: "#e, #p, #f",
    FilterExpression: "#f <= :now",
    ExpressionAttributeNames: { "#e": TIMER.executionId, "#p": TIMER.path, "#f": TIMER.fireAt },
    ExpressionAttributeValues: { ":now": N(now) },
    ConsistentRead: consistent,
  }, (items) => {
    for (const item of items) due.offer(timerFromItem(item));
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
  { client, table, shards }: TimerReads,
  now: number,
  limit: number,
): Promise<Timer[]> {
  const due = new Lowest<Timer>(limit, byFireAt);
  const all = Array.from({ length: shards }, (_, shard) => shard);
  await eachConcurrently(all, WRITE_CONCURRENCY, async (shard) => {
    let found = 0;
    const query = (start: Item | undefined) =>
      queryIndex(
        client,
        table,
        new QueryCommand({
          TableName: table,
          IndexName: TIMER_INDEX.name,
          KeyConditionExpression: "#s = :s AND #f <= :now",
          ExpressionAttributeNames: { "#s": TIMER.shard, "#f": TIMER.fireAt },
          ExpressionAttributeValues: { ":s": N(shard), ":now": N(now) },
          // DynamoDB refuses a Limit past 32 bits: a huge finite limit reads pages.
          Limit: limit === Infinity ? undefined : Math.min(limit - found, 1000),
          ExclusiveStartKey: start,
        }),
      );
    for await (const page of pages(query)) {
      for (const item of page.Items ?? []) {
        due.offer(timerFromItem(item));
        found++;
      }
      if (found >= limit) break;
    }
  });
  return due.sorted();
}

/** One Query of the timer index; a table without the index is an {@linkcode IndexNotFound}. */
async function queryIndex(
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
