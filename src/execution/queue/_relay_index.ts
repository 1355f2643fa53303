// The relay index: one sparse global secondary index on each relay table (outbox, spawns, timers)
// whose partitions are the rows' states, so that a pass reads what is due and nothing else. Pure:
// where a row belongs, and the writes that move it, each conditioned on where it is (by key).
import type { AttributeValue, TransactWriteItem, Update } from "@aws-sdk/client-dynamodb";
import { type Item, N, S } from "../../core/_attributes.ts";
import { FAILURE, OUTBOX, RELAY, seqKey, TIMER, timerKey } from "../../core/_layout.ts";
import type { RelayFailure, RelayKey, RelayKind, Timer } from "../../core/types.ts";
import { fnv1a } from "../../core/_fnv1a.ts";
import { afterFailure } from "../../core/_relay_rules.ts";
import { fireAtGuard } from "./_fire_at.ts";

import { type ExecutionTables, RELAY_INDEX } from "../../core/table_specs.ts";
export { RELAY_INDEX };

/**
 * How many partitions each state spreads over: 8 carry about 8,000 writes a second per table; a
 * pass pays one Query per shard and state. Every writer and reader must agree, so no option.
 */
export const RELAY_SHARDS = 8;

/** A state's partition letter: pending, waiting for a retry, dead-lettered, held (outbox). */
export type Part = "p" | "w" | "d" | "h";

/** Where a row sits in the index: its partition and its order there (a stored number). */
export interface Place {
  part: string;
  order: AttributeValue;
}

/** The partition `part` of `shard` (or, for `h`, of a target key). */
export const partition = (part: Part, shard: number | string): string => `${part}${shard}`;

/** The state a partition name stands for, or null for a name this module does not write. */
export function partOf(name: string | undefined): Part | null {
  const letter = name?.[0];
  return letter === "p" || letter === "w" || letter === "d" || letter === "h" ? letter : null;
}

/** The key of a relay table's row (seq; a timer's execution and path), as the row holds it. */
export function rowKey(kind: RelayKind, item: Item): Item {
  return kind === "timers"
    ? { [TIMER.executionId]: item[TIMER.executionId]!, [TIMER.path]: item[TIMER.path]! }
    : { [OUTBOX.seq]: item[OUTBOX.seq]! };
}

/**
 * The shard of a row: a timer's hashes its execution and path; an entry's is its seq modulo the
 * shards (another writer's odd seq hashes its stored text).
 */
export function rowShard(kind: RelayKind, item: Item): number {
  if (kind === "timers") {
    return fnv1a(item[TIMER.executionId]?.S ?? "", item[TIMER.path]?.S ?? "") % RELAY_SHARDS;
  }
  return seqShard(item[OUTBOX.seq]?.N ?? "");
}

/** The shard of a seq as stored (its text). */
export function seqShard(text: string): number {
  const seq = Number(text);
  if (Number.isSafeInteger(seq) && seq >= 0 && String(seq) === text) return seq % RELAY_SHARDS;
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % RELAY_SHARDS;
}

/** The number a row is ordered by while pending or dead: its seq, or a timer's `fire_at`. */
export function keyOrder(kind: RelayKind, item: Item): AttributeValue | undefined {
  const order = kind === "timers" ? item[TIMER.fireAt] : item[OUTBOX.seq];
  return order?.N === undefined ? undefined : { N: order.N };
}

/** Where a row committed now goes: pending, ordered by its seq (a timer: its fire time). */
export function pendingPlace(kind: RelayKind, item: Item): Place {
  return { part: partition("p", rowShard(kind, item)), order: keyOrder(kind, item)! };
}

/** Where a row belongs by its own attributes at `now` (null: no number to order it by). */
export function placeOf(kind: RelayKind, item: Item, now: number): Place | null {
  const order = keyOrder(kind, item);
  if (order === undefined || !Number.isFinite(Number(order.N))) return null;
  const shard = rowShard(kind, item);
  if (item[FAILURE.deadAt] !== undefined) return { part: partition("d", shard), order };
  const retryAt = item[FAILURE.retryAt]?.N;
  if (retryAt !== undefined && Number(retryAt) > now) {
    return { part: partition("w", shard), order: { N: retryAt } };
  }
  return { part: partition("p", shard), order };
}

/** The relay index's attributes of a place, to spread into an item or an update. */
export function relayAttributes(place: Place): Item {
  return { [RELAY.part]: S(place.part), [RELAY.order]: place.order };
}

/**
 * The update that moves a row to `place` if it is still in partition `from` (`null`: if it has no
 * partition yet, an adoption): as an UpdateItem input or a transaction's Update.
 */
export function moveInput(table: string, key: Item, from: string | null, place: Place) {
  return {
    TableName: table,
    Key: key,
    UpdateExpression: "SET #p = :p, #o = :o",
    ConditionExpression: from === null ? "attribute_not_exists(#p)" : "#p = :from",
    ExpressionAttributeNames: { "#p": RELAY.part, "#o": RELAY.order },
    ExpressionAttributeValues: {
      ":p": S(place.part),
      ":o": place.order,
      ...(from === null ? {} : { ":from": S(from) }),
    },
  };
}

/** A held entry's place: its target's partition, ordered by its seq. */
export function heldPlace(target: string, seq: AttributeValue): Place {
  return { part: partition("h", target), order: { N: seq.N! } };
}

/** The relay index's largest attributes, for size checks made at commit time. */
export const RELAY_PLACEHOLDER: Item = {
  [RELAY.part]: S(partition("h", "0".repeat(16))),
  [RELAY.order]: N(Number.MAX_SAFE_INTEGER),
};

// --- moves ---------------------------------------------------------------------------

/** Where a row is: its table and key, and the condition that it is still that row. */
export interface RowAt {
  table: string;
  key: Item;
  /** The key with what orders the row (a timer's `fire_at`). */
  item: Item;
  names: Record<string, string>;
  values: Item;
  condition: string;
}

/** A row of `table` by its key as stored, and the condition that it is still there. */
export function rowAt(table: string, key: Item): RowAt {
  return {
    table,
    key,
    item: key,
    names: { "#k": OUTBOX.seq },
    values: {},
    condition: "attribute_exists(#k)",
  };
}

/** The table and key of one queue item, and the condition that it is still that item. */
export function locate<K extends RelayKind>(
  tables: ExecutionTables,
  kind: K,
  key: RelayKey<K>,
): RowAt {
  if (kind === "timers") {
    const timer = key as Timer;
    const guard = fireAtGuard(timer.fireAt);
    const at = timerKey(timer.executionId, timer.path);
    return {
      table: tables.timers.name,
      key: at,
      item: { ...at, [TIMER.fireAt]: N(timer.fireAt) },
      names: { "#f": TIMER.fireAt },
      values: guard.values,
      condition: guard.condition,
    };
  }
  return rowAt(tables[kind].name, seqKey(key as number));
}

/**
 * The row to waiting (until `failure.retryAt`) or dead (`retryAt: null`, since `now`), only
 * while it is still there (a timer: still at that fire time).
 */
export function failed(
  at: RowAt,
  kind: RelayKind,
  failure: RelayFailure,
  now: number,
): Update {
  const kept = afterFailure(failure, now);
  const dead = kept.deadAt !== null;
  const to = dead ? "d" : "w";
  const names: Record<string, string> = {
    ...at.names,
    "#a": FAILURE.attempts,
    "#e": FAILURE.lastError,
    "#r": FAILURE.retryAt,
    "#d": FAILURE.deadAt,
    "#p": RELAY.part,
    "#o": RELAY.order,
  };
  const values: Item = {
    ...at.values,
    ":a": N(kept.attempts),
    ":e": S(kept.lastError!),
    ":p": S(partition(to, rowShard(kind, at.item))),
    ":o": dead ? keyOrder(kind, at.item)! : N(kept.retryAt!),
  };
  const sets = ["#a = :a", "#e = :e", "#p = :p", "#o = :o"];
  if (dead) {
    values[":d"] = N(kept.deadAt!);
    sets.push("#d = :d");
  } else {
    values[":r"] = N(kept.retryAt!);
    sets.push("#r = :r");
  }
  if (kept.unreadable) {
    names["#u"] = FAILURE.unreadable;
    values[":u"] = { BOOL: true };
    sets.push("#u = :u");
  }
  return {
    TableName: at.table,
    Key: at.key,
    UpdateExpression: `SET ${sets.join(", ")} REMOVE ${dead ? "#r" : "#d"}`,
    ConditionExpression: at.condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/** The condition that the row at `at` is a dead letter (or set aside with only its place). */
function deadAt(at: RowAt): RowAt {
  return {
    ...at,
    names: { ...at.names, "#d": FAILURE.deadAt, "#dp": RELAY.part },
    values: { ...at.values, ":dp": S("d") },
    condition: `(attribute_exists(#d) OR begins_with(#dp, :dp)) AND ${at.condition}`,
  };
}

/** retry: a dead letter back to pending, its attempts and error forgotten. */
export function retried(at: RowAt, kind: RelayKind): TransactWriteItem {
  const dead = deadAt(at);
  const place = placed("p", kind, at.item);
  return {
    Update: {
      TableName: dead.table,
      Key: dead.key,
      UpdateExpression: "SET #p = :p, #o = :o REMOVE #a, #e, #r, #d, #u",
      ConditionExpression: dead.condition,
      ExpressionAttributeNames: {
        ...dead.names,
        "#a": FAILURE.attempts,
        "#e": FAILURE.lastError,
        "#r": FAILURE.retryAt,
        "#u": FAILURE.unreadable,
        "#p": RELAY.part,
        "#o": RELAY.order,
      },
      ExpressionAttributeValues: { ...dead.values, ":p": S(place.part), ":o": place.order },
    },
  };
}

/** drop: a dead letter deleted (its transition's place: none). */
export function dropped(at: RowAt): TransactWriteItem {
  const dead = deadAt(at);
  return {
    Delete: {
      TableName: dead.table,
      Key: dead.key,
      ConditionExpression: dead.condition,
      ExpressionAttributeNames: dead.names,
      ...(Object.keys(dead.values).length ? { ExpressionAttributeValues: dead.values } : {}),
    },
  };
}

/** The place of letter `to` for a pending, waiting or dead row, ordered by its key. */
function placed(to: "p" | "w" | "d" | "h", kind: RelayKind, item: Item): Place {
  return { part: partition(to, rowShard(kind, item)), order: keyOrder(kind, item)! };
}

/** adopt: another writer's row (no partition) to pending, unless adopted or gone meanwhile. */
export function adopted(tables: ExecutionTables, kind: RelayKind, row: Item) {
  const place: Place = pendingPlace(kind, row);
  const input = moveInput(tables[kind].name, rowKey(kind, row), null, place);
  if (kind === "timers") {
    input.ConditionExpression += " AND #f = :f";
    Object.assign(input.ExpressionAttributeNames, { "#f": TIMER.fireAt });
    Object.assign(input.ExpressionAttributeValues, { ":f": row[TIMER.fireAt]! });
  } else {
    input.ConditionExpression += " AND attribute_exists(#k)"; // not an acknowledged row back
    Object.assign(input.ExpressionAttributeNames, { "#k": OUTBOX.seq });
  }
  return input;
}
