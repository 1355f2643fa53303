// The relay's rules, once, for both execution stores and the runners: when a row may be
// attempted or holds its target, what a failure records, the trace ring's window, when a dedupe
// mark is alive. Pure: every time is passed in, in epoch seconds.
import type { RelayFailure, RelayItem, Timer, UnreadableRow } from "./relay_types.ts";
import type { QueueRow } from "./relay_queues.ts";
import { UnreadableEntry } from "./errors.ts";

/** The most UTF-8 bytes of an error a relay records (`last_error`). */
export const LAST_ERROR_BYTES = 1000;

/** A queue row's bookkeeping, as either store reads it (absent: never failed). */
export interface Bookkept {
  retryAt?: number | null;
  deadAt?: number | null;
  /** Set aside because no one can read it: holds nothing back. */
  unreadable?: boolean;
}

/** Whether a row may be attempted at `now`: not dead-lettered, not waiting for a retry to come. */
export function isDue(row: Bookkept, now: number): boolean {
  return !isDead(row) && !(typeof row.retryAt === "number" && row.retryAt > now);
}

/** Whether a row is dead-lettered. */
export function isDead(row: Bookkept): boolean {
  return row.deadAt !== null && row.deadAt !== undefined;
}

/**
 * Whether an outbox entry holds back its target's later entries at `now`: dead-lettered (and
 * readable: an unreadable row has nothing to deliver in order), or waiting for a retry still to
 * come. A failed entry whose retry is due holds nothing: it goes first, the rest after it.
 */
export function holdsAt(row: Bookkept, now: number): boolean {
  return isHead(row) && (isDead(row) || row.retryAt! > now);
}

/**
 * Whether an outbox entry is one of its target's heads: it failed (dead and readable, or waiting,
 * due or not). A head whose retry is due goes first; the others hold the target.
 */
export function isHead(row: Bookkept): boolean {
  if (isDead(row)) return row.unreadable !== true;
  return typeof row.retryAt === "number";
}

/** How a pass retries: attempts before the dead letter, and the waits between attempts. */
export interface Retry {
  maxAttempts: number;
  minSeconds: number;
  maxSeconds: number;
}

/**
 * What a failed attempt records: the next attempt `minSeconds` after the first failure, doubling
 * up to `maxSeconds`, from `now`; at `maxAttempts`, the dead letter (`retryAt: null`).
 */
export function failedAttempt(
  attempts: number,
  error: unknown,
  retry: Retry,
  now: number,
): RelayFailure {
  // A callback that found the entry unreadable sets it aside at once: no attempt will deliver it.
  if (error instanceof UnreadableEntry) return setAside(attempts, error.message);
  const done = attempts + 1;
  const wait = Math.min(retry.maxSeconds, retry.minSeconds * 2 ** (done - 1));
  return {
    attempts: done,
    retryAt: done >= retry.maxAttempts ? null : now + wait,
    error: errorText(error),
  };
}

/** What setting aside a row no one can read records: dead at once, holding nothing back. */
export function setAside(attempts: number, reason: string): RelayFailure {
  return {
    attempts: attempts + 1,
    retryAt: null,
    error: `unreadable: ${reason}`,
    unreadable: true,
  };
}

/** An error as a relay records it: `Name: message` for an Error, its text otherwise. */
export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** The error text a store keeps: at most {@linkcode LAST_ERROR_BYTES} UTF-8 bytes. */
export function lastErrorText(text: string): string {
  return utf8Prefix(text, LAST_ERROR_BYTES) || "(no message)";
}

/** A queue row's bookkeeping after a transition, as both stores keep it (null: removed). */
export interface Bookkeeping {
  attempts: number;
  lastError: string | null;
  retryAt: number | null;
  deadAt: number | null;
  unreadable: boolean;
}

/** The bookkeeping a failed attempt leaves: waiting until `retryAt`, or dead since `now`. */
export function afterFailure(failure: RelayFailure, now: number): Bookkeeping {
  const dead = failure.retryAt === null;
  return {
    attempts: failure.attempts,
    lastError: lastErrorText(failure.error),
    retryAt: failure.retryAt,
    deadAt: dead ? now : null,
    unreadable: dead && failure.unreadable === true,
  };
}

/** retry: a dead letter's bookkeeping once retried — as if it never failed. */
export const RETRIED: Readonly<Bookkeeping> = Object.freeze({
  attempts: 0,
  lastError: null,
  retryAt: null,
  deadAt: null,
  unreadable: false,
});

/** The longest prefix of `text` of at most `bytes` UTF-8 bytes, cut between characters. */
export function utf8Prefix(text: string, bytes: number): string {
  const whole = text.toWellFormed(); // a lone surrogate would not survive the trip
  const encoded = new TextEncoder().encode(whole);
  if (encoded.length <= bytes) return whole;
  let end = bytes;
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--; // not inside a character
  return new TextDecoder().decode(encoded.subarray(0, end));
}

/** The trace step that falls out of a ring of `traceMax` when `index` is written (-1: none). */
export function ringDrop(index: number, traceMax: number): number {
  return traceMax > 0 ? index - traceMax : -1;
}

/** Whether what expires at `expiresAt` (absent: never) is alive at `now`, as TTL reads it. */
export function isLiveAt(expiresAt: number | null | undefined, now: number): boolean {
  return expiresAt === null || expiresAt === undefined || expiresAt > now;
}

/** The `ttl` a dedupe mark written at `now` gets: `ttlSeconds` after the whole second, or null. */
export function markExpiry(ttlSeconds: number | null, now: number): number | null {
  return ttlSeconds === null ? null : Math.floor(now) + ttlSeconds;
}

/** What a spawn or timer pass hands out: the items due, the rows no one can read, the lag. */
export interface DueBatch<K extends "spawns" | "timers"> {
  items: { item: RelayItem<K>; attempts: number }[];
  unreadable: UnreadableRow<K>[];
  /** When the oldest pending row was committed (spawns) or due (timers), or null. */
  oldestAt: number | null;
}

/**
 * A spawn or timer pass's decision on rows read by key: those due, lowest seq (earliest timer)
 * first, at most `limit`; unreadable ones apart, to be set aside.
 */
export function decideDue<K extends "spawns" | "timers">(
  rows: readonly QueueRow<K>[],
  now: number,
  limit: number,
): DueBatch<K> {
  const batch: DueBatch<K> = { items: [], unreadable: [], oldestAt: null };
  const seen = new Set<string>();
  const due: { item: RelayItem<K>; attempts: number; order: number }[] = [];
  for (const row of rows) {
    const id = JSON.stringify(row.key);
    const timer = typeof row.key !== "number";
    if (seen.has(id) || isDead(row) || !isDue(row, now) || (timer && !(row.at! <= now))) continue;
    seen.add(id);
    if ("error" in row.item) {
      const { error, raw } = row.item;
      batch.unreadable.push({ key: row.key, attempts: row.attempts, error, raw });
    } else {
      const order = timer ? row.at! : row.key as number;
      due.push({ item: row.item as RelayItem<K>, attempts: row.attempts, order });
    }
  }
  due.sort((a, b) => a.order - b.order || compareTimers(a.item, b.item));
  batch.items = due.slice(0, limit).map(({ item, attempts }) => ({ item, attempts }));
  for (const row of rows) {
    if (!isDead(row) && row.at !== null) {
      batch.oldestAt = Math.min(batch.oldestAt ?? Infinity, row.at);
    }
  }
  return batch;
}

/** Timers due at once by execution, then path (code-unit order, as DynamoDB sorts). */
function compareTimers(a: object, b: object): number {
  const [x, y] = [a as Timer, b as Timer];
  const text = (p = "", q = "") => p < q ? -1 : p > q ? 1 : 0;
  return text(x.executionId, y.executionId) || text(x.path, y.path);
}
