/**
 * The shapes both stores take and return, and the interfaces a backend implements.
 *
 * @module
 */
import type { Event, Execution, ExecutionSummary, Status } from "./documents.ts";
import type { DeleteExecutionsOptions, ExecutionInspection } from "./operator_types.ts";

/**
 * An event a commit puts in the outbox, in the same transaction as the execution, for the
 * relay to deliver once the commit stands.
 *
 * `target` says whom the event is for. An execution id: the relay hands the entry to your
 * `deliver` with that `targetId`, in seq order per target, and your `deliver` passes the
 * event to that execution (a parent, a child, a sibling). `null`: the event is for no
 * execution in particular — it leaves the statechart, for the outside world or for whoever
 * listens (a webhook, a queue, another service; the CLI shows it as `(broadcast)`), and your
 * `deliver` decides where it goes, typically by `event.kind`. The store never routes
 * anything itself: `null` is stored as `target_id` NULL (as the Python engine stores an
 * emit without a target) and comes back as `OutboxEntry.targetId === null`; all `null`
 * entries are delivered in seq order, like the entries of one target.
 *
 * @example An event for another execution, and one for the outside world
 * ```ts
 * import { type Emit, newEvent } from "@harel/dynamodb";
 *
 * const toParent: Emit = { target: "parent-execution-id", event: newEvent("child.done") };
 * const outward: Emit = { target: null, event: newEvent("order.shipped", { id: "o-1" }) };
 * ```
 */
export interface Emit {
  /**
   * The id of the execution the event is for, or `null` for an event to no execution in
   * particular (for the outside world; your relay's `deliver` routes it).
   */
  target: string | null;
  /** The event. */
  event: Event;
}

/**
 * A timer change inside a commit. Two changes of one path in one commit: the last one counts.
 *
 * @example Scheduling one timer and cancelling another
 * ```ts
 * import type { TimerChange } from "@harel/dynamodb";
 *
 * const timers: TimerChange[] = [
 *   { action: "schedule", path: "order.awaiting_payment", fireAt: Date.now() / 1000 + 900 },
 *   { action: "cancel", path: "order.reminder" },
 * ];
 * ```
 */
export type TimerChange =
  | {
    /** Schedule (or re-schedule) the timer at `path`. */
    action: "schedule";
    /** The state path the timer belongs to. */
    path: string;
    /** When it fires, in epoch seconds (may be fractional). */
    fireAt: number;
  }
  | {
    /** Cancel the timer at `path` (no error if there is none). */
    action: "cancel";
    /** The state path the timer belongs to. */
    path: string;
  };

/**
 * An orthogonal-fork spawn intent: a child execution the relay should start.
 *
 * @example Forking two children
 * ```ts
 * import type { SpawnIntent } from "@harel/dynamodb";
 *
 * const spawns: SpawnIntent[] = [
 *   { childId: "child-a", rootPath: "fork.left", context: {} },
 *   { childId: "child-b", rootPath: "fork.right", context: {} },
 * ];
 * ```
 */
export interface SpawnIntent {
  /** The id the child execution gets. */
  childId: string;
  /** The state path the child starts from. */
  rootPath: string;
  /** The child's initial context. */
  context: Record<string, unknown>;
}

/**
 * Everything a commit writes besides the execution itself.
 *
 * @example Everything one event caused
 * ```ts
 * import { type CommitChanges, newEvent } from "@harel/dynamodb";
 *
 * const changes: CommitChanges = {
 *   processedEventId: "event-1",
 *   emits: [{ target: null, event: newEvent("order.ship") }],
 *   timers: [{ action: "cancel", path: "order.awaiting_payment" }],
 *   trace: { event: "order.paid", to: "order.shipping" },
 * };
 * ```
 */
export interface CommitChanges {
  /** Events for the outbox. */
  emits?: Emit[];
  /** The id of the event this commit handled: a dedupe mark is written for it. */
  processedEventId?: string;
  /** Timer schedules and cancellations. */
  timers?: TimerChange[];
  /** Child executions to spawn. */
  spawns?: SpawnIntent[];
  /** One trace step, when tracing. */
  trace?: Record<string, unknown>;
}

/**
 * What a successful commit wrote.
 *
 * @example Reading what a commit wrote
 * ```ts
 * import assert from "node:assert/strict";
 * import { DynamoDBStore } from "@harel/dynamodb";
 * import { newEvent, newExecution } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const { version, outbox } = await store.commit(newExecution({ definition_id: "d" }), {
 *   emits: [{ target: null, event: newEvent("hello") }],
 * });
 * assert.equal(version, 1);
 * assert.equal(outbox.length, 1); // the seq of the one emit
 * ```
 */
export interface CommitResult {
  /** The execution's new version. */
  version: number;
  /** The outbox seqs of the emits, in the order given. */
  outbox: number[];
  /** The spawn seqs of the spawns, in the order given. */
  spawns: number[];
}

/**
 * Filters and paging of {@linkcode DynamoDBStore.listExecutions}.
 *
 * @example Root executions of one definition
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 * import type { ListOptions } from "@harel/dynamodb";
 *
 * const options: ListOptions = { definitionId: "order", rootsOnly: true, limit: 50 };
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const page = await store.listExecutions(options);
 * ```
 */
export interface ListOptions {
  /** Only these statuses, newest commit first (from the status index). @default {undefined} */
  status?: Status | Status[];
  /** Only executions last committed before this time, epoch seconds. @default {undefined} */
  updatedBefore?: number;
  /** With `status`: scan the table, not the index (finds the Python store's). @default {false} */
  scan?: boolean;
  /** With `updatedBefore`: also those whose last commit time is unknown. @default {false} */
  includeUndated?: boolean;
  /** Only this definition. @default {undefined} */
  definitionId?: string;
  /** Only executions without a parent. @default {false} */
  rootsOnly?: boolean;
  /** Matches per page, 1 to 1000. @default {100} */
  limit?: number;
  /** Where to continue: a `nextCursor` from the previous page. @default {null} */
  cursor?: string | null;
}

/**
 * One page of {@linkcode DynamoDBStore.listExecutions}.
 *
 * @example Following the cursor
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const first = await store.listExecutions({ limit: 10 });
 * const second = first.nextCursor
 *   ? await store.listExecutions({ limit: 10, cursor: first.nextCursor })
 *   : null;
 * ```
 */
export interface ListPage {
  /** The matching executions of this page. */
  items: ExecutionSummary[];
  /** The cursor of the next page, or `null` when there is none. */
  nextCursor: string | null;
}

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
 * Options of {@linkcode ExecutionStore.relayBatch}.
 *
 * @example The outbox entries one commit wrote, for delivery within the same request
 * ```ts
 * import { type ExecutionStore, newEvent, newExecution, type RelayBatchOptions } from "@harel/dynamodb";
 *
 * async function own(store: ExecutionStore): Promise<number> {
 *   const exe = newExecution({ definition_id: "order" });
 *   const { outbox } = await store.commit(exe, { emits: [{ target: null, event: newEvent("go") }] });
 *   const options: RelayBatchOptions = { seqs: outbox };
 *   return (await store.relayBatch("outbox", options)).items.length;
 * }
 * ```
 */
export interface RelayBatchOptions {
  /** How many items at most (the lowest seqs, the earliest timers): a positive integer or `Infinity`. @default {1000} */
  limit?: number;
  /** The time items are due at, in epoch seconds. @default {Date.now() / 1000} */
  now?: number;
  /**
   * Outbox only: read just these seqs (those a commit returned) instead of scanning, still
   * holding back any whose earlier entry of the same source and target is pending.
   * @default {undefined}
   */
  seqs?: number[];
}

/**
 * What one relay pass reads of a queue: the items deliverable now, rows no one can read, and how
 * old the oldest pending item is.
 *
 * @example Reading a pass's worth of the outbox
 * ```ts
 * import type { ExecutionStore, RelayItems } from "@harel/dynamodb";
 *
 * async function lag(store: ExecutionStore): Promise<number | null> {
 *   const batch: RelayItems<"outbox"> = await store.relayBatch("outbox", { limit: 100 });
 *   return batch.oldestAt === null ? null : Date.now() / 1000 - batch.oldestAt;
 * }
 * ```
 */
export interface RelayItems<K extends RelayKind> {
  /**
   * Deliverable now, lowest seq (earliest timer) first, each with the failed attempts it had:
   * not dead-lettered, not waiting for a retry, and (outbox) not behind an earlier entry of its
   * target that is waiting, dead or still pending.
   */
  items: { item: RelayItem<K>; attempts: number }[];
  /** Rows that cannot be read (not JSON, a missing attribute): for the relay to set aside. */
  unreadable: UnreadableRow<K>[];
  /** When the oldest pending (not dead-lettered) item seen was written or due, in epoch seconds. */
  oldestAt: number | null;
}

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
  /**
   * The item cannot be read (dead-lettered with `retryAt: null`): unlike a dead entry that
   * failed, it holds back no later entry of its target, as there is nothing to deliver in order.
   * @default {false}
   */
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
   * How many entries (the lowest seqs, the earliest timers) one read returns at most: a
   * positive integer, or `Infinity` for all of them. Memory grows with `limit`, not with
   * the backlog.
   * @default {1000}
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
  /**
   * When the oldest pending item counted was committed (timers: due), epoch seconds; `null`
   * when none (or no row says). Relay lag is now minus this.
   */
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
}

/**
 * What `loadForEvent` returns.
 *
 * @example Skipping what was handled
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const { execution, processed } = await store.loadForEvent("exe-1", "event-1");
 * if (!execution) console.log("no such execution");
 * else if (processed) console.log("already handled");
 * ```
 */
export interface LoadForEventResult {
  /** The execution, or `null` when there is none. */
  execution: Execution | null;
  /** Whether the event was already handled (a live dedupe mark exists). */
  processed: boolean;
}

/**
 * What `deleteExecution` removed: the execution item and how many of its timers, trace steps and
 * dedupe marks. Its outbox entries and spawn intents stay (they belong to the relay).
 *
 * @example Reporting a deletion
 * ```ts
 * import type { DeleteExecutionResult, ExecutionStore } from "@harel/dynamodb";
 *
 * async function purge(store: ExecutionStore, id: string): Promise<string> {
 *   const removed: DeleteExecutionResult = await store.deleteExecution(id);
 *   return `${removed.execution ? "execution" : "no execution"}, ${removed.timers} timers, ` +
 *     `${removed.trace} trace steps, ${removed.processed} dedupe marks`;
 * }
 * ```
 */
export interface DeleteExecutionResult {
  /** Whether a live execution was removed (`false`: there was none, or only an expired one). */
  execution: boolean;
  /** How many of its timers were removed. */
  timers: number;
  /** How many of its trace steps were removed. */
  trace: number;
  /** How many of its dedupe marks were removed (expired ones included). */
  processed: number;
}

/**
 * The execution store's contract: what `DynamoDBStore` and the memory twin
 * (`MemoryStore` from `@harel/dynamodb/testing`) both implement, with the same semantics.
 * Over a network an answer can be lost: where the store cannot tell what its own write did,
 * it throws an `OutcomeUnknown` instead of answering (the memory twin never needs to).
 *
 * @example Code that works on either backend
 * ```ts
 * import type { ExecutionStore } from "@harel/dynamodb";
 *
 * async function relay(store: ExecutionStore, deliver: (kind: string) => void): Promise<void> {
 *   const entries = await store.pendingOutbox();
 *   for (const entry of entries) deliver(entry.event.kind);
 *   await store.ackOutbox(entries.map((entry) => entry.seq));
 * }
 * ```
 */
export interface ExecutionStore extends AsyncDisposable {
  /** The ring size of each execution's trace; 0 = keep every step. */
  readonly traceMax: number;
  /** The execution with this id, or `null`. */
  load(id: string): Promise<Execution | null>;
  /** The execution and whether `eventId` was already handled. */
  loadForEvent(id: string, eventId: string): Promise<LoadForEventResult>;
  /** Whether `eventId` was already handled by execution `id`. */
  isProcessed(id: string, eventId: string): Promise<boolean>;
  /** `commit(exe)`. */
  save(exe: Execution): Promise<void>;
  /** Writes the execution and what it caused, all or nothing, if its version still matches. */
  commit(exe: Execution, changes?: CommitChanges): Promise<CommitResult>;
  /** One page of execution summaries. */
  listExecutions(options?: ListOptions): Promise<ListPage>;
  /** The `limit` lowest-seq outbox entries not yet acknowledged, by seq. */
  pendingOutbox(options?: ReadLimitOptions): Promise<OutboxEntry[]>;
  /** Removes delivered outbox entries. */
  ackOutbox(seq: number | number[]): Promise<void>;
  /** The `limit` lowest-seq spawn intents not yet acknowledged, by seq. */
  pendingSpawns(options?: ReadLimitOptions): Promise<PendingSpawn[]>;
  /** Removes started spawn intents. */
  ackSpawn(seq: number | number[]): Promise<void>;
  /** The `limit` earliest timers due at `now` (epoch seconds), earliest first. */
  dueTimers(now: number, options?: ReadLimitOptions): Promise<Timer[]>;
  /** Deletes a timer if it still fires at `fireAt`. */
  deleteTimer(executionId: string, path: string, fireAt: number): Promise<boolean>;
  /** What a relay pass reads of a queue: items deliverable now, unreadable rows, lag. */
  relayBatch<K extends RelayKind>(kind: K, options?: RelayBatchOptions): Promise<RelayItems<K>>;
  /** Records a failed delivery on an item: `false` when it is gone (or re-scheduled). */
  recordFailure<K extends RelayKind>(
    kind: K,
    key: RelayKey<K>,
    failure: RelayFailure,
  ): Promise<boolean>;
  /** The `limit` lowest dead-lettered items of a queue (outbox: optionally of one target). */
  deadLetters<K extends RelayKind>(kind: K, options?: DeadLetterOptions): Promise<DeadLetter<K>[]>;
  /** Makes a dead-lettered item due again: `false` when it is gone. */
  retryDeadLetter<K extends RelayKind>(kind: K, key: RelayKey<K>): Promise<boolean>;
  /** Removes a dead-lettered item: `false` when it is pending, not dead-lettered. */
  dropDeadLetter<K extends RelayKind>(kind: K, key: RelayKey<K>): Promise<boolean>;
  /** Retries every dead letter of a queue (or of one target): how many it retried. */
  retryDeadLetters(kind: RelayKind, options?: BulkDeadLetterOptions): Promise<number>;
  /** Drops every dead letter of a queue (or of one target): how many it dropped. */
  dropDeadLetters(kind: RelayKind, options?: BulkDeadLetterOptions): Promise<number>;
  /** A queue's backlog: pending, waiting, dead and held counts (capped), and the oldest pending. */
  backlog(kind: RelayKind, options?: BacklogOptions): Promise<Backlog>;
  /** The execution's trace, oldest first, each step with its `index`. */
  readTrace(id: string): Promise<Record<string, unknown>[]>;
  /** Appends one trace step outside a commit. */
  appendTrace(id: string, entry: Record<string, unknown>): Promise<void>;
  /**
   * Removes the execution with its timers, trace steps and dedupe marks (not its outbox
   * entries and spawns); idempotent. A commit that lands meanwhile is removed too.
   */
  deleteExecution(id: string): Promise<DeleteExecutionResult>;
  /** Deletes every execution a filter selects, as `deleteExecution`; resolves to how many. */
  deleteExecutions(options: DeleteExecutionsOptions): Promise<number>;
  /** The execution, when it was last committed and expires, and its timers; `null` if absent. */
  inspectExecution(id: string): Promise<ExecutionInspection | null>;
  /** Releases what the store holds. */
  close(): Promise<void>;
}

/**
 * Options of {@linkcode StateStore.set}.
 *
 * @example A key that lives five minutes
 * ```ts
 * import { DynamoDBStateStore, type SetOptions } from "@harel/dynamodb";
 *
 * const options: SetOptions = { ttl: 300 };
 * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * await state.set("otp:alice", "493021", options);
 * ```
 */
export interface SetOptions {
  /** Seconds until the key expires; absent = never. @default {undefined} */
  ttl?: number;
}

/**
 * The hash-state store's contract: what `DynamoDBStateStore` and the memory twin
 * (`MemoryStateStore` from `@harel/dynamodb/testing`) both implement. Over a network an
 * answer can be lost: where the store cannot tell what its own write did (an `hset` count, an
 * `hdel` count), it throws an `OutcomeUnknown` instead of answering (the memory twin never
 * needs to).
 *
 * @example Code that works on either backend
 * ```ts
 * import type { StateStore } from "@harel/dynamodb";
 *
 * async function nextStep(state: StateStore, session: string): Promise<number> {
 *   const step = Number(await state.hget(session, "step") ?? 0) + 1;
 *   await state.hset(session, "step", step);
 *   return step;
 * }
 * ```
 */
export interface StateStore extends AsyncDisposable {
  /** The value of `key`, or `null`; `T` names the stored type (not checked). */
  get<T = unknown>(key: string): Promise<T | null>;
  /** Stores a JSON value, replacing the whole item; `null` options mean none. */
  set(key: string, value: unknown, options?: SetOptions | null): Promise<void>;
  /** Removes `key`; `true` if a live key was removed. */
  delete(key: string): Promise<boolean>;
  /** Whether `key` exists and has not expired. */
  exists(key: string): Promise<boolean>;
  /** Live keys matching a glob. */
  keys(pattern?: string): Promise<string[]>;
  /** Whole seconds until `key` expires, or `null`. */
  ttl(key: string): Promise<number | null>;
  /** Sets `key` to expire in `seconds`; `false` when missing or expired. */
  expire(key: string, seconds: number): Promise<boolean>;
  /** A hash field's value, or `null`; `T` names the stored type (not checked). */
  hget<T = unknown>(key: string, field: string): Promise<T | null>;
  /** Sets a hash field: 1 if new, 0 if updated. */
  hset(key: string, field: string, value: unknown): Promise<number>;
  /** Every field of the hash (an object with no prototype), `{}` when missing or expired. */
  hgetall<T = unknown>(key: string): Promise<Record<string, T>>;
  /** Removes hash fields; the number that existed. */
  hdel(key: string, ...fields: string[]): Promise<number>;
  /** Releases what the store holds. */
  close(): Promise<void>;
}
