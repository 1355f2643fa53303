// The queue's transitions, each one atomic write built by a pure function (no client, no clock
// read): what moves a relay row from one state to another and what it checks on the way. The
// states are the relay index's partitions (docs/delivery.md, "The state machine"): pending `p`,
// waiting `w`, dead `d`, held `h{target}`, and no partition for a row another writer wrote. Every
// write is conditioned on the row being what the decision saw (by key, never by an index read).
// What a transition does to a row and to its target's hold comes from core/_queue_transitions.ts,
// which MemoryStore applies to its own rows.
import type { TransactWriteItem, Update } from "@aws-sdk/client-dynamodb";
import { type Item, N, S } from "../../core/_attributes.ts";
import { FAILURE, OUTBOX, RELAY, seqKey, TIMER, timerKey } from "../../core/_layout.ts";
import { fireAtGuard } from "./_fire_at.ts";
import type { RelayKey, Timer } from "../../core/types.ts";
import * as transition from "../../core/_queue_transitions.ts";
import type { HoldOp } from "../../core/_queue_transitions.ts";
import type { ExecutionTables } from "../../core/table_specs.ts";
import type { RelayFailure, RelayKind } from "../../core/types.ts";
import { COUNTER, HOLD } from "../../core/_layout.ts";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import {
  keyOrder,
  moveInput,
  partition,
  pendingPlace,
  type Place,
  rowKey,
  rowShard,
} from "./_relay_index.ts";

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
  return {
    table: kind === "outbox" ? tables.outbox.name : tables.spawns.name,
    key: seqKey(key as number),
    item: seqKey(key as number),
    names: { "#k": OUTBOX.seq },
    values: {},
    condition: "attribute_exists(#k)",
  };
}

/** The condition that an outbox entry still holds its target: there, and waiting or dead. */
export const STILL_HEAD =
  "attribute_exists(#k) AND (attribute_exists(#hd) OR attribute_exists(#hr))";
export const STILL_HEAD_NAMES = { "#k": OUTBOX.seq, "#hd": FAILURE.deadAt, "#hr": FAILURE.retryAt };

/**
 * fail, dead-letter: the row to waiting (until `failure.retryAt`) or, with `retryAt: null`, to
 * dead, with its attempts and error; `now` (epoch seconds) is when it died. Only while the row is
 * still there (a timer: still at that fire time).
 */
export function failed(
  at: RowAt,
  kind: RelayKind,
  failure: RelayFailure,
  now: number,
): Update {
  const change = transition.fail(failure, now);
  const kept = change.bookkeeping!;
  const to = change.to as "w" | "d";
  const dead = to === "d";
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

/** The condition that the row at `at` is a dead letter. */
function deadAt(at: RowAt): RowAt {
  return {
    ...at,
    names: { ...at.names, "#d": FAILURE.deadAt },
    condition: `attribute_exists(#d) AND ${at.condition}`,
  };
}

/** retry: a dead letter back to pending, its attempts and error forgotten. */
export function retried(at: RowAt, kind: RelayKind): TransactWriteItem {
  const dead = deadAt(at);
  const place = placed(transition.retry().to!, kind, at.item);
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

/**
 * hold: outbox entries (their seqs as stored and the partitions they were read in) moved behind
 * their target's head `head`, and listed by key on the target's hold — only while the head still
 * holds the target, and each entry is still where it was read.
 */
export function setApartItems(
  tables: ExecutionTables,
  target: string,
  head: string,
  entries: { seq: string; from: string }[],
  list = true,
): TransactWriteItem[] {
  const { to, hold } = transition.setApart(entries.map((entry) => entry.seq), list);
  return [
    {
      ConditionCheck: {
        TableName: tables.outbox.name,
        Key: { [OUTBOX.seq]: { N: head } },
        ConditionExpression: STILL_HEAD,
        ExpressionAttributeNames: STILL_HEAD_NAMES,
      },
    },
    ...entries.map(({ seq, from }) => ({
      Update: moveInput(tables.outbox.name, { [OUTBOX.seq]: { N: seq } }, from, {
        part: partition(to!, target),
        order: { N: seq },
      }),
    })),
    ...holdItems({ tables }, target, hold),
  ];
}

/** release: a held entry back to pending, only if it is still held where it was (`from`). */
export function bringBackInput(tables: ExecutionTables, seq: string, from: string) {
  const key = { [OUTBOX.seq]: { N: seq } };
  return moveInput(
    tables.outbox.name,
    key,
    from,
    placed(transition.bringBack().to!, "outbox", key),
  );
}

/** The place of letter `to` for a pending, waiting or dead row, ordered by its key. */
function placed(to: "p" | "w" | "d" | "h", kind: RelayKind, item: Item): Place {
  return { part: partition(to, rowShard(kind, item)), order: keyOrder(kind, item)! };
}

/**
 * adopt: a row another writer wrote (no partition) to pending (a timer: at its fire time),
 * unless it was adopted, acknowledged or (a timer) re-scheduled meanwhile.
 */
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

// --- a target's hold (counters item `outbox_hold:{target key}`) ------------------------

/** The key of a target's hold item in the counters table. */
export const holdKey = (target: string): Item => ({ [COUNTER.id]: S(`${HOLD.prefix}${target}`) });

/** A hold set's attribute, and a change's verb, on the hold item. */
const SET_ATTRIBUTE = { heads: HOLD.heads, held: HOLD.held } as const;
const VERB = { add: "ADD", remove: "DELETE" } as const;

/**
 * The transaction item of hold changes on `target`'s hold item: one operation, or (a head
 * demoted) two on the same seqs in one update.
 */
function holdUpdate(
  q: { tables: ExecutionTables },
  target: string,
  [first, second]: HoldOp[],
): TransactWriteItem {
  const names: Record<string, string> = { "#s": SET_ATTRIBUTE[first!.set] };
  let expression = `${VERB[first!.verb]} #s :s`;
  if (second !== undefined) {
    if (second.seqs.join() !== first!.seqs.join()) throw new Error("one update, one set of seqs");
    expression += ` ${VERB[second.verb]} #l :s`;
    names["#l"] = SET_ATTRIBUTE[second.set];
  }
  return {
    Update: {
      TableName: q.tables.counters.name,
      Key: holdKey(target),
      UpdateExpression: expression,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ":s": { NS: first!.seqs } },
    },
  };
}

/** The transaction items of hold changes on `target`'s hold, one per change. */
export function holdItems(
  q: { tables: ExecutionTables },
  target: string,
  ops: HoldOp[],
): TransactWriteItem[] {
  return ops.map((op) => holdUpdate(q, target, [op]));
}

/** The item that makes `seq` a head of `target` (in the same transaction as its failure). */
export const addHead = (q: { tables: ExecutionTables }, target: string, seq: AttributeValue) =>
  holdUpdate(q, target, [transition.addHead(seq.N!)]);

/** The item that lists `seqs` as held behind `target`'s heads (with their move). */
export const addHeld = (q: { tables: ExecutionTables }, target: string, seqs: string[]) =>
  holdUpdate(q, target, [transition.addHeld(seqs)]);

/** The item that takes delivered (or gone) entries off `target`'s list of held entries. */
export const unlistHeld = (q: { tables: ExecutionTables }, target: string, seqs: string[]) =>
  holdUpdate(q, target, [transition.unlistHeld(seqs)]);

/**
 * The item that turns a head of `target` behind a lower head into one of the entries held behind
 * it: out of the heads, onto the list (one operation on the hold item, with its move).
 */
export function headToHeld(
  q: { tables: ExecutionTables },
  target: string,
  seq: string,
  list: boolean,
): TransactWriteItem {
  return holdUpdate(q, target, transition.demote(seq, list).hold);
}

/** The item that takes `seqs` out of `target`'s heads. */
export const removeHeads = (q: { tables: ExecutionTables }, target: string, seqs: string[]) =>
  holdUpdate(q, target, [transition.removeHeads(seqs)]);
