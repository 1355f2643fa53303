// What relays read and write on DynamoDB: one pass's batch of each queue (outbox, spawns, due
// timers) with what is not deliverable left out, read through the relay index (#24): what is
// due and little else. Memory grows with the `limit` asked for, never with the backlog.

import { GETS_IN_FLIGHT } from "../../core/_lanes.ts";
import type { QueueBatch } from "../../core/_queue_batch.ts";
import { byFireAt, Lowest } from "../../core/_bounded.ts";
import { batchGet, chunks, eachConcurrently, type Item } from "../../dynamo/_dynamo.ts";
import { FAILURE, isRetryDue, SPAWN, spawnFromItem, TIMER } from "../../core/_layout.ts";
import { dueByScan, type DueTimer, dueTimerOf, type TimerReads } from "./_timers.ts";
import { LIMITS } from "../../core/_validate.ts";
import type { RelayItems, RelayKind, Timer, UnreadableRow } from "../../core/types.ts";
import { earliest, numberOf, type QueueContext, unreadableRow } from "./_queue_items.ts";
import { type Candidate, candidateOf, outboxOf } from "./_outbox_bodies.ts";
import { outboxFromIndex } from "./_outbox_pass.ts";
import { MergedPartitions, mergePage } from "./_index_reads.ts";
import { rowKey } from "./_relay_index.ts";
import { finishCrashedReleases } from "./_holds.ts";

/** The items of a relay pass over one queue (see `ExecutionStore.relayBatch`). */
export async function relayBatch<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  { limit, now, seqs, pass }: { limit: number; now: number; seqs?: number[]; pass: boolean },
): Promise<RelayItems<K>> {
  if (kind === "outbox" && seqs !== undefined) {
    return stamped(await outboxOf(q, seqs, now), now) as RelayItems<K>;
  }
  // A pass of the outbox first finishes releases. With other writers (`otherWriters: true`),
  // every pass and read first runs a round of its table's feed: their new rows, adopted.
  if (pass && kind === "outbox") await finishCrashedReleases(q);
  const foreign = await q.otherWriters?.round(q, kind);
  return stamped(await read(q, kind, limit, now, pass, foreign), now) as RelayItems<K>;
}

/** A read's batch as relayBatch answers it: with its time, and `held` (0 when not counted). */
function stamped<K extends RelayKind>(batch: QueueBatch<K>, now: number): RelayItems<K> {
  return { ...batch, held: batch.held ?? 0, now };
}

/** `dueTimers`: the `limit` earliest due at `now`, from the relay index or (`scan`) a scan. */
export async function dueTimers(
  q: QueueContext & TimerReads,
  now: number,
  limit: number,
  scan: boolean,
): Promise<Timer[]> {
  if (!scan) {
    const batch = await relayBatch(q, "timers", { limit, now, pass: false });
    return batch.items.map(({ item }) => item);
  }
  const due = await dueByScan(q, now, limit);
  return due.map(({ attempts: _, ...timer }) => timer);
}

function read(
  q: QueueContext,
  kind: RelayKind,
  limit: number,
  now: number,
  pass: boolean,
  foreign: Item[] | undefined,
): Promise<QueueBatch<RelayKind>> {
  if (kind === "outbox") return outboxFromIndex(q, limit, now, pass, foreign);
  return kind === "spawns"
    ? spawnsFromIndex(q, limit, now, foreign)
    : timersFromIndex(q, limit, now, foreign);
}

// --- spawns ----------------------------------------------------------------------------

/**
 * The `limit` lowest spawn intents deliverable now, through the relay index: those whose retry
 * is due, then the lowest pending ones, each read again by key.
 */
async function spawnsFromIndex(
  q: QueueContext,
  limit: number,
  now: number,
  foreign: Item[] | undefined,
): Promise<QueueBatch<"spawns">> {
  const rows = await dueRows(q, "spawns", limit, now, foreign);
  let oldestAt: number | null = null;
  // Another writer's spawn has no `created_at`: it has waited since at least the oldest known.
  for (const row of rows) oldestAt = earliest(oldestAt, numberOf(row[SPAWN.createdAt]));
  const candidates = [...new Map(rows.map((row) => [keyId("spawns", row), candidateOf(row)]))
    .values()].sort((a, b) => a.seq - b.seq).slice(0, limit);
  return { ...await spawnBodies(q, candidates, now), oldestAt };
}

/**
 * The spawn intents' bodies (strongly consistent): what is still there, due and not dead, with
 * the attempts the row records (never the index's: it may lag a failure).
 */
async function spawnBodies(
  q: QueueContext,
  candidates: Candidate[],
  now: number,
): Promise<Omit<QueueBatch<"spawns">, "oldestAt">> {
  const found = await bodies(q, "spawns", candidates.map((c) => c.key));
  const items: RelayItems<"spawns">["items"] = [];
  const unreadable: UnreadableRow<"spawns">[] = [];
  for (const c of candidates) {
    const body = found.get(c.id);
    if (body === undefined || body[FAILURE.deadAt] !== undefined || !isRetryDue(body, now)) {
      continue; // acknowledged, or parked since the read
    }
    const attempts = numberOf(body[FAILURE.attempts]) ?? 0;
    try {
      items.push({ item: spawnFromItem(body), attempts });
    } catch (error) {
      unreadable.push(unreadableRow(c.seq, body, attempts, error));
    }
  }
  return { items, unreadable };
}

// --- timers ----------------------------------------------------------------------------

/** Due timers (earliest first) as a batch: the oldest is the first one's fire time. */
function timerBatch(due: DueTimer[]): QueueBatch<"timers"> {
  return {
    items: due.map(({ attempts, ...timer }) => ({ item: timer, attempts })),
    unreadable: [],
    oldestAt: due[0]?.fireAt ?? null,
  };
}

/**
 * The `limit` earliest due timers through the relay index: pending ones due by `now` and parked
 * ones whose retry is due, each read again from the table (the index lags it: a timer cancelled
 * or re-scheduled a moment ago must not fire).
 */
async function timersFromIndex(
  q: QueueContext,
  limit: number,
  now: number,
  foreign: Item[] | undefined,
): Promise<QueueBatch<"timers">> {
  const rows = await dueRows(q, "timers", limit, now, foreign);
  const found = await bodies(q, "timers", rows.map((row) => rowKey("timers", row)));
  const due = new Lowest<DueTimer>(limit, byFireAt);
  const offered = new Set<string>();
  for (const row of rows) {
    const id = keyId("timers", row);
    const body = found.get(id);
    if (
      body === undefined || body[TIMER.fireAt]?.N !== row[TIMER.fireAt]?.N ||
      body[FAILURE.deadAt] !== undefined || !isRetryDue(body, now) ||
      !(Number(body[TIMER.fireAt]?.N) <= now)
    ) continue; // cancelled, re-scheduled or parked since the index showed it
    if (offered.has(id)) continue;
    offered.add(id);
    due.offer(dueTimerOf(body));
  }
  return timerBatch(due.sorted());
}

// --- shared ----------------------------------------------------------------------------

/**
 * Index rows of a spawn or timer queue that may be due: those waiting whose retry is due, and
 * the lowest pending ones (timers: due by `now`), up to `limit` each. Candidates only: the rows
 * are read again by key before anything is decided.
 */
async function dueRows(
  q: QueueContext,
  kind: "spawns" | "timers",
  limit: number,
  now: number,
  foreign?: Item[],
): Promise<Item[]> {
  const table = kind === "spawns" ? q.tables.spawns.name : q.tables.timers.name;
  const page = mergePage(limit);
  const extra = kind === "timers"
    ? foreign?.filter((row) => Number(row[TIMER.fireAt]?.N) <= now)
    : foreign;
  const pendingBound = kind === "timers" ? { upTo: now, extra } : { extra };
  const streams = [
    new MergedPartitions(q.client, table, "w", page, { upTo: now }),
    new MergedPartitions(q.client, table, "p", page, pendingBound),
  ];
  const rows: Item[] = [];
  for (const stream of streams) {
    let taken = 0;
    for (let row; taken < limit && (row = await stream.next());) {
      rows.push(row);
      taken++;
    }
  }
  return rows;
}

/** The rows of these keys, strongly consistent, by {@linkcode keyId}. */
async function bodies(
  q: QueueContext,
  kind: "spawns" | "timers",
  keys: Item[],
): Promise<Map<string, Item>> {
  const table = kind === "spawns" ? q.tables.spawns.name : q.tables.timers.name;
  const found = new Map<string, Item>();
  const unique = [...new Map(keys.map((key) => [keyId(kind, key), key])).values()];
  await eachConcurrently(chunks(unique, LIMITS.batchGetKeys), GETS_IN_FLIGHT, (chunk) =>
    batchGet(
      q.client,
      { [table]: { Keys: chunk, ConsistentRead: true } },
      (responses) => {
        for (const item of responses[table] ?? []) found.set(keyId(kind, item), item);
      },
    ));
  return found;
}

/** A row's key as text (the seq as stored; a timer's execution and path). */
function keyId(kind: RelayKind, item: Item): string {
  return kind === "timers"
    ? `${item[TIMER.executionId]?.S}\u0000${item[TIMER.path]?.S}`
    : item[SPAWN.seq]?.N ?? "";
}
