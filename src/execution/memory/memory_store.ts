/**
 * `MemoryStore`: the execution store's in-memory twin, for tests without DynamoDB.
 *
 * @module
 */
import { claimCommit, planCommit, planTraceEntry, type TxContext } from "../commit/_transaction.ts";
import { checkClock, checkFinishedTtl, secondsOf } from "../commit/_retention.ts";
import {
  checkExecutionStoreOptions,
  checkInteger,
  checkKey,
  checkTime,
  LIMITS,
} from "../../core/_validate.ts";
import { checkOptionsOf } from "../../core/_option_names.ts";
import { planBulkDelete, planListing } from "../listing/_listing.ts";
import { byFireAt } from "../../core/_bounded.ts";
import { memoryPage } from "./_memory_listing.ts";
import { type Execution, type ExecutionSummary, summarize } from "../../core/documents.ts";
import type { DeleteExecutionsOptions, ExecutionInspection } from "../../core/operator_types.ts";
import type * as O from "../../core/operator_types.ts";
import { planInspect, planTimerRead, planTraceRead } from "../listing/_part_reads.ts";
import { timersOf, tracePage } from "./_memory_parts.ts";
import { StoreClosed, StoreConflict } from "../../core/errors.ts";
import { executionTables } from "../../core/table_specs.ts";
import type {
  Backlog,
  BacklogOptions,
  BulkDeadLetterOptions,
  CommitChanges,
  CommitResult,
  DeadLetter,
  DeadLetterOptions,
  DeleteExecutionResult,
  ExecutionOutbox,
  ExecutionOutboxOptions,
  ExecutionStore,
  ListOptions,
  ListPage,
  LoadForEventResult,
  OutboxEntry,
  PendingSpawn,
  ReadLimitOptions,
  RelayFailure,
  RelayKey,
  RelayKind,
  Timer,
} from "../../core/types.ts";
import {
  checkBacklogLimit,
  checkBulkOptions,
  checkExecutionOutbox,
  checkFailure,
  checkRelayKey,
  checkRelayKind,
  checkTargetFilter,
} from "../queue/_relay_checks.ts";
import { readLimit } from "../../core/_bounded.ts";
import { isLiveAt, markExpiry, ringDrop } from "../../core/_relay_rules.ts";
import { keyOf, MemoryQueues } from "./_memory_queues.ts";
import {
  acknowledgeSeqs,
  pendingEntries,
  recordFailure,
  release,
} from "../../core/_outbox_pipeline.ts";
import { decideDue } from "../../core/_relay_rules.ts";
import type { OutboxQueue, RowQueue } from "../../core/relay_queues.ts";

/**
 * Options of {@linkcode MemoryStore}.
 *
 * @example A store whose dedupe marks expire on a fake clock
 * ```ts
 * import assert from "node:assert/strict";
 * import { newExecution } from "@harel/dynamodb";
 * import { MemoryStore } from "@harel/dynamodb/testing";
 *
 * let now = Date.now();
 * const store = new MemoryStore({ traceMax: 5, processedTtlSeconds: 60, now: () => now });
 * const exe = newExecution({ definition_id: "order" });
 * await store.commit(exe, { processedEventId: "event-1" });
 * assert.equal(await store.isProcessed(exe.id, "event-1"), true);
 * now += 61_000; // the mark's minute is over: it reads as absent
 * assert.equal(await store.isProcessed(exe.id, "event-1"), false);
 * ```
 */
export interface MemoryStoreOptions {
  /** How many trace steps each execution keeps; 0 keeps every step. @default {200} */
  traceMax?: number;
  /** Lifetime of dedupe marks in seconds; `null` keeps them forever. @default {null} */
  processedTtlSeconds?: number | null;
  /** Retention of finished executions in seconds; `null` keeps them forever. @default {null} */
  finishedTtlSeconds?: number | null;
  /** The clock, in epoch milliseconds (for the expiry of dedupe marks and finished executions). @default {Date.now} */
  now?: () => number;
}

/**
 * An in-memory {@linkcode ExecutionStore} with DynamoDBStore's semantics and refusals.
 * Documents are stored as JSON, so what you load is never the object you saved.
 *
 * @example A unit test without DynamoDB
 * ```ts
 * import assert from "node:assert/strict";
 * import { newExecution } from "@harel/dynamodb";
 * import { MemoryStore } from "@harel/dynamodb/testing";
 *
 * await using store = new MemoryStore({ traceMax: 10 });
 * const exe = newExecution({ definition_id: "order" });
 * await store.commit(exe, { trace: { step: "created" } });
 * assert.equal(exe.version, 1);
 * assert.deepEqual(await store.readTrace(exe.id), [{ step: "created", index: 0 }]);
 * ```
 */
export class MemoryStore implements ExecutionStore {
  /** The ring size of each execution's trace; 0 = keep every step. */
  readonly traceMax: number;
  readonly #tx: TxContext;
  readonly #now: () => number;
  readonly #executions = new Map<string, string>(); // id → data JSON
  readonly #expiries = new Map<string, number>(); // id → ttl (epoch s) of a finished execution
  readonly #updated = new Map<string, number>(); // id → its last commit (epoch s), as updated_at
  readonly #since = new Map<string, number>(); // id → when it entered its status, as status_at
  readonly #queues: MemoryQueues;
  readonly #processed = new Map<string, number | null>(); // → expiry (epoch s) or null
  readonly #trace = new Map<string, Map<number, string>>();
  #seq = 0;
  #closed = false;

  /**
   * An empty store.
   *
   * @param options Trace ring size, dedupe-mark lifetime and clock.
   */
  constructor(options: MemoryStoreOptions = {}) {
    const {
      traceMax = 200,
      processedTtlSeconds = null,
      finishedTtlSeconds = null,
      now: given = Date.now,
    } = checkOptionsOf("new MemoryStore()", options);
    const now = checkClock(given);
    const { traceMax: checked, processedTtl } = checkExecutionStoreOptions(
      traceMax,
      processedTtlSeconds,
    );
    this.traceMax = checked;
    this.#tx = {
      tables: executionTables("harel"),
      traceMax: this.traceMax,
      processedTtl,
      finishedTtl: checkFinishedTtl(finishedTtlSeconds),
      now,
    };
    this.#now = now;
    this.#queues = new MemoryQueues(now, (method) => this.#open(method));
  }

  /** The execution with this id, or `null`. */
  load(id: string): Promise<Execution | null> {
    return Promise.try(() => {
      this.#open("load");
      checkKey("id", id, LIMITS.partitionKeyBytes);
      const data = this.#live(id);
      return data === undefined ? null : JSON.parse(data);
    });
  }

  /** The execution and whether `eventId` was already handled. */
  async loadForEvent(id: string, eventId: string): Promise<LoadForEventResult> {
    this.#open("loadForEvent");
    const processed = await this.isProcessed(id, eventId);
    return { execution: await this.load(id), processed };
  }

  /** Whether `eventId` was already handled by execution `id` (an expired mark is absent). */
  isProcessed(id: string, eventId: string): Promise<boolean> {
    return Promise.try(() => {
      this.#open("isProcessed");
      checkKey("id", id, LIMITS.partitionKeyBytes);
      checkKey("eventId", eventId, LIMITS.sortKeyBytes);
      const expiry = this.#processed.get(keyOf(id, eventId));
      return expiry !== undefined && isLiveAt(expiry, secondsOf(this.#now));
    });
  }

  /** `commit(exe)`. */
  async save(exe: Execution): Promise<void> {
    await this.commit(exe);
  }

  /**
   * Writes the execution and what it caused, all or nothing, if the stored version still
   * equals `exe.version`; {@linkcode StoreConflict} otherwise.
   */
  async commit(exe: Execution, changes: CommitChanges = {}): Promise<CommitResult> {
    this.#open("commit");
    const release = claimCommit(exe);
    try {
      const plan = planCommit(this.#tx, exe, changes);
      // A turn later, as on DynamoDB: an un-awaited second commit() of the object is refused.
      await Promise.resolve();
      this.#open("commit");
      const stored = this.#live(plan.id, plan.now);
      const found = stored === undefined ? null : (JSON.parse(stored) as Execution).version;
      if (plan.expected === 0 ? found !== null : found !== plan.expected) {
        throw new StoreConflict(plan.id, plan.expected, found);
      }
      // Everything below is synchronous: no other call can see half of it.
      if (stored === undefined || (JSON.parse(stored) as Execution).status !== plan.status) {
        this.#since.set(plan.id, plan.now);
      }
      this.#executions.set(plan.id, plan.data);
      this.#updated.set(plan.id, plan.now);
      if (plan.expiresAt === null) this.#expiries.delete(plan.id);
      else this.#expiries.set(plan.id, plan.expiresAt);
      const outbox = plan.emits.map(() => ++this.#seq);
      this.#queues.emit(plan.id, plan.expected === 0, plan.emits, outbox);
      const spawns = plan.spawns.map((spawn) => {
        const seq = ++this.#seq;
        this.#queues.spawns.set(seq, { parentId: plan.id, ...spawn, ...this.#queues.fresh() });
        return seq;
      });
      if (plan.processedEventId !== undefined) {
        this.#processed.set(
          keyOf(plan.id, plan.processedEventId),
          markExpiry(this.#tx.processedTtl, plan.now),
        );
      }
      for (const [path, fireAt] of plan.timers) {
        if (fireAt === null) this.#queues.timers.delete(keyOf(plan.id, path));
        else this.#queues.timers.set(keyOf(plan.id, path), { executionId: plan.id, path, fireAt });
      }
      if (plan.trace !== undefined) this.#append(plan.id, plan.trace);
      exe.version = plan.next;
      return { version: plan.next, outbox, spawns };
    } finally {
      release();
    }
  }

  /** Refuses a call on a closed store before anything else, input checks included. */
  #open(method: string): void {
    if (this.#closed) throw new StoreClosed("MemoryStore", method);
  }

  /** The execution's JSON unless it is absent or past its ttl (as DynamoDBStore reads it). */
  #live(id: string, now: number = secondsOf(this.#now)): string | undefined {
    const expiry = this.#expiries.get(id);
    return expiry !== undefined && expiry <= now ? undefined : this.#executions.get(id);
  }

  /**
   * Removes the execution with its timers, trace steps and dedupe marks, and says what it
   * removed; outbox entries and spawn intents stay. Idempotent.
   */
  deleteExecution(id: string): Promise<DeleteExecutionResult> {
    return Promise.try(() => {
      this.#open("deleteExecution");
      checkKey("id", id, LIMITS.partitionKeyBytes);
      const execution = this.#live(id) !== undefined;
      this.#executions.delete(id);
      this.#expiries.delete(id);
      this.#updated.delete(id);
      this.#since.delete(id);
      this.#queues.forget(id);
      const removeUnder = (table: Map<string, unknown>) => {
        let removed = 0;
        for (const key of table.keys()) {
          if (key.startsWith(`${id}\u0000`)) removed += Number(table.delete(key));
        }
        return removed;
      };
      const trace = this.#trace.get(id)?.size ?? 0;
      this.#trace.delete(id);
      return {
        execution,
        timers: removeUnder(this.#queues.timers),
        trace,
        processed: removeUnder(this.#processed),
      };
    });
  }

  /** The seed's append: at `index`, else the highest index (or -1) plus 1; trims our window. */
  #append(id: string, entry: string, index?: number): void {
    const ring = this.#trace.get(id) ?? new Map<number, string>();
    this.#trace.set(id, ring);
    const at = index ?? Math.max(-1, ...ring.keys()) + 1;
    ring.set(at, entry);
    ring.delete(ringDrop(at, this.traceMax)); // the same window as DynamoDBStore's
  }

  /** One page of executions: with `status`, latest to enter it first; else in id order. */
  listExecutions(options: ListOptions = {}): Promise<ListPage> {
    return Promise.try(() => {
      this.#open("listExecutions");
      const table = this.#tx.tables.executions.name;
      return memoryPage(this.#summaries(), planListing(options, table), table, this.#since);
    });
  }

  /** Every live execution's summary, with its last commit time. */
  #summaries(): ExecutionSummary[] {
    const now = secondsOf(this.#now);
    return [...this.#executions.keys()].flatMap((id) => {
      const data = this.#live(id, now); // an expired execution is skipped, as a filtered one
      return data === undefined ? [] : [summarize(JSON.parse(data), this.#updated.get(id))];
    });
  }

  /** Deletes every execution the options select: see {@linkcode DynamoDBStore.deleteExecutions}. */
  async deleteExecutions(options: DeleteExecutionsOptions): Promise<number> {
    this.#open("deleteExecutions");
    const selection = planBulkDelete(options);
    const started = performance.now();
    const chosen = this.#summaries().filter((summary) => selection.matches(summary));
    let deleted = 0, examined = 0;
    for (let i = 0; i === 0 || i < chosen.length; i += 25) {
      if (selection.signal?.aborted) break;
      for (const { id } of chosen.slice(i, i + 25)) {
        if ((await this.deleteExecution(id)).execution) deleted++;
        examined++;
      }
      selection.onProgress?.({ deleted, examined, elapsedMs: performance.now() - started });
    }
    return deleted;
  }

  /** The execution, its commit and expiry times, and timers (the first `timerLimit` by path). */
  inspectExecution(id: string, options?: O.InspectOptions): Promise<ExecutionInspection | null> {
    return Promise.try(() => {
      this.#open("inspectExecution");
      checkKey("id", id, LIMITS.partitionKeyBytes);
      const limit = planInspect(options);
      const data = this.#live(id);
      if (data === undefined) return null;
      return {
        execution: JSON.parse(data),
        updatedAt: this.#updated.get(id) ?? null,
        expiresAt: this.#expiries.get(id) ?? null,
        timers: timersOf(this.#queues.timers.values(), id, limit, null).sort(byFireAt),
      };
    });
  }

  /** Its outbox entries: see {@linkcode DynamoDBStore.executionOutbox}. */
  executionOutbox(id: string, options?: ExecutionOutboxOptions): Promise<ExecutionOutbox> {
    return Promise.try(() => {
      this.#open("executionOutbox");
      const limit = checkExecutionOutbox(id, options);
      return this.#queues.outbox.executionOutbox(id, limit, this.#executions.has(id));
    });
  }

  /** The execution's timers by path: the first `limit` (after `after`), as DynamoDBStore's. */
  readTimers(id: string, options?: O.TimerReadOptions): Promise<O.TimerState[]> {
    return Promise.try(() => {
      this.#open("readTimers");
      checkKey("id", id, LIMITS.partitionKeyBytes);
      const { limit, after } = planTimerRead(options);
      return timersOf(this.#queues.timers.values(), id, limit, after);
    });
  }

  /** The `limit` lowest-seq outbox entries deliverable now, by seq. */
  pendingOutbox(options?: ReadLimitOptions): Promise<OutboxEntry[]> {
    return Promise.try(() => {
      this.#open("pendingOutbox");
      const limit = readLimit(options, "pendingOutbox()");
      return pendingEntries(this.#queues.outbox, limit);
    });
  }

  /** Removes delivered outbox entries. */
  ackOutbox(seq: number | number[]): Promise<void> {
    return this.#ack((seqs) => acknowledgeSeqs(this.#queues.outbox, seqs), seq, "ackOutbox");
  }

  /** The `limit` lowest-seq spawn intents not yet acknowledged, by seq. */
  pendingSpawns(options?: ReadLimitOptions): Promise<PendingSpawn[]> {
    return Promise.try(async () => {
      this.#open("pendingSpawns");
      const limit = readLimit(options, "pendingSpawns()");
      const now = secondsOf(this.#now);
      const rows = await this.#queues.spawnQueue.due(now, limit);
      return decideDue(rows, now, limit).items.map(({ item }) => item);
    });
  }

  /** Removes started spawn intents. */
  ackSpawn(seq: number | number[]): Promise<void> {
    return this.#ack((seqs) => seqs.forEach((s) => this.#queues.spawns.delete(s)), seq, "ackSpawn");
  }

  #ack(
    ack: (seqs: number[]) => void | Promise<void>,
    seq: number | number[],
    method: string,
  ): Promise<void> {
    return Promise.try(async () => {
      this.#open(method);
      const seqs = Array.isArray(seq) ? seq : [seq];
      seqs.forEach((s, i) =>
        checkInteger(Array.isArray(seq) ? `seq[${i}]` : "seq", s, 0, Number.MAX_SAFE_INTEGER)
      );
      await ack(seqs);
    });
  }

  /** The `limit` earliest timers due at `now` (epoch seconds), earliest first. */
  dueTimers(now: number, options?: ReadLimitOptions): Promise<Timer[]> {
    return Promise.try(async () => {
      this.#open("dueTimers");
      checkTime("now", now);
      const limit = readLimit(options, "dueTimers()");
      const rows = await this.#queues.timerQueue.due(now, limit);
      return decideDue(rows, now, limit).items.map(({ item }) => item);
    });
  }

  /** Deletes a timer if it still fires at `fireAt`; `false` when a re-schedule won. */
  deleteTimer(executionId: string, path: string, fireAt: number): Promise<boolean> {
    return Promise.try(() => {
      this.#open("deleteTimer");
      checkKey("executionId", executionId, LIMITS.partitionKeyBytes);
      checkKey("path", path, LIMITS.sortKeyBytes);
      checkTime("fireAt", fireAt);
      const key = keyOf(executionId, path);
      if (this.#queues.timers.get(key)?.fireAt !== fireAt) return (false);
      this.#queues.timers.delete(key);
      return (true);
    });
  }

  /** The execution's trace, oldest first, each step with its `index` (`limit`: the newest). */
  readTrace(id: string, options?: O.TraceReadOptions): Promise<Record<string, unknown>[]> {
    return Promise.try(() => {
      this.#open("readTrace");
      checkKey("id", id, LIMITS.partitionKeyBytes);
      const { limit, before } = planTraceRead(options);
      return tracePage(this.#trace.get(id) ?? new Map<number, string>(), limit, before);
    });
  }

  /** Appends one trace step outside a commit, after the highest index (or at `entry.index`). */
  appendTrace(id: string, entry: Record<string, unknown>): Promise<void> {
    return Promise.try(() => {
      this.#open("appendTrace");
      const { index, json } = planTraceEntry(id, entry);
      this.#append(id, json, index);
      return;
    });
  }

  /** The outbox as the relay reads and writes it: see {@linkcode ExecutionStore.outboxQueue}. */
  get outboxQueue(): OutboxQueue {
    return this.#queues.outbox;
  }

  /** The spawn intents as the relay reads and writes them. */
  get spawnQueue(): RowQueue<"spawns"> {
    return this.#queues.spawnQueue;
  }

  /** The timers as the relay reads and writes them. */
  get timerQueue(): RowQueue<"timers"> {
    return this.#queues.timerQueue;
  }

  /** Records a failed delivery: see {@linkcode DynamoDBStore.recordFailure}. */
  recordFailure<K extends RelayKind>(
    kind: K,
    key: RelayKey<K>,
    failure: RelayFailure,
  ): Promise<boolean> {
    return Promise.try(() => {
      this.#open("recordFailure");
      checkRelayKey(kind, key);
      checkFailure(failure);
      return recordFailure(this, kind, key, failure);
    });
  }

  /** The `limit` lowest dead letters of a queue: see {@linkcode DynamoDBStore.deadLetters}. */
  deadLetters<K extends RelayKind>(kind: K, options?: DeadLetterOptions): Promise<DeadLetter<K>[]> {
    return Promise.try(() => {
      this.#open("deadLetters");
      checkRelayKind(kind);
      const target = checkTargetFilter(kind, options);
      return this.#queues.deadLetters(kind, readLimit(options, "deadLetters()"), target);
    });
  }

  /** Retries every dead letter of a queue: see {@linkcode DynamoDBStore.retryDeadLetters}. */
  retryDeadLetters(kind: RelayKind, options: BulkDeadLetterOptions = {}): Promise<number> {
    return this.#onDeadLetters("retryDeadLetters", kind, options);
  }

  /** Drops every dead letter of a queue: see {@linkcode DynamoDBStore.dropDeadLetters}. */
  dropDeadLetters(kind: RelayKind, options: BulkDeadLetterOptions = {}): Promise<number> {
    return this.#onDeadLetters("dropDeadLetters", kind, options);
  }

  #onDeadLetters(
    method: "retryDeadLetters" | "dropDeadLetters",
    kind: RelayKind,
    options: BulkDeadLetterOptions,
  ): Promise<number> {
    return Promise.try(async () => {
      this.#open(method);
      checkBulkOptions(kind, options, `${method}()`);
      const letters = this.#queues.deadLetters(kind, Infinity, options.targetId);
      let done = 0;
      for (const letter of letters) {
        options.signal?.throwIfAborted();
        if (!await this.#onDeadLetter(kind, letter.key, method === "retryDeadLetters")) continue;
        done++; // counted whether or not anyone listens
        options.onProgress?.(done);
      }
      return done;
    });
  }

  /** A queue's backlog: see {@linkcode DynamoDBStore.backlog}. */
  backlog(kind: RelayKind, options: BacklogOptions = {}): Promise<Backlog> {
    return Promise.try(() => {
      this.#open("backlog");
      checkRelayKind(kind);
      const limit = checkBacklogLimit(options);
      options?.signal?.throwIfAborted();
      return this.#queues.backlog(kind, limit, secondsOf(this.#now));
    });
  }

  /** Makes a dead letter due again: see {@linkcode DynamoDBStore.retryDeadLetter}. */
  retryDeadLetter<K extends RelayKind>(kind: K, key: RelayKey<K>): Promise<boolean> {
    return Promise.try(() => {
      this.#open("retryDeadLetter");
      checkRelayKey(kind, key);
      return this.#onDeadLetter(kind, key, true);
    });
  }

  /** Removes a dead letter: see {@linkcode DynamoDBStore.dropDeadLetter}. */
  dropDeadLetter<K extends RelayKind>(kind: K, key: RelayKey<K>): Promise<boolean> {
    return Promise.try(() => {
      this.#open("dropDeadLetter");
      checkRelayKey(kind, key);
      return this.#onDeadLetter(kind, key, false);
    });
  }

  /** Retries or drops a dead letter; an outbox entry's target is released. */
  async #onDeadLetter<K extends RelayKind>(kind: K, key: RelayKey<K>, retry: boolean) {
    const done = this.#queues.onDeadLetter(kind, key, retry);
    if (typeof done === "string") await release(this.#queues.outbox, [done]);
    return done !== false;
  }

  /** Ends the store: every later call is refused with {@linkcode StoreClosed}. Idempotent. */
  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }

  /** Same as {@linkcode MemoryStore.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
