/**
 * The shapes both stores take and return, and the interfaces a backend implements.
 *
 * @module
 */
import type { Event, Execution, ExecutionSummary, Status } from "./documents.ts";
import type {
  DeleteExecutionsOptions,
  ExecutionInspection,
  InspectOptions,
  TimerReadOptions,
  TimerState,
  TraceReadOptions,
} from "./operator_types.ts";

/**
 * An event a commit puts in the outbox, in the same transaction, for the relay to deliver: to
 * the execution `target` names, in seq order per target, or (`null`) to the outside world.
 * See docs/execution_store.md.
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
  /** The execution the event is for, or `null` (the outside world: your `deliver` routes it). */
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
  /** Only these statuses, latest to enter their status first (from the status index). @default {undefined} */
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
  /**
   * The most stored rows one call reads: past it, the page so far (maybe empty) comes with a
   * `nextCursor`, so a rare filter costs O(`maxExamined`). @default {Infinity}
   */
  maxExamined?: number;
  /** Stops the listing between its reads: it rejects with the signal's reason. @default {undefined} */
  signal?: AbortSignal;
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
  /** Items whose document cannot be read, with why (each counts toward `limit`); absent: none. */
  unreadable?: UnreadableExecutionRow[];
}

/**
 * An execution item a listing could not read as an execution: its key, and why.
 *
 * @example Reporting the rows a page could not read
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const page = await store.listExecutions({ limit: 20 });
 * for (const row of page.unreadable ?? []) console.error(`${row.id}: ${row.error}`);
 * ```
 */
export interface UnreadableExecutionRow {
  /** The item's key. */
  id: string;
  /** Why its document cannot be read, e.g. "its outcome is an object, not a string or null". */
  error: string;
}

export * from "./relay_types.ts";
export * from "./relay_queues.ts";
import type { OutboxQueue, RowQueue } from "./relay_queues.ts";
import type {
  Backlog,
  BacklogOptions,
  BulkDeadLetterOptions,
  DeadLetter,
  DeadLetterOptions,
  ExecutionOutbox,
  ExecutionOutboxOptions,
  OutboxEntry,
  PendingSpawn,
  ReadLimitOptions,
  RelayFailure,
  RelayKey,
  RelayKind,
  Timer,
} from "./relay_types.ts";

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
 * The execution store's contract: what `DynamoDBStore` and `MemoryStore` both implement, with
 * the same semantics. Where the store cannot tell what its own write did (a lost answer), it
 * throws an `OutcomeUnknown`.
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
  /** Whether the store finds other writers' rows (`DynamoDBStore`'s `otherWriters` option). */
  readonly otherWriters?: boolean;
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
  /** Removes delivered outbox entries (releasing a target whose failed entry is among them). */
  ackOutbox(seq: number | number[]): Promise<void>;
  /** The `limit` lowest-seq spawn intents not yet acknowledged, by seq. */
  pendingSpawns(options?: ReadLimitOptions): Promise<PendingSpawn[]>;
  /** Removes started spawn intents. */
  ackSpawn(seq: number | number[]): Promise<void>;
  /** The `limit` earliest timers due at `now` (epoch seconds), earliest first. */
  dueTimers(now: number, options?: ReadLimitOptions): Promise<Timer[]>;
  /** Deletes a timer if it still fires at `fireAt`. */
  deleteTimer(executionId: string, path: string, fireAt: number): Promise<boolean>;
  /** The outbox as the relay runners read and write it (docs/delivery.md). */
  readonly outboxQueue: OutboxQueue;
  /** The spawn intents as the relay runners read and write them. */
  readonly spawnQueue: RowQueue<"spawns">;
  /** The timers as the sweeper reads and writes them. */
  readonly timerQueue: RowQueue<"timers">;
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
  /** The execution's trace, oldest first, each step with its `index` (with `limit`: the newest). */
  readTrace(id: string, options?: TraceReadOptions): Promise<Record<string, unknown>[]>;
  /** The execution's timers by path, with their relay bookkeeping (with `limit`: the first). */
  readTimers(id: string, options?: TimerReadOptions): Promise<TimerState[]>;
  /** Appends one trace step outside a commit. */
  appendTrace(id: string, entry: Record<string, unknown>): Promise<void>;
  /**
   * Removes the execution with its timers, trace and dedupe marks (not its outbox); idempotent.
   * A commit that lands meanwhile is removed too.
   */
  deleteExecution(id: string): Promise<DeleteExecutionResult>;
  /** Deletes every execution a filter selects, as `deleteExecution`; resolves to how many. */
  deleteExecutions(options: DeleteExecutionsOptions): Promise<number>;
  /** The execution, when it was last committed and expires, and its timers; `null` if absent. */
  inspectExecution(id: string, options?: InspectOptions): Promise<ExecutionInspection | null>;
  /** The outbox entries execution `id` emitted, and those to it that failed or wait: O(`limit`). */
  executionOutbox(id: string, options?: ExecutionOutboxOptions): Promise<ExecutionOutbox>;
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
 * The hash-state store's contract: what `DynamoDBStateStore` and `MemoryStateStore` both
 * implement. Where the store cannot tell what its own write did (an `hset` or `hdel` count after
 * a lost answer), it throws an `OutcomeUnknown`.
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
  /** Sets each field of `fields` (with `ttl`, the key's expiry) at once: how many are new. */
  hset(key: string, fields: Record<string, unknown>, options?: SetOptions | null): Promise<number>;
  /** Every field of the hash (an object with no prototype), `{}` when missing or expired. */
  hgetall<T = unknown>(key: string): Promise<Record<string, T>>;
  /** Removes hash fields; the number that existed. */
  hdel(key: string, ...fields: string[]): Promise<number>;
  /** Releases what the store holds. */
  close(): Promise<void>;
}
