// The failures relays record on a queue item, and the dead letters operators list, retry or
// drop — each moving the item between the relay index's partitions, and (outbox) adding or
// removing its target's head.
import { type TransactWriteItem, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { transactItems, transactOne } from "../../dynamo/_lost_answers.ts";
import { batchGet, isNamed, type Item, N, S } from "../../dynamo/_dynamo.ts";
import { fireAtGuard } from "./_fire_at.ts";
import {
  FAILURE,
  OUTBOX,
  outboxFromItem,
  RELAY,
  seqKey,
  spawnFromItem,
  TIMER,
  timerFromItem,
  timerKey,
} from "../../core/_layout.ts";
import { LIMITS } from "../../core/_validate.ts";
import { lastErrorText } from "../../core/_relay_rules.ts";
import type { ExecutionTables } from "../../core/table_specs.ts";
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
import { addHead, release } from "./_holds.ts";
import { byIndexOrder, MergedPartitions, mergePage } from "./_index_reads.ts";
import { keyOrder, partition, pendingPlace, rowKey, rowShard } from "./_relay_index.ts";

/** The table and key of one queue item, and the condition that it is still that item. */
export function locate<K extends RelayKind>(
  tables: ExecutionTables,
  kind: K,
  key: RelayKey<K>,
): { table: string; key: Item; names: Record<string, string>; values: Item; condition: string } {
  if (kind === "timers") {
    const timer = key as Timer;
    const guard = fireAtGuard(timer.fireAt);
    return {
      table: tables.timers.name,
      key: timerKey(timer.executionId, timer.path),
      names: { "#f": TIMER.fireAt },
      values: guard.values,
      condition: guard.condition,
    };
  }
  return {
    table: kind === "outbox" ? tables.outbox.name : tables.spawns.name,
    key: seqKey(key as number),
    names: { "#k": OUTBOX.seq },
    values: {},
    condition: "attribute_exists(#k)",
  };
}

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
  const names = {
    ...at.names,
    "#a": FAILURE.attempts,
    "#e": FAILURE.lastError,
    "#r": FAILURE.retryAt,
    "#d": FAILURE.deadAt,
    "#p": RELAY.part,
    "#o": RELAY.order,
  };
  const dead = failure.retryAt === null;
  const shard = rowShard(kind, keyItem(kind, key));
  const values: Item = {
    ...at.values,
    ":a": N(failure.attempts),
    ":e": S(lastErrorText(failure.error)),
    ":p": S(partition(dead ? "d" : "w", shard)),
    ":o": dead ? keyOrder(kind, keyItem(kind, key))! : N(failure.retryAt!),
  };
  const sets = ["#a = :a", "#e = :e", "#p = :p", "#o = :o"];
  if (dead) {
    values[":d"] = N(q.now() / 1000);
    sets.push("#d = :d");
    if (failure.unreadable) {
      Object.assign(names, { "#u": FAILURE.unreadable });
      values[":u"] = { BOOL: true };
      sets.push("#u = :u");
    }
  } else {
    values[":r"] = N(failure.retryAt!);
    sets.push("#r = :r");
  }
  const update = {
    TableName: at.table,
    Key: at.key,
    UpdateExpression: `SET ${sets.join(", ")} REMOVE ${dead ? "#r" : "#d"}`,
    ConditionExpression: at.condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
  const tooBig = (error: unknown) =>
    isNamed(error, "ValidationException") && /size/i.test(String(error));
  const record = async () => {
    if (kind !== "outbox" || failure.unreadable) return await conditional(q, update) !== undefined;
    // The entry's target: its hold gains this head in the same transaction.
    const row = await readRow(q, at.table, at.key);
    if (row === undefined) return false;
    const done = await transactItems(
      q.timers.client,
      [{ Update: update }, addHead(q, candidateOf(row).target, row[OUTBOX.seq]!)],
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
    values[":e"] = S("(error not recorded: the item is at DynamoDB's 400 KB limit)");
    return await record();
  }
}

/** The key of a queue item as a row (a timer with its fire time, for its shard and order). */
function keyItem<K extends RelayKind>(kind: K, key: RelayKey<K>): Item {
  if (kind !== "timers") return seqKey(key as number);
  const timer = key as Timer;
  return { ...timerKey(timer.executionId, timer.path), [TIMER.fireAt]: N(timer.fireAt) };
}

/** One row, strongly consistent (a BatchGetItem: the relay's read, no other IAM action). */
async function readRow(q: QueueContext, table: string, key: Item): Promise<Item | undefined> {
  let found: Item | undefined;
  await batchGet(
    q.timers.client,
    { [table]: { Keys: [key], ConsistentRead: true } },
    (responses) => void (found ??= responses[table]?.[0]),
  );
  return found;
}

/**
 * Makes a dead letter due again, its attempts forgotten, back in its pending partition. `false`
 * when there is no such dead letter: the item is
 * gone, pending (not dead-lettered), or (timers) fires at another time. An outbox entry's target
 * is released: its held entries go back to pending behind it.
 */
export function retryDeadLetter<K extends RelayKind>(
  q: QueueContext,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  const place = pendingPlace(kind, keyItem(kind, key));
  const names: Record<string, string> = {
    "#a": FAILURE.attempts,
    "#e": FAILURE.lastError,
    "#r": FAILURE.retryAt,
    "#u": FAILURE.unreadable,
    "#p": RELAY.part,
    "#o": RELAY.order,
  };
  const values: Item = { ":p": S(place.part), ":o": place.order };
  const update = "SET #p = :p, #o = :o REMOVE #a, #e, #r, #d, #u";
  return onDeadLetter(q, kind, key, "retryDeadLetter", (at) => ({
    Update: {
      TableName: at.table,
      Key: at.key,
      UpdateExpression: update,
      ConditionExpression: at.condition,
      ExpressionAttributeNames: { ...at.names, ...names },
      ExpressionAttributeValues: { ...at.values, ...values },
    },
  }));
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
  return onDeadLetter(q, kind, key, "dropDeadLetter", (at) => ({
    Delete: {
      TableName: at.table,
      Key: at.key,
      ConditionExpression: at.condition,
      ExpressionAttributeNames: at.names,
      ...(Object.keys(at.values).length ? { ExpressionAttributeValues: at.values } : {}),
    },
  }));
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
  write: (at: ReturnType<typeof locate>) => TransactWriteItem,
): Promise<boolean> {
  const at = locate(q.tables, kind, key);
  const dead = {
    ...at,
    names: { ...at.names, "#d": FAILURE.deadAt },
    condition: `attribute_exists(#d) AND ${at.condition}`,
  };
  const name = { operation, key: kind === "timers" ? timerName(key as Timer) : String(key) };
  const known = `the ${kind} dead letter is ${
    operation === "dropDeadLetter" ? "gone" : "due again"
  } if it was`;
  if (kind === "outbox") {
    const row = await readRow(q, at.table, at.key);
    if (row === undefined || row[FAILURE.deadAt] === undefined) return false;
    return await release(q, candidateOf(row).target, [write(dead)], { ...name, known });
  }
  return (await transactOne(q.timers.client, write(dead), name, q.resends, known)).applied;
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
  const stream = new MergedPartitions(q.timers.client, table, "d", mergePage(limit));
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
      q.timers.client,
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
    raw: plain(row),
  };
}

/** An update whose condition may fail: the item after it (empty without ReturnValues), or undefined. */
export async function conditional(
  q: QueueContext,
  input: ConstructorParameters<typeof UpdateItemCommand>[0],
): Promise<Item | undefined> {
  try {
    const result = await q.timers.client.send(new UpdateItemCommand(input));
    return result.Attributes ?? {};
  } catch (error) {
    if (isNamed(error, "ConditionalCheckFailedException")) return undefined;
    throw error;
  }
}
