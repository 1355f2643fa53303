// The CLI's reads of the outbox and timers: bounded by `limit`, and lenient (a row another writer
// stored oddly is shown flagged): an operator looks when something is wrong.
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { Lowest } from "../core/_bounded.ts";
import type { DynamoDBSender } from "../dynamo/_dynamo.ts";
import {
  batchGet,
  chunks,
  eachConcurrently,
  type Item,
  N,
  pages,
  scanAll,
} from "../dynamo/_dynamo.ts";
import { FAILURE, OUTBOX, RELAY_DUE, TIMER, timerFromItem } from "../core/_layout.ts";
import { parseDocument } from "../core/_json.ts";
import { LIMITS } from "../core/_validate.ts";
import type { Timer } from "../core/types.ts";

/** One outbox row as the CLI shows it. */
export interface OutboxRow {
  /** The seq (a number; `seqText` too when the number does not spell the stored key). */
  seq: number;
  /** The stored key, when `seq` does not read back as it (more digits than a double holds). */
  seqText?: string;
  /** The target execution, or null (a broadcast). */
  targetId: string | null;
  /** The event, parsed leniently (Python's NaN as null); null when unreadable. */
  event: { id?: unknown; kind?: unknown; [field: string]: unknown } | null;
  /** Why the event could not be read, when it could not. */
  unreadable?: string;
  /** The stored `event` text, when it could not be read. */
  raw?: string;
  /** A relay's verdict on it: waiting for a retry, or dead-lettered; absent when pending. */
  state?: "waiting" | "dead";
  /** Failed attempts a relay recorded on it. */
  attempts?: number;
  /** When a relay may try it again (epoch seconds), once it failed. */
  retryAt?: number;
  /** Dead-lettered because no one can read it: it holds nothing back. */
  setAside?: true;
}

/**
 * The `limit` lowest-seq outbox rows, ascending: a keys-only scan into a heap, then BatchGetItem.
 * Keys stay as stored, so a seq with more digits than a double holds shows too.
 */
export async function oldestOutbox(
  client: DynamoDBSender,
  table: string,
  limit: number,
): Promise<OutboxRow[]> {
  const lowest = new Lowest<StoredSeq>(limit, byStoredSeq);
  await scanAll(client, {
    TableName: table,
    ProjectionExpression: "#s",
    ExpressionAttributeNames: { "#s": OUTBOX.seq },
  }, (items) => {
    for (const item of items) {
      const text = item[OUTBOX.seq]?.N;
      if (text !== undefined) lowest.offer({ n: Number(text), text });
    }
  });
  const keys = lowest.sorted();
  const found = new Map<string, Item>();
  await eachConcurrently(chunks(keys, LIMITS.batchGetKeys), 4, (chunk) =>
    batchGet(
      client,
      { [table]: { Keys: chunk.map(({ text }) => ({ [OUTBOX.seq]: { N: text } })) } },
      (responses) => {
        for (const item of responses[table] ?? []) found.set(item[OUTBOX.seq]?.N ?? "", item);
      },
    ));
  // A row acknowledged between the scan and the read is left out.
  return keys.flatMap(({ text }) => found.has(text) ? [outboxRow(found.get(text)!)] : []);
}

/** A seq key as stored (DynamoDB's text) and as a number, for ordering. */
interface StoredSeq {
  n: number;
  text: string;
}

/** By number; two keys one double cannot tell apart, by their text. */
function byStoredSeq(a: StoredSeq, b: StoredSeq): number {
  return a.n - b.n || compare(a.text, b.text);
}

/** One raw outbox item as a row; nothing in it makes this throw. */
export function outboxRow(item: Item): OutboxRow {
  const key = item[OUTBOX.seq]?.N ?? "NaN";
  const seq = Number(key);
  const row: OutboxRow = {
    seq,
    ...(String(seq) === key ? {} : { seqText: key }),
    targetId: item[OUTBOX.targetId]?.S ?? null,
    event: null,
    ...relayState(item),
  };
  const text = item[OUTBOX.event]?.S;
  if (text === undefined) return { ...row, unreadable: "no event text (attribute missing)" };
  let event: unknown;
  try {
    event = parseDocument(text);
  } catch (error) {
    return { ...row, unreadable: `the event is not JSON (${(error as Error).message})`, raw: text };
  }
  if (event === null || typeof event !== "object" || Array.isArray(event)) {
    return { ...row, unreadable: "the event is not a JSON object", raw: text };
  }
  return { ...row, event: event as OutboxRow["event"] };
}

/** What a relay recorded on a row (state, attempts, retry time, set aside); nothing when pending. */
export function relayState(
  item: Item,
): Pick<OutboxRow, "state" | "attempts" | "retryAt" | "setAside"> {
  const attempts = Number(item[FAILURE.attempts]?.N ?? 0) || 0;
  if (item[FAILURE.deadAt] !== undefined) {
    return {
      state: "dead",
      attempts,
      ...(item[FAILURE.unreadable]?.BOOL ? { setAside: true } : {}),
    };
  }
  const retryAt = Number(item[FAILURE.retryAt]?.N);
  if (item[FAILURE.retryAt] !== undefined) {
    return { state: "waiting", attempts, ...(Number.isFinite(retryAt) ? { retryAt } : {}) };
  }
  return {};
}

/** Armed timers: how many, and the `limit` soonest. */
export interface TimerListing {
  /** How many timers the table holds (with `dueAt`: how many are due to fire). */
  total: number;
  /** The `limit` soonest, by fire time (a timer without a numeric `fire_at` last). */
  timers: (Timer & Pick<OutboxRow, "state" | "attempts" | "retryAt">)[];
}

/** The `limit` soonest timers and how many there are, in one scan; `dueAt`: only the due ones. */
export async function soonestTimers(
  client: DynamoDBSender,
  table: string,
  options: { limit: number; dueAt?: number },
): Promise<TimerListing> {
  const soonest = new Lowest<TimerListing["timers"][number]>(options.limit, byFireAtLenient);
  const names: Record<string, string> = {
    "#e": TIMER.executionId,
    "#p": TIMER.path,
    "#f": TIMER.fireAt,
    "#a": FAILURE.attempts,
    ...RELAY_DUE.names,
  };
  const due = options.dueAt === undefined ? {} : {
    FilterExpression: `#f <= :now AND ${RELAY_DUE.filter}`,
    ExpressionAttributeValues: { ":now": N(options.dueAt) },
  };
  let total = 0;
  const scan = (start: Item | undefined) =>
    client.send(
      new ScanCommand({
        TableName: table,
        ProjectionExpression: "#e, #p, #f, #a, #r, #d",
        ExpressionAttributeNames: names,
        ...due,
        ExclusiveStartKey: start,
      }),
    );
  for await (const page of pages(scan)) {
    for (const item of page.Items ?? []) {
      total++;
      soonest.offer({ ...timerFromItem(item), ...relayState(item) });
    }
  }
  return { total, timers: soonest.sorted() };
}

/** Earliest first, ties by execution id then path; a fire time that is not a number last. */
function byFireAtLenient(a: Timer, b: Timer): number {
  const at = (t: Timer) => Number.isNaN(t.fireAt) ? Infinity : t.fireAt;
  // Infinity - Infinity is NaN, falsy: two timers without a time fall through to the ids.
  return at(a) - at(b) || compare(a.executionId, b.executionId) || compare(a.path, b.path);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Held rows come from the rows' own bookkeeping only: whatever a relay keeps to find held
// targets faster, the rows say what holds.
/** An outbox row as the CLI shows it, with what holds it back when something does. */
export type ShownOutboxRow = OutboxRow | (Omit<OutboxRow, "state"> & Held);

/** A row held behind an earlier entry of its target: that entry's seq. */
export interface Held {
  /** Waiting for an earlier entry of its target to be delivered, retried or dropped. */
  state: "held";
  /** The seq of the entry it waits behind: its target's lowest dead or waiting entry. */
  heldBehind: number;
}

/** Whether a row holds back its target's later entries: dead (not set aside) or waiting to retry. */
export function holdsTarget(row: OutboxRow, now: number): boolean {
  if (row.state === "dead") return row.setAside !== true;
  return row.retryAt !== undefined && row.retryAt > now;
}

/** The rows, each after its target's first holding row marked held, as a relay pass sees them. */
export function markHeld(rows: readonly OutboxRow[], now: number): ShownOutboxRow[] {
  const holder = new Map<string | null, number>();
  return rows.map((row) => {
    const behind = holder.get(row.targetId);
    if (behind !== undefined && row.state !== "dead") {
      return { ...row, state: "held", heldBehind: behind };
    }
    if (behind === undefined && holdsTarget(row, now)) holder.set(row.targetId, row.seq);
    return row;
  });
}
