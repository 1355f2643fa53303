// The dead letters operators list, retry or drop: each action a transaction with an idempotency
// token conditioned on the row being that dead letter, so its answer is exact under lost answers.
// Retrying or dropping an outbox entry releases its target.
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { transactItems } from "../../dynamo/_lost_answers.ts";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { batchGet, type Item, N, S } from "../../dynamo/_dynamo.ts";
import {
  COUNTER,
  FAILURE,
  OUTBOX,
  outboxFromItem,
  RELAY,
  SPAWN,
  spawnFromItem,
  TIMER,
  timerFromItem,
} from "../../core/_layout.ts";
import { LIMITS } from "../../core/_validate.ts";
import { numberOf, plainMap } from "../../core/_attributes.ts";
import type { DeadLetter, RelayItem, RelayKey, RelayKind, Timer } from "../../core/types.ts";
import { release } from "../../core/_outbox_pipeline.ts";
import { releaseOf } from "../../core/_outbox_decide.ts";
import { holdUpdate, move, pendingOf, type QueueContext } from "./_outbox_table.ts";
import { dropped, keyOrder, locate, retried, rowKey } from "./_relay_index.ts";
import { byIndexOrder, MergedPartitions, mergePage } from "./_index_reads.ts";

/**
 * Makes a dead letter due again, its attempts forgotten, back in its pending partition: `false`
 * when there is no such dead letter (gone, pending, or a timer at another time). An outbox entry
 * stays first in its target's line (its hold lists it) and its target is released.
 */
export async function retryDeadLetter<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  const at = locate(q.tables, kind, key);
  if (kind !== "outbox") return await act(q, kind, key, "retryDeadLetter", [retried(at, kind)]);
  const row = (await q.outbox.rows([at.key[OUTBOX.seq]!.N!])).values().next().value;
  if (row === undefined || !row.part.startsWith("d")) return false;
  const listed = { Update: holdUpdate(q, row.target, "ADD", "held", [row.id]) };
  if (!await act(q, kind, key, "retryDeadLetter", [retried(at, kind), listed])) return false;
  await release(q.outbox, [row.target]);
  return true;
}

/**
 * Deletes a dead letter: `false` when there is none (gone, pending, a timer at another time). An
 * outbox entry's target is released: its first held entry comes back in the same transaction.
 */
export async function dropDeadLetter<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  const at = locate(q.tables, kind, key);
  if (kind !== "outbox") return await act(q, kind, key, "dropDeadLetter", [dropped(at)]);
  const id = at.key[OUTBOX.seq]!.N!;
  const row = (await q.outbox.rows([id])).get(id);
  if (row === undefined || !row.part.startsWith("d")) return false;
  const hold = (await q.outbox.holds([row.target])).get(row.target);
  const named = hold ? [...hold.heads, ...hold.held] : [];
  const rows = named.length ? await q.outbox.rows(named) : new Map();
  const made = releaseOf(row.target, hold ?? { heads: [], held: [], spill: null }, rows, [id]);
  const [first, ...rest] = made.back;
  const items = [
    dropped(at),
    ...first ? [{ Update: move(q.tables.outbox.name, first, pendingOf(first)) }] : [],
  ];
  if (!await act(q, kind, key, "dropDeadLetter", items)) {
    // The entry behind it moved meanwhile: the drop alone decides.
    if (!first || !await act(q, kind, key, "dropDeadLetter", [dropped(at)])) return false;
    rest.unshift(first);
  }
  await q.outbox.apply({ release: [{ ...made, acks: [], back: rest }] });
  return true;
}

/** One operator action as a transaction: `false` when its first item's condition failed. */
async function act<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  key: RelayKey<K>,
  operation: string,
  items: TransactWriteItem[],
): Promise<boolean> {
  const name = { operation, key: kind === "timers" ? timerName(key as Timer) : String(key) };
  const known = `the ${kind} dead letter is ${
    operation === "dropDeadLetter" ? "gone" : "due again"
  } if it was`;
  return (await transactItems(q.client, items, name, q.resends, known)).applied;
}

function timerName(timer: Timer): string {
  return `${timer.executionId}/${timer.path}@${timer.fireAt}`;
}

/**
 * The `limit` lowest dead letters of a queue (timers: earliest first), optionally of one target
 * (outbox): through the relay index, its dead partitions merged; without it, a scan.
 */
export async function deadLetters<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  limit: number,
  target?: string | null,
): Promise<DeadLetter<K>[]> {
  const letters: DeadLetter<K>[] = [];
  for await (const rows of deadRows(q, kind, limit, target)) {
    for (const row of rows) letters.push(deadLetterOf(kind, row));
    if (letters.length >= limit) break;
  }
  return letters.slice(0, limit);
}

/**
 * The dead rows of a queue, whole and read again from the table (still dead), in pages, lowest
 * first, from the relay index's dead partitions. `target` keeps those of one target (outbox).
 */
export async function* deadRows(
  q: QueueContext,
  kind: RelayKind,
  limit: number,
  target?: string | null,
): AsyncGenerator<Item[], void, undefined> {
  const table = q.tables[kind].name;
  const ofTarget = (row: Item) =>
    target === undefined ||
    (target === null ? row[OUTBOX.targetId]?.NULL === true : row[OUTBOX.targetId]?.S === target);
  const stream = new MergedPartitions(q.client, table, "d", mergePage(limit));
  for (let left = limit; left > 0;) {
    const keys: Item[] = [];
    const chunk = Math.min(LIMITS.batchGetKeys, left);
    for (let row; keys.length < chunk && (row = await stream.next());) {
      if (ofTarget(row)) keys.push(rowKey(kind, row));
    }
    left -= keys.length;
    if (keys.length === 0) return;
    const found: Item[] = [];
    await batchGet(
      q.client,
      { [table]: { Keys: keys, ConsistentRead: true } },
      (responses) => void found.push(...responses[table] ?? []),
    );
    const dead = found.filter(isDeadRow);
    await readReasons(q, kind, dead);
    yield dead.sort((a, b) => byIndexOrder(withOrder(kind, a), withOrder(kind, b)));
  }
}

/** Whether a stored row is dead: dead-lettered, or set aside with no room but for its place. */
export function isDeadRow(row: Item): boolean {
  return row[FAILURE.deadAt] !== undefined || row[RELAY.part]?.S?.startsWith("d") === true;
}

/** The counters item that holds why another writer's row with no room for it was set aside. */
export function unreadableId(kind: RelayKind, row: Item): string {
  return `unreadable:${kind}:${JSON.stringify(plainMap(rowKey(kind, row), {}, true))}`;
}

/** Reads why each row set aside without room for it was (as its `last_error`). */
async function readReasons(q: QueueContext, kind: RelayKind, rows: Item[]): Promise<void> {
  const bare = rows.filter((row) => row[FAILURE.lastError] === undefined);
  if (bare.length === 0) return;
  const table = q.tables.counters.name;
  const keys = bare.map((row) => ({ [COUNTER.id]: S(unreadableId(kind, row)) }));
  const reasons = new Map<string, AttributeValue>();
  await batchGet(q.client, { [table]: { Keys: keys, ConsistentRead: true } }, (found) => {
    for (const item of found[table] ?? []) {
      reasons.set(item[COUNTER.id]!.S!, item[FAILURE.lastError]!);
    }
  });
  for (const row of bare) {
    const reason = reasons.get(unreadableId(kind, row));
    if (reason) row[FAILURE.lastError] = reason;
  }
}

function withOrder(kind: RelayKind, row: Item): Item {
  return { ...row, [RELAY.order]: keyOrder(kind, row) ?? N(0) };
}

/** A dead row as operators see it. */
function deadLetterOf<K extends RelayKind>(kind: K, row: Item): DeadLetter<K> {
  let item: RelayItem<K> | null = null;
  try {
    item = (kind === "timers"
      ? timerFromItem(row)
      : kind === "outbox"
      ? outboxFromItem(row)
      : spawnFromItem(row)) as RelayItem<K>;
  } catch { /* unreadable: raw shows it */ }
  return {
    key: (kind === "timers" ? timerFromItem(row) : numberOf(row.seq)!) as RelayKey<K>,
    item,
    attempts: numberOf(row[FAILURE.attempts]) ?? 0,
    lastError: row[FAILURE.lastError]?.S ?? null,
    deadAt: numberOf(row[FAILURE.deadAt]) ?? 0,
    sourceId: row[SOURCE_OF[kind]]?.S ?? null,
    raw: plainMap(row, {}, true),
  };
}

/** The attribute naming the execution a queue row came from (absent on another writer's entry). */
const SOURCE_OF: Record<RelayKind, string> = {
  outbox: OUTBOX.sourceId,
  spawns: SPAWN.parentId,
  timers: TIMER.executionId,
};
