/**
 * The shapes of the relay's queues, of what a pass records, and of dead letters and backlog.
 *
 * @module
 */
import type { Event } from "./documents.ts";
/**
 * An outbox entry waiting for the relay.
 *
 * @example Delivering one entry
 * ```ts
 * import type { OutboxEntry } from "@harel/dynamodb";
 *
 * function route(entry: OutboxEntry): string {
 *   return entry.targetId === null ? `broadcast ${entry.event.kind}` : `to ${entry.targetId}`;
 * }
 * ```
 */
export interface OutboxEntry {
  /** Its seq; pass it to `ackOutbox` once delivered. */
  seq: number;
  /** The target execution, or `null`. */
  targetId: string | null;
  /** The event. */
  event: Event;
}

/**
 * A spawn intent waiting for the relay.
 *
 * @example Starting a spawned child
 * ```ts
 * import { newExecution, type PendingSpawn } from "@harel/dynamodb";
 *
 * function childOf(spawn: PendingSpawn) {
 *   return newExecution({
 *     id: spawn.childId,
 *     definition_id: "order",
 *     root_path: spawn.rootPath,
 *     parent_id: spawn.parentId,
 *     context: spawn.context,
 *   });
 * }
 * ```
 */
export interface PendingSpawn {
  /** Its seq; pass it to `ackSpawn` once the child is started. */
  seq: number;
  /** The parent execution. */
  parentId: string;
  /** The child's id. */
  childId: string;
  /** The state path the child starts from. */
  rootPath: string;
  /** The child's initial context. */
  context: Record<string, unknown>;
}

/**
 * A durable timer.
 *
 * @example Firing a timer
 * ```ts
 * import type { Timer } from "@harel/dynamodb";
 *
 * function timeoutEventId(timer: Timer): string {
 *   // Stable, so a sweep that retries is deduplicated.
 *   return `timer:${timer.executionId}:${timer.path}:${timer.fireAt}`;
 * }
 * ```
 */
export interface Timer {
  /** The execution it belongs to. */
  executionId: string;
  /** Its state path. */
  path: string;
  /** When it fires, in epoch seconds. */
  fireAt: number;
}

/** The three queues a relay works through: outbox entries, spawn intents and due timers. */
export type RelayKind = "outbox" | "spawns" | "timers";

/** What identifies one item of a queue: a seq (outbox, spawns) or a timer. */
export type RelayKey<K extends RelayKind> = K extends "timers" ? Timer : number;

/** One item of a queue, as the relay reads it (see {@linkcode RelayItems}). */
export type RelayItem<K extends RelayKind> = K extends "outbox" ? OutboxEntry
  : K extends "spawns" ? PendingSpawn
  : Timer;

/**
 * A queue row that cannot be read, as another writer (or a bug) left it.
 *
 * @example Logging an unreadable row
 * ```ts
 * import type { UnreadableRow } from "@harel/dynamodb";
 *
 * const row: UnreadableRow<"outbox"> = { key: 7, attempts: 0, error: "event is not JSON", raw: { event: "{oops" } };
 * console.log(`outbox seq ${row.key}: ${row.error}`);
 * ```
 */
export interface UnreadableRow<K extends RelayKind> {
  /** Its key. */
  key: RelayKey<K>;
  /** Failed attempts recorded on it. */
  attempts: number;
  /** Why it cannot be read. */
  error: string;
  /** Its attributes as stored (strings, numbers, null), for an operator to look at. */
  raw: Record<string, unknown>;
}

/**
 * A failed delivery, as a relay records it on the item: the attempts so far, and either when the
 * next may start or that it is dead-lettered (`retryAt: null`).
 *
 * @example Parking an entry for a minute
 * ```ts
 * import type { RelayFailure } from "@harel/dynamodb";
 *
 * const failure: RelayFailure = { attempts: 1, retryAt: Date.now() / 1000 + 60, error: "HTTP 503" };
 * ```
 */
export interface RelayFailure {
  /** Failed attempts in all, this one included. */
  attempts: number;
  /** When the next attempt may start (epoch seconds), or `null` to dead-letter the item. */
  retryAt: number | null;
  /** What went wrong (kept to its first 1000 characters). */
  error: string;
  /** The item cannot be read (with `retryAt: null`): it holds nothing back. @default {false} */
  unreadable?: boolean;
}

/**
 * An item a relay gave up on: kept, visible, and skipped by every pass (and, for an outbox
 * entry, holding back the later entries of its target) until it is retried or dropped.
 *
 * @example Listing dead letters
 * ```ts
 * import type { DeadLetter, ExecutionStore } from "@harel/dynamodb";
 *
 * async function report(store: ExecutionStore): Promise<void> {
 *   const dead: DeadLetter<"outbox">[] = await store.deadLetters("outbox");
 *   for (const letter of dead) console.log(letter.key, letter.attempts, letter.lastError);
 * }
 * ```
 */
export interface DeadLetter<K extends RelayKind> {
  /** Its key: pass it to `retryDeadLetter` or `dropDeadLetter`. */
  key: RelayKey<K>;
  /** The item, or `null` when it cannot be read (see `raw`). */
  item: RelayItem<K> | null;
  /** Failed attempts. */
  attempts: number;
  /** The last error recorded, if any. */
  lastError: string | null;
  /** When it was dead-lettered, in epoch seconds. */
  deadAt: number;
  /** The execution it came from; `null` when the row does not say (the Python store's). */
  sourceId?: string | null;
  /** Its attributes as stored. */
  raw: Record<string, unknown>;
}

/**
 * Options of the bounded reads `pendingOutbox`, `pendingSpawns` and `dueTimers`.
 *
 * @example Reading the 100 oldest outbox entries
 * ```ts
 * import type { ExecutionStore, ReadLimitOptions } from "@harel/dynamodb";
 *
 * async function oldest(store: ExecutionStore): Promise<number[]> {
 *   const options: ReadLimitOptions = { limit: 100 };
 *   return (await store.pendingOutbox(options)).map((entry) => entry.seq);
 * }
 * ```
 */
export interface ReadLimitOptions {
  /**
   * How many entries (lowest seqs, earliest timers) one read returns at most, or `Infinity`.
   * Memory grows with `limit`, not with the backlog. @default {1000}
   */
  limit?: number;
}

/**
 * Options of `deadLetters`: how many, and (outbox) of which target.
 *
 * @example The dead letters of one target
 * ```ts
 * import type { DeadLetterOptions, ExecutionStore } from "@harel/dynamodb";
 *
 * async function ofPayments(store: ExecutionStore): Promise<number> {
 *   const options: DeadLetterOptions = { targetId: "payments", limit: 50 };
 *   return (await store.deadLetters("outbox", options)).length;
 * }
 * ```
 */
export interface DeadLetterOptions extends ReadLimitOptions {
  /** Outbox only: just the dead letters to this target (`null`: those without a target). @default {undefined} */
  targetId?: string | null;
}

/**
 * Options of `retryDeadLetters` and `dropDeadLetters`.
 *
 * @example Retrying every dead letter of one target, with progress
 * ```ts
 * import type { BulkDeadLetterOptions, ExecutionStore } from "@harel/dynamodb";
 *
 * async function retryPayments(store: ExecutionStore): Promise<number> {
 *   const options: BulkDeadLetterOptions = {
 *     targetId: "payments",
 *     onProgress: (done) => console.error(`${done} retried`),
 *   };
 *   return await store.retryDeadLetters("outbox", options);
 * }
 * ```
 */
export interface BulkDeadLetterOptions {
  /** Outbox only: just the dead letters to this target (`null`: those without a target). @default {undefined} */
  targetId?: string | null;
  /** Called with the count so far after each dead letter retried (dropped). @default {undefined} */
  onProgress?: (done: number) => void;
  /** Stops it between dead letters: it rejects with the signal's reason. @default {undefined} */
  signal?: AbortSignal;
}

/**
 * A queue's backlog, as `backlog` counts it: each count reads at most `limit` rows.
 *
 * @example Relay lag and dead letters at a glance
 * ```ts
 * import type { Backlog, ExecutionStore } from "@harel/dynamodb";
 *
 * async function summary(store: ExecutionStore): Promise<string> {
 *   const b: Backlog = await store.backlog("outbox");
 *   const lag = b.oldestAt === null ? "none" : `${Math.round(Date.now() / 1000 - b.oldestAt)} s`;
 *   return `${b.pending} pending, ${b.waiting} waiting, ${b.dead} dead, lag ${lag}`;
 * }
 * ```
 */
export interface Backlog {
  /** Deliverable or held but not failed (timers: due now), up to `limit`. */
  pending: number;
  /** Waiting for a retry after a failed delivery, up to `limit`. */
  waiting: number;
  /** Dead-lettered, up to `limit`. */
  dead: number;
  /** Outbox: the targets of the waiting and dead entries counted (their later entries wait). */
  heldTargets: number;
  /** Whether a count reached `limit`: the true figure may be higher. */
  capped: boolean;
  /** When the oldest pending item counted was committed (timers: due), or `null`: lag's start. */
  oldestAt: number | null;
}

/**
 * Options of `backlog`.
 *
 * @example A summary that reads at most 100 rows per count
 * ```ts
 * import type { BacklogOptions, ExecutionStore } from "@harel/dynamodb";
 *
 * async function dead(store: ExecutionStore): Promise<number> {
 *   const options: BacklogOptions = { limit: 100 };
 *   return (await store.backlog("spawns", options)).dead;
 * }
 * ```
 */
export interface BacklogOptions {
  /** The most rows each count reads, 1 to 10,000. @default {1000} */
  limit?: number;
  /** Stops the counts between their reads: it rejects with the signal's reason. @default {undefined} */
  signal?: AbortSignal;
}

/**
 * Where an outbox entry stands: `pending` (the next pass delivers it), `waiting` (it failed),
 * `dead` (retry or drop it) or `held` (behind a failed earlier entry of its target).
 */
export type OutboxState = "pending" | "waiting" | "dead" | "held";

/**
 * One outbox entry of an execution (`executionOutbox`), with the relay's state of it.
 *
 * @example Saying what holds an entry back
 * ```ts
 * import type { OutboxEntryState } from "@harel/dynamodb";
 *
 * const why = (e: OutboxEntryState) =>
 *   e.state === "held" ? `waits behind seq ${e.heldBehind ?? "?"}` : e.state;
 * ```
 */
export interface OutboxEntryState {
  /** Its seq: the key `retryDeadLetter("outbox", seq)` and `dropDeadLetter` take. */
  seq: number;
  /** The execution that emitted it, or `null` when the row does not say (the Python store's). */
  sourceId: string | null;
  /** Its target, or `null` (an event for the outside world). */
  targetId: string | null;
  /** The event, or `null` when the stored one cannot be read. */
  event: Event | null;
  /** Where it stands with the relay. */
  state: OutboxState;
  /** Failed attempts. */
  attempts: number;
  /** When it is tried again (epoch seconds), or `null`. */
  retryAt: number | null;
  /** When it was dead-lettered (epoch seconds), or `null`. */
  deadAt: number | null;
  /** The last error a relay recorded, or `null`. */
  lastError: string | null;
  /** `held`: the failed entry of its target it waits behind; `null` when unknown or not held. */
  heldBehind: number | null;
}

/**
 * An execution's outbox, as `executionOutbox` finds it by key: the entries it emitted that are
 * still in the outbox, and the entries to it that failed or wait behind one that did.
 *
 * @example Listing what an execution emitted that went dead
 * ```ts
 * import type { ExecutionStore } from "@harel/dynamodb";
 *
 * async function deadEmits(store: ExecutionStore, id: string): Promise<number[]> {
 *   const { emitted } = await store.executionOutbox(id);
 *   return emitted.filter((e) => e.state === "dead").map((e) => e.seq);
 * }
 * ```
 */
export interface ExecutionOutbox {
  /** Entries it emitted that are not delivered yet, lowest seq first, at most `limit`. */
  emitted: OutboxEntryState[];
  /**
   * Whether `emitted` may miss some: it reached `limit`, or the execution's item does not name
   * every target (the Python store's, past 100 targets, or gone).
   */
  emittedPartial: boolean;
  /**
   * Entries to it (from any writer) that failed, and those set apart behind them, lowest seq
   * first, at most `limit`. Entries nothing holds back are not listed.
   */
  targeting: OutboxEntryState[];
  /** Whether `targeting` reached `limit`: its target lists more. */
  targetingPartial: boolean;
}

/**
 * Options of `executionOutbox`.
 *
 * @example The first 20 of each list
 * ```ts
 * import type { ExecutionOutboxOptions, ExecutionStore } from "@harel/dynamodb";
 *
 * async function glance(store: ExecutionStore, id: string): Promise<number> {
 *   const options: ExecutionOutboxOptions = { limit: 20 };
 *   const { emitted, targeting } = await store.executionOutbox(id, options);
 *   return emitted.length + targeting.length;
 * }
 * ```
 */
export interface ExecutionOutboxOptions {
  /** The most entries each list holds, 1 to 1000. @default {100} */
  limit?: number;
}

/**
 * Options of {@linkcode relayOutbox} and {@linkcode relaySpawns}.
 *
 * @example A pass that gives up after 50 seconds
 * ```ts
 * import { relayOutbox, type RelayOptions } from "@harel/dynamodb";
 * import { MemoryStore } from "@harel/dynamodb/testing";
 *
 * const options: RelayOptions = { limit: 500, concurrency: 8, signal: AbortSignal.timeout(50_000) };
 * await relayOutbox(new MemoryStore(), async (entry) => console.log(entry.event.kind), options);
 * ```
 */
export interface RelayOptions {
  /** How many entries this pass reads (the lowest seqs): a positive integer, or `Infinity` for all. @default {1000} */
  limit?: number;
  /** How many callbacks run at once, 1 to 1000 (outbox: how many targets are delivered to in parallel). @default {16} */
  concurrency?: number;
  /** Stops the pass between entries: nothing new starts, what was delivered is acknowledged. @default {undefined} */
  signal?: AbortSignal;
  /**
   * Called with each error a callback throws (the entry stays pending). If `onError` throws, the
   * pass stops as if aborted, then rejects with what it threw.
   * @default {undefined}
   */
  onError?: (error: unknown) => void;
  /**
   * Failed attempts after which an entry is dead-lettered: 1 to 1000, or `Infinity`. A callback
   * that throws an `UnreadableEntry` sets the entry aside at once.
   * @default {10}
   */
  maxAttempts?: number;
  /**
   * The wait before an entry whose delivery failed is tried again, in seconds: `minSeconds`
   * after the first failure, doubling up to `maxSeconds` (both 0 to 31,536,000, one year).
   * @default {{ minSeconds: 10, maxSeconds: 3600 }}
   */
  backoff?: { minSeconds?: number; maxSeconds?: number };
}

/**
 * Options of {@linkcode relayOutbox}.
 *
 * @example Delivering what a commit emitted, within the same request
 * ```ts
 * import { relayOutbox, newEvent, newExecution, type OutboxRelayOptions } from "@harel/dynamodb";
 * import { MemoryStore } from "@harel/dynamodb/testing";
 *
 * const store = new MemoryStore();
 * const { outbox } = await store.commit(newExecution({ definition_id: "order" }), {
 *   emits: [{ target: null, event: newEvent("order.created") }],
 * });
 * const options: OutboxRelayOptions = { seqs: outbox };
 * await relayOutbox(store, async (entry) => console.log(entry.event.kind), options);
 * ```
 */
export interface OutboxRelayOptions extends RelayOptions {
  /**
   * Deliver just these seqs (those `commit` returned): one behind a pending earlier entry of its
   * source and target, or a held target, is left for the next full pass, as is one that fails.
   * @default {undefined}
   */
  seqs?: number[];
}

/**
 * Options of {@linkcode sweepTimers}.
 *
 * @example Sweeping what is due in the next second too
 * ```ts
 * import { sweepTimers, type SweepOptions } from "@harel/dynamodb";
 * import { MemoryStore } from "@harel/dynamodb/testing";
 *
 * const options: SweepOptions = { now: Date.now() / 1000 + 1, limit: 200 };
 * await sweepTimers(new MemoryStore(), async (timer, event) => console.log(timer.path, event.id), options);
 * ```
 */
export interface SweepOptions extends RelayOptions {
  /** The time timers are due at, in epoch seconds. @default {Date.now() / 1000} */
  now?: number;
}
