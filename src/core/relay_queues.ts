/**
 * What a store gives the relay runners, one queue each: the outbox, spawn intents and timers
 * (docs/delivery.md).
 *
 * @module
 */
import type { OutboxEntry, PendingSpawn, RelayFailure, RelayKey, Timer } from "./relay_types.ts";

/**
 * An outbox entry an index offers: its stored seq, its target's key and its predecessor as the
 * index shows them. A candidate only: it is read again by key before anything is decided.
 *
 * @example A candidate
 * ```ts
 * import type { OutboxCandidate } from "@harel/dynamodb";
 *
 * const candidate: OutboxCandidate = { id: "42", target: "0123456789abcdef", prev: 0 };
 * ```
 */
export interface OutboxCandidate {
  /** The seq as stored (the row's key). */
  id: string;
  /** Its target's key (a hash of the target id). */
  target: string;
  /** The seq of the previous entry of the same source to the same target: 0 none, absent unknown. */
  prev?: number;
  /** The row as a write by key just answered with it (its adoption): the pass reads it no more. */
  row?: OutboxRow;
}

/**
 * An outbox row read by key (strongly): its place, bookkeeping and chain, and the entry.
 *
 * @example Whether a row failed
 * ```ts
 * import type { OutboxRow } from "@harel/dynamodb";
 *
 * const failed = (row: OutboxRow) => row.retryAt !== null || row.deadAt !== null;
 * ```
 */
export interface OutboxRow extends OutboxCandidate {
  /** The seq as a number, to order by. */
  seq: number;
  /** Failed attempts. */
  attempts: number;
  /** When it is tried again (epoch seconds), or null. */
  retryAt: number | null;
  /** When it was dead-lettered (epoch seconds), or null. */
  deadAt: number | null;
  /** Set aside because no one can read it: it holds nothing back. */
  unreadable: boolean;
  /** Its place: `p…` pending, `w…` waiting, `d…` dead, `h…` set apart behind its target's head. */
  part: string;
  /** When it was committed (epoch seconds), or null when the row does not say. */
  createdAt: number | null;
  /** The execution that emitted it; null for another writer's row, which does not say. */
  sourceId: string | null;
  /** Entries of other sources it also waits for (another writer's entry, whose source is unknown). */
  after?: number[];
  /** Not to go out yet, nor anything after it to its target (a row not chained yet). */
  waits?: boolean;
  /** The entry, or why it cannot be read with the row as stored. */
  entry: OutboxEntry | { error: string; raw: Record<string, unknown> };
}

/**
 * A target's hold, read by key: its entries that failed (heads) and those set apart behind them.
 *
 * @example A target held by one entry
 * ```ts
 * import type { OutboxHold } from "@harel/dynamodb";
 *
 * const hold: OutboxHold = { heads: ["41"], held: ["42", "43"], spill: null };
 * ```
 */
export interface OutboxHold {
  /** The entries that failed and hold the target, by stored seq. */
  heads: string[];
  /** The entries set apart behind them (at most 150 listed), by stored seq. */
  held: string[];
  /** When entries were last set apart without room on the list (epoch seconds), or null. */
  spill: number | null;
  /**
   * With other writers: the highest seqs (lowest first) of the target's entries the outbox feed
   * saw, another writer's and ours. An entry waits for the highest of them below it while it is
   * there, whoever committed either.
   */
  recent?: string[];
}

/**
 * A target's entries moved behind its lowest head (`head`), or heads behind a lower head.
 *
 * @example One entry set apart
 * ```ts
 * import type { OutboxRow, SetApart } from "@harel/dynamodb";
 *
 * const move = (row: OutboxRow): SetApart => ({ target: row.target, head: "41", rows: [row] });
 * ```
 */
export interface SetApart {
  /** The target's key. */
  target: string;
  /** The head they wait behind: the move holds only while it still fails. */
  head: string;
  /** The rows moved, as read. */
  rows: OutboxRow[];
}

/**
 * A target released: what its hold set apart below its lowest failing head comes back, then the
 * heads that no longer hold it leave the hold.
 *
 * @example A release after a head was delivered
 * ```ts
 * import type { OutboxRow, Release } from "@harel/dynamodb";
 *
 * const release = (back: OutboxRow[]): Release => ({
 *   target: "0123456789abcdef",
 *   acks: ["41"],
 *   back,
 *   gone: ["41"],
 *   lowest: Infinity,
 *   spill: null,
 * });
 * ```
 */
export interface Release {
  /** The target's key. */
  target: string;
  /** Heads delivered: deleted first, with the first entry brought back. */
  acks: string[];
  /** The entries brought back to pending, lowest first. */
  back: OutboxRow[];
  /** The heads that no longer hold the target (taken out of its hold last). */
  gone: string[];
  /** The lowest seq of a head still holding it (Infinity: none). */
  lowest: number;
  /** The hold's `spill` (entries set apart unlisted, found through the index), or null. */
  spill: number | null;
}

/**
 * The writes of one step of the outbox pipeline, for {@linkcode OutboxQueue.apply}.
 *
 * @example Acknowledging two delivered entries
 * ```ts
 * import type { OutboxWrites } from "@harel/dynamodb";
 *
 * const writes: OutboxWrites = { ack: ["41", "42"] };
 * ```
 */
export interface OutboxWrites {
  /** Pending entries set apart behind their target's head. */
  setApart?: SetApart[];
  /** Heads behind a lower head of their target, set apart behind it. */
  demote?: SetApart[];
  /** Entries a hold lists that are gone (delivered), by target. */
  unlist?: { target: string; ids: string[] }[];
  /** Targets released. */
  release?: Release[];
  /** Failed deliveries: each row to waiting or dead, a failed entry a head of its target. */
  fail?: { row: OutboxRow; failure: RelayFailure }[];
  /** Delivered entries to delete, by stored seq (none of them a head as last read). */
  ack?: string[];
}

/**
 * What {@linkcode OutboxQueue.apply} did.
 *
 * @example Counting recorded failures
 * ```ts
 * import type { OutboxApplied } from "@harel/dynamodb";
 *
 * const recorded = (applied: OutboxApplied) => applied.failed.filter(Boolean).length;
 * ```
 */
export interface OutboxApplied {
  /** For each failure of the writes: recorded (false: the entry is gone). */
  failed: boolean[];
  /** Targets whose hold must be read again (a set-apart met a head that no longer fails). */
  recheck: string[];
}

/**
 * A pass's hold on its queue (`lease`): while it lasts, passes of other relays find the queue
 * taken and deliver nothing, so that relays started together deliver each entry once.
 *
 * @example Keeping a lease through a long pass
 * ```ts
 * import type { RelayLease } from "@harel/dynamodb";
 *
 * async function work(lease: RelayLease, steps: (() => Promise<void>)[]): Promise<void> {
 *   for (const step of steps) if (await lease.keep()) await step();
 *   await lease.release();
 * }
 * ```
 */
export interface RelayLease {
  /** Renews the lease when a third of it is left: false once it is lost (another relay has it). */
  keep(): Promise<boolean>;
  /** Whether it ran out during the pass (or has now), so that another relay may have run. */
  readonly lapsed: boolean;
  /** Gives the lease back (if it is still this pass's). */
  release(): Promise<void>;
}

/**
 * A cursor over an index's candidates.
 *
 * @example Reading every candidate
 * ```ts
 * import type { CandidateCursor, OutboxCandidate } from "@harel/dynamodb";
 *
 * async function all(cursor: CandidateCursor): Promise<OutboxCandidate[]> {
 *   const found: OutboxCandidate[] = [];
 *   for (let chunk; (chunk = await cursor.next(100)).length > 0;) found.push(...chunk);
 *   return found;
 * }
 * ```
 */
export interface CandidateCursor {
  /** The next at most `count` candidates; `[]` once there are none left. */
  next(count: number): Promise<OutboxCandidate[]>;
}

/**
 * A store's outbox as the relay reads and writes it: `ExecutionStore.outboxQueue`.
 *
 * @example The rows of two seqs
 * ```ts
 * import type { ExecutionStore } from "@harel/dynamodb";
 *
 * async function rows(store: ExecutionStore) {
 *   return await store.outboxQueue.rows(["1", "2"]);
 * }
 * ```
 */
export interface OutboxQueue {
  /** The store's clock, epoch seconds. */
  now(): number;
  /** Takes the queue for a pass for `seconds` (renewable): null when another relay has it. */
  lease(seconds: number): Promise<RelayLease | null>;
  /** Candidates at `now`: due waiting entries by retry time, then pending ones by seq. */
  candidates(now: number, signal?: AbortSignal): CandidateCursor;
  /** Rows by stored seq, strongly consistent (absent: gone). */
  rows(ids: readonly string[]): Promise<Map<string, OutboxRow>>;
  /** Holds by target key, strongly consistent (absent: the target holds nothing). */
  holds(targets: readonly string[]): Promise<Map<string, OutboxHold>>;
  /** Writes `writes`, each move conditioned on the row being where it was read. */
  apply(writes: OutboxWrites): Promise<OutboxApplied>;
}

/**
 * A spawn intent or timer read by key for a pass, with its bookkeeping.
 *
 * @example A due spawn
 * ```ts
 * import type { QueueRow } from "@harel/dynamodb";
 *
 * const row: QueueRow<"spawns"> = {
 *   key: 7,
 *   attempts: 0,
 *   retryAt: null,
 *   deadAt: null,
 *   at: 1_700_000_000,
 *   item: { seq: 7, parentId: "p", childId: "c", rootPath: "fork.left", context: {} },
 * };
 * ```
 */
export interface QueueRow<K extends "spawns" | "timers"> {
  /** Its key. */
  key: RelayKey<K>;
  /** Failed attempts. */
  attempts: number;
  /** When it is tried again (epoch seconds), or null. */
  retryAt: number | null;
  /** When it was dead-lettered (epoch seconds), or null. */
  deadAt: number | null;
  /** When it was committed (spawns) or is due (timers), epoch seconds; null when unknown. */
  at: number | null;
  /** The item, or why it cannot be read. */
  item: (K extends "spawns" ? PendingSpawn : Timer) | {
    error: string;
    raw: Record<string, unknown>;
  };
}

/**
 * A store's spawn intents or timers as the relay reads and writes them
 * (`ExecutionStore.spawnQueue`, `timerQueue`).
 *
 * @example The spawns due now
 * ```ts
 * import type { ExecutionStore } from "@harel/dynamodb";
 *
 * async function due(store: ExecutionStore) {
 *   return await store.spawnQueue.due(Date.now() / 1000, 100);
 * }
 * ```
 */
export interface RowQueue<K extends "spawns" | "timers"> {
  /** The store's clock, epoch seconds. */
  now(): number;
  /** Takes the queue for a pass for `seconds` (renewable): null when another relay has it. */
  lease(seconds: number): Promise<RelayLease | null>;
  /** The rows that may be due at `now`, read by key: due waiting, lowest pending (`limit` each). */

  due(now: number, limit: number, signal?: AbortSignal): Promise<QueueRow<K>[]>;
  /** Records a failed attempt: false when the row is gone (a timer: re-scheduled). */
  fail(key: RelayKey<K>, failure: RelayFailure): Promise<boolean>;
}
