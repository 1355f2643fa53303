// What relays read and write on DynamoDB: one pass's batch of each queue (outbox, spawns, due
// timers) with what is not deliverable left out, the failures they record, and the dead letters
// operators retry or drop. Memory grows with the `limit` asked for (plus one number per held
// target), never with the backlog.

import { Lowest } from "../core/_bounded.ts";
import { batchGet, chunks, eachConcurrently, type Item, scanAll } from "../dynamo/_dynamo.ts";
import { FAILURE, isRetryDue, SPAWN, spawnFromItem } from "../core/_layout.ts";
import { dueByScan, dueFromIndex } from "./_timers.ts";
import { LIMITS } from "../core/_validate.ts";
import type { RelayItems, RelayKind, UnreadableRow } from "../core/types.ts";
import { earliest, numberOf, type QueueReads, unreadableRow } from "./_queue_items.ts";
import {
  type Candidate,
  candidateOf,
  GET_CONCURRENCY,
  outboxBatch,
  outboxOf,
} from "./_outbox_queue.ts";

/** The items of a relay pass over one queue (see `ExecutionStore.relayBatch`). */
export async function relayBatch<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  { limit, now, seqs, pass }: { limit: number; now: number; seqs?: number[]; pass: boolean },
): Promise<RelayItems<K>> {
  if (kind === "timers") return await timerBatch(q, limit, now) as RelayItems<K>;
  if (kind === "spawns") return await spawnBatch(q, limit, now) as RelayItems<K>;
  const batch = seqs === undefined ? outboxBatch(q, limit, now, pass) : outboxOf(q, seqs, now);
  return await batch as RelayItems<K>;
}

// --- outbox ----------------------------------------------------------------------------

// --- spawns ----------------------------------------------------------------------------

/** One scan of the spawn intents: the `limit` lowest seqs that are neither waiting nor dead. */
async function spawnBatch(
  q: QueueReads,
  limit: number,
  now: number,
): Promise<RelayItems<"spawns">> {
  const { client, consistent } = q.timers;
  const table = q.tables.spawns.name;
  const lowest = new Lowest<Candidate>(limit, (a, b) => a.seq - b.seq);
  let oldestAt: number | null = null;
  await scanAll(client, {
    TableName: table,
    ProjectionExpression: "#s, #c, #a, #r, #d",
    ExpressionAttributeNames: {
      "#s": SPAWN.seq,
      "#c": SPAWN.createdAt,
      "#a": FAILURE.attempts,
      "#r": FAILURE.retryAt,
      "#d": FAILURE.deadAt,
    },
    ConsistentRead: consistent,
  }, (page) => {
    for (const item of page) {
      if (item[FAILURE.deadAt] !== undefined) continue;
      oldestAt = earliest(oldestAt, numberOf(item[SPAWN.createdAt]));
      if (isRetryDue(item, now)) lowest.offer(candidateOf(item));
    }
  });
  const candidates = lowest.sorted();
  const found = new Map<string, Item>();
  await eachConcurrently(
    chunks(candidates, LIMITS.batchGetKeys),
    GET_CONCURRENCY,
    (chunk) =>
      batchGet(
        client,
        { [table]: { Keys: chunk.map((c) => c.key), ConsistentRead: consistent } },
        (responses) => {
          for (const item of responses[table] ?? []) found.set(item.seq?.N ?? "", item);
        },
      ),
  );
  const items: RelayItems<"spawns">["items"] = [];
  const unreadable: UnreadableRow<"spawns">[] = [];
  for (const c of candidates) {
    const body = found.get(c.id);
    if (body === undefined) continue;
    try {
      items.push({ item: spawnFromItem(body), attempts: c.attempts });
    } catch (error) {
      unreadable.push(unreadableRow(c.seq, body, c.attempts, error));
    }
  }
  return { items, unreadable, oldestAt };
}

// --- timers ----------------------------------------------------------------------------

/** The `limit` earliest due timers that are neither waiting for a retry nor dead. */
async function timerBatch(
  q: QueueReads,
  limit: number,
  now: number,
): Promise<RelayItems<"timers">> {
  const due = q.timerIndex
    ? await dueFromIndex(q.timers, now, limit, true)
    : await dueByScan(q.timers, now, limit, true);
  return {
    items: due.map(({ attempts, ...timer }) => ({ item: timer, attempts })),
    unreadable: [],
    oldestAt: due[0]?.fireAt ?? null,
  };
}

// --- failures and dead letters ---------------------------------------------------------

// --- helpers ---------------------------------------------------------------------------
