// The failures relays record on a queue item, and the dead letters operators list, retry or
// drop.
import { DeleteItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { Lowest } from "../core/_bounded.ts";
import { isNamed, type Item, N, S, scanAll } from "../dynamo/_dynamo.ts";
import { fireAtGuard } from "./_fire_at.ts";
import {
  FAILURE,
  LAST_ERROR_BYTES,
  OUTBOX,
  outboxFromItem,
  seqKey,
  spawnFromItem,
  TIMER,
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
import { numberOf, plain, type QueueReads, timerOf } from "./_queue_items.ts";
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

/** Makes a dead letter due again, its attempts forgotten: `false` when the item is gone. */
export async function retryDeadLetter<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  const at = locate(q.tables, kind, key);
  const names: Record<string, string> = {
    ...at.names,
    "#a": FAILURE.attempts,
    "#e": FAILURE.lastError,
    "#r": FAILURE.retryAt,
    "#d": FAILURE.deadAt,
    "#u": FAILURE.unreadable,
  };
  const values = { ...at.values };
  let update = "REMOVE #a, #e, #r, #d, #u";
  if (kind === "timers") {
    // Back to the timer's own shard of the index.
    const { executionId, path } = key as Timer;
    names["#s"] = TIMER.shard;
    values[":s"] = N(timerShard(executionId, path, q.timers.shards));
    update = `SET #s = :s ${update}`;
  }
  const stored = await conditional(q, {
    TableName: at.table,
    Key: at.key,
    UpdateExpression: update,
    ConditionExpression: at.condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
    ReturnValues: kind === "outbox" ? "ALL_NEW" : "NONE",
  });
  if (stored && kind === "outbox") {
    await releaseTarget(q, candidateOf(stored).target, key as number);
  }
  return stored !== undefined;
}

/**
 * Deletes a dead letter: `true` once it is gone (also when it already was: a re-send after a
 * lost answer finds nothing), `false` when the item is there but not dead-lettered.
 */
export async function dropDeadLetter<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  const at = locate(q.tables, kind, key);
  const keyName = kind === "timers" ? TIMER.executionId : OUTBOX.seq;
  try {
    const { Attributes: old } = await q.timers.client.send(
      new DeleteItemCommand({
        TableName: at.table,
        Key: at.key,
        ConditionExpression: "attribute_not_exists(#id) OR attribute_exists(#d)",
        ExpressionAttributeNames: { "#id": keyName, "#d": FAILURE.deadAt },
        ReturnValues: kind === "outbox" ? "ALL_OLD" : "NONE",
      }),
    );
    if (old) await releaseTarget(q, candidateOf(old).target, key as number);
    return true;
  } catch (error) {
    if (isNamed(error, "ConditionalCheckFailedException")) return false;
    throw error;
  }
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
        ? { ...timerOf(row) }
        : kind === "outbox"
        ? outboxFromItem(row)
        : spawnFromItem(row)) as RelayItem<K>;
    } catch { /* unreadable: raw shows it */ }
    return {
      key: (kind === "timers" ? timerOf(row) : numberOf(row.seq)!) as RelayKey<K>,
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
