// The failures relays record on a queue item, and the dead letters operators list, retry or
// drop — each moving the item between the relay index's partitions, and (outbox) adding or
// removing its target's head.
import { type TransactWriteItem, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { transactItems, transactOne } from "../../dynamo/_lost_answers.ts";
import { batchGet, isNamed, type Item, N, S } from "../../dynamo/_dynamo.ts";
import {
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
import type {
  DeadLetter,
  RelayFailure,
  RelayItem,
  RelayKey,
  RelayKind,
  Timer,
} from "../../core/types.ts";
import { numberOf, plain, type QueueContext } from "./_queue_items.ts";
import { candidateOf } from "./_outbox_bodies.ts";
import { release } from "./_holds.ts";
import { dropped, failed, holdItems, locate, retried, type RowAt } from "./_transitions.ts";
import * as transition from "../../core/_queue_transitions.ts";
export { locate };
import { byIndexOrder, MergedPartitions, mergePage } from "./_index_reads.ts";
import { keyOrder, rowKey } from "./_relay_index.ts";

/**
 * Records a failed delivery on the item (attempts, the next attempt's time or the dead letter,
 * the error) and moves it to its partition of the relay index (waiting or dead): `false` when the
 * item is gone (acknowledged) or, for a timer, re-scheduled. An outbox entry that failed (not an
 * unreadable one) becomes a head of its target in the same transaction, so that the target's
 * later entries wait behind it. Exact under lost answers: a re-send sets the same values again
 * (an entry's transaction carries an idempotency token).
 */
export async function recordFailure<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  key: RelayKey<K>,
  failure: RelayFailure,
): Promise<boolean> {
  const at = locate(q.tables, kind, key);
  const now = q.now() / 1000;
  const update = failed(at, kind, failure, now);
  // What the failure does to the entry's target's hold (nothing, unless it becomes a head).
  const change = (seq?: string) => transition.fail(failure, now, seq).hold;
  const tooBig = (error: unknown) =>
    isNamed(error, "ValidationException") && /size/i.test(String(error));
  const record = async () => {
    if (kind !== "outbox" || change(String(key)).length === 0) {
      return await conditional(q, update) !== undefined;
    }
    // The entry's target: its hold gains this head in the same transaction.
    const row = await readRow(q, at.table, at.key);
    if (row === undefined) return false;
    const done = await transactItems(
      q.client,
      [{ Update: update }, ...holdItems(q, candidateOf(row).target, change(row[OUTBOX.seq]!.N!))],
      { operation: "recordFailure", key: String(key) },
      q.resends,
      "the failure may or may not be recorded; the entry comes again if it was not",
    );
    return done.applied;
  };
  try {
    return await record();
  } catch (error) {
    // A row another writer left near 400 KB has no room for the error text: record the rest.
    if (!tooBig(error)) throw error;
    update.ExpressionAttributeValues![":e"] = S(
      "(error not recorded: the item is at DynamoDB's 400 KB limit)",
    );
    return await record();
  }
}

/** One row, strongly consistent (a BatchGetItem: the relay's read, no other IAM action). */
async function readRow(q: QueueContext, table: string, key: Item): Promise<Item | undefined> {
  let found: Item | undefined;
  await batchGet(
    q.client,
    { [table]: { Keys: [key], ConsistentRead: true } },
    (responses) => void (found ??= responses[table]?.[0]),
  );
  return found;
}

/**
 * Makes a dead letter due again, its attempts forgotten, back in its pending partition. `false`
 * when there is no such dead letter: the item is gone, pending (not dead-lettered), or (timers)
 * fires at another time. An outbox entry's target is released: the entry and those held behind
 * it go back to pending, listed by its hold until delivered, the entry first.
 */
export function retryDeadLetter<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  return onDeadLetter(q, kind, key, "retryDeadLetter", transition.retry, (at) => retried(at, kind));
}

/**
 * Deletes a dead letter. `false` when there is no such dead letter: the item is gone (or never
 * was: a mistyped key), pending (a pending item is acknowledged, not dropped), or (timers) fires
 * at another time. An outbox entry's target is released.
 */
export function dropDeadLetter<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  return onDeadLetter(q, kind, key, "dropDeadLetter", transition.drop, dropped);
}

/**
 * One operator action on a dead letter: a transaction with an idempotency token, conditioned on
 * the item being that dead letter, so the answer is exact also when it is re-sent after a lost
 * answer. An outbox entry's target is released with it (its hold loses this head in the same
 * transaction; its held entries go back behind it).
 */
async function onDeadLetter<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  key: RelayKey<K>,
  operation: string,
  change: (entry?: string) => transition.Transition,
  write: (at: RowAt) => TransactWriteItem,
): Promise<boolean> {
  const at = locate(q.tables, kind, key);
  const name = { operation, key: kind === "timers" ? timerName(key as Timer) : String(key) };
  const known = `the ${kind} dead letter is ${
    operation === "dropDeadLetter" ? "gone" : "due again"
  } if it was`;
  if (kind === "outbox") {
    const row = await readRow(q, at.table, at.key);
    if (row === undefined || row[FAILURE.deadAt] === undefined) return false;
    const target = candidateOf(row).target;
    // A retried entry stays first in its target's line: its hold lists it by key, with the
    // entries behind it, until it is delivered (whatever the index shows of it meanwhile).
    // Both a retry and a drop of an entry release its target (`change(...).release`).
    const items = [write(at), ...holdItems(q, target, change(row[OUTBOX.seq]!.N!).hold)];
    return await release(q, target, items, { ...name, known });
  }
  return (await transactOne(q.client, write(at), name, q.resends, known)).applied;
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
    const dead = found.filter((row) => row[FAILURE.deadAt] !== undefined);
    yield dead.sort((a, b) => byIndexOrder(withOrder(kind, a), withOrder(kind, b)));
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
    raw: plain(row),
  };
}

/** The attribute naming the execution a queue row came from (absent on another writer's entry). */
const SOURCE_OF: Record<RelayKind, string> = {
  outbox: OUTBOX.sourceId,
  spawns: SPAWN.parentId,
  timers: TIMER.executionId,
};

/** An update whose condition may fail: the item after it (empty without ReturnValues), or undefined. */
export async function conditional(
  q: QueueContext,
  input: ConstructorParameters<typeof UpdateItemCommand>[0],
): Promise<Item | undefined> {
  try {
    const result = await q.client.send(new UpdateItemCommand(input));
    return result.Attributes ?? {};
  } catch (error) {
    if (isNamed(error, "ConditionalCheckFailedException")) return undefined;
    throw error;
  }
}
