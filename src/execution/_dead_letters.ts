// The failures relays record on a queue item, and the dead letters operators list, retry or
// drop.
import { type TransactWriteItem, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { transactOne } from "../dynamo/_lost_answers.ts";
import { Lowest } from "../core/_bounded.ts";
import { batchGet, isNamed, type Item, N, S, scanAll } from "../dynamo/_dynamo.ts";
import { fireAtGuard } from "./_fire_at.ts";
import {
  FAILURE,
  LAST_ERROR_BYTES,
  OUTBOX,
  outboxFromItem,
  seqKey,
  spawnFromItem,
  TIMER,
  timerFromItem,
  timerKey,
} from "../core/_layout.ts";
import { DEAD_SHARD, PARKED_SHARD } from "./_timers.ts";
import { timerShard } from "./_timer_index.ts";
import type { ExecutionTables } from "../core/table_specs.ts";
import type {
  DeadLetter,
  RelayFailure,
  RelayItem,
  RelayKey,
  RelayKind,
  Timer,
} from "../core/types.ts";
import { numberOf, plain, type QueueReads } from "./_queue_items.ts";
import { candidateOf, holdTarget, releaseTarget } from "./_outbox_queue.ts";

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
 * the error): `false` when the item is gone (acknowledged) or, for a timer, re-scheduled. A
 * re-send after a lost answer sets the same values again, so the answer is exact.
 */
export async function recordFailure<K extends RelayKind>(
  q: QueueReads,
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
  };
  const values: Item = {
    ...at.values,
    ":a": N(failure.attempts),
    ":e": S(utf8Prefix(failure.error, LAST_ERROR_BYTES) || "(no message)"),
  };
  const sets = ["#a = :a", "#e = :e"];
  if (failure.retryAt === null) {
    values[":d"] = N(Date.now() / 1000);
    sets.push("#d = :d");
    if (failure.unreadable) {
      Object.assign(names, { "#u": FAILURE.unreadable });
      values[":u"] = { BOOL: true };
      sets.push("#u = :u");
    }
  } else {
    values[":r"] = N(failure.retryAt);
    sets.push("#r = :r");
  }
  if (kind === "timers") {
    // Out of the index's sweep shards, so that failing timers never fill a sweep's limit.
    Object.assign(names, { "#s": TIMER.shard });
    values[":s"] = N(failure.retryAt === null ? DEAD_SHARD : PARKED_SHARD);
    sets.push("#s = :s");
  }
  const update = `SET ${sets.join(", ")} REMOVE ${failure.retryAt === null ? "#r" : "#d"}`;
  const input = {
    TableName: at.table,
    Key: at.key,
    UpdateExpression: update,
    ConditionExpression: at.condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValues: kind === "outbox" ? "ALL_NEW" as const : "NONE" as const,
  };
  let stored: Item | undefined;
  try {
    stored = await conditional(q, input);
  } catch (error) {
    // A row another writer left near 400 KB has no room for the error text: record the rest.
    if (!isNamed(error, "ValidationException") || !/size/i.test(String(error))) throw error;
    values[":e"] = S("(error not recorded: the item is at DynamoDB's 400 KB limit)");
    stored = await conditional(q, input);
  }
  if (stored && kind === "outbox" && !failure.unreadable) {
    // The next pass skips this target's later entries while it scans (see outboxBatch).
    await holdTarget(q, candidateOf(stored).target, key as number);
  }
  return stored !== undefined;
}

/**
 * Makes a dead letter due again, its attempts forgotten. `false` when there is no such dead
 * letter: the item is gone, pending (not dead-lettered), or (timers) fires at another time.
 */
export function retryDeadLetter<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  const names: Record<string, string> = {
    "#a": FAILURE.attempts,
    "#e": FAILURE.lastError,
    "#r": FAILURE.retryAt,
    "#u": FAILURE.unreadable,
  };
  const values: Item = {};
  let update = "REMOVE #a, #e, #r, #d, #u";
  if (kind === "timers") {
    // Back to the timer's own shard of the index.
    const { executionId, path } = key as Timer;
    names["#s"] = TIMER.shard;
    values[":s"] = N(timerShard(executionId, path, q.timers.shards));
    update = `SET #s = :s ${update}`;
  }
  return onDeadLetter(q, kind, key, "retryDeadLetter", (at) => ({
    Update: {
      TableName: at.table,
      Key: at.key,
      UpdateExpression: update,
      ConditionExpression: at.condition,
      ExpressionAttributeNames: { ...at.names, ...names },
      ...(Object.keys({ ...at.values, ...values }).length
        ? { ExpressionAttributeValues: { ...at.values, ...values } }
        : {}),
    },
  }));
}

/**
 * Deletes a dead letter. `false` when there is no such dead letter: the item is gone (or never
 * was: a mistyped key), pending (a pending item is acknowledged, not dropped), or (timers) fires
 * at another time.
 */
export function dropDeadLetter<K extends RelayKind>(
  q: QueueReads,
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
 * One operator action on a dead letter: a one-item transaction with an idempotency token,
 * conditioned on the item being that dead letter, so the answer is exact also when it is
 * re-sent after a lost answer. An outbox entry's target is then released from the held-target
 * hint (read first: a transaction returns no old item), so inline delivery goes on at once.
 */
async function onDeadLetter<K extends RelayKind>(
  q: QueueReads,
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
  // A BatchGetItem (the relay's read), not a GetItem: no other action for the operator's role.
  let before: Item | undefined;
  if (kind === "outbox") {
    await batchGet(
      q.timers.client,
      { [at.table]: { Keys: [at.key], ConsistentRead: true } },
      (responses) => void (before ??= responses[at.table]?.[0]),
    );
  }
  const done = await transactOne(
    q.timers.client,
    write(dead),
    { operation, key: kind === "timers" ? timerName(key as Timer) : String(key) },
    q.resends,
    `the ${kind} dead letter is ${operation === "dropDeadLetter" ? "gone" : "due again"} if it was`,
  );
  if (done.applied && before !== undefined) {
    await releaseTarget(q, candidateOf(before).target, key as number);
  }
  return done.applied;
}

function timerName(timer: Timer): string {
  return `${timer.executionId}/${timer.path}@${timer.fireAt}`;
}

/** The `limit` lowest dead letters of a queue (timers: earliest first). */
export async function deadLetters<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  limit: number,
): Promise<DeadLetter<K>[]> {
  const table = kind === "timers"
    ? q.tables.timers.name
    : kind === "outbox"
    ? q.tables.outbox.name
    : q.tables.spawns.name;
  const order = (a: Item, b: Item) =>
    kind === "timers"
      ? numberOf(a[TIMER.fireAt])! - numberOf(b[TIMER.fireAt])!
      : numberOf(a.seq)! - numberOf(b.seq)!;
  const lowest = new Lowest<Item>(limit, order);
  await scanAll(q.timers.client, {
    TableName: table,
    FilterExpression: "attribute_exists(#d)",
    ExpressionAttributeNames: { "#d": FAILURE.deadAt },
    ConsistentRead: q.timers.consistent,
  }, (page) => {
    for (const item of page) lowest.offer(item);
  });
  return lowest.sorted().map((row) => {
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
  });
}

/** An update whose condition may fail: the item after it (empty without ReturnValues), or undefined. */
export async function conditional(
  q: QueueReads,
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

/** The longest prefix of `text` of at most `bytes` UTF-8 bytes, cut between characters. */
export function utf8Prefix(text: string, bytes: number): string {
  const whole = text.toWellFormed(); // a lone surrogate would not survive the trip
  const encoded = new TextEncoder().encode(whole);
  if (encoded.length <= bytes) return whole;
  let end = bytes;
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--; // not inside a character
  return new TextDecoder().decode(encoded.subarray(0, end));
}
