/**
 * `DynamoDBStore`: the harel engine's durable execution store.
 *
 * @module
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { catchUp, ensureStoreTables, openStore, storeContext } from "./_store_context.ts";
import type { StoreContext } from "./_store_context.ts";
import { checkKey, checkTime, describe, LIMITS } from "../core/_validate.ts";
import { checkCatchUpOptions, planBulkDelete, planListing } from "./listing/_listing.ts";
import { indexPage } from "./listing/_status_listing.ts";
import { deleteSelected } from "./listing/_bulk_delete.ts";
import { inspect, readTimers } from "./listing/_inspect.ts";
import { readTraceSteps } from "./listing/_trace_pages.ts";
import { executionOutbox } from "./queue/_execution_outbox.ts";
import type * as O from "../core/operator_types.ts";
import type { Execution } from "../core/documents.ts";
import type { EnsureTablesOptions, ExecutionTables } from "../dynamo/tables.ts";
import { instrument } from "../core/_telemetry.ts";
import * as letters from "./queue/_dead_letters.ts";
import * as checks from "./queue/_relay_checks.ts";
import { runCommit } from "./commit/_commit_loop.ts";
import * as reads from "./listing/_execution_reads.ts";
import { checkSeqs, deleteSeqs } from "./queue/_seq_deletes.ts";
import { claimTimer, dueByScan } from "./queue/_timers.ts";
import { acknowledgeSeqs, pendingEntries, recordFailure } from "../core/_outbox_pipeline.ts";
import { decideDue } from "../core/_relay_rules.ts";
import { backlog, onDeadLetters } from "./queue/_bulk_and_backlog.ts";
import { adoptTable } from "./queue/_adoption.ts";
import { claimCommit, planTraceEntry } from "./commit/_transaction.ts";
import { removeExecution } from "./listing/_delete_execution.ts";
import type * as T from "../core/types.ts";
import { readLimit } from "../core/_bounded.ts";
import type { TableDifference } from "../dynamo/table_check.ts";
import { checkStoreTables } from "./_store_context.ts";
import type {
  CreateStoreOptions,
  DueTimersOptions,
  DynamoDBStoreOptions,
} from "./execution_store_options.ts";

export type { CreateStoreOptions, DueTimersOptions, DynamoDBStoreOptions };

/**
 * The durable execution store: executions with optimistic concurrency, their outbox, spawn
 * intents, dedupe marks, timers and trace, in seven DynamoDB tables shared with the Python
 * engine. Every commit is one `TransactWriteItems`: all of it or none of it.
 *
 * @example Load, commit, relay
 * ```ts
 * import { DynamoDBStore, newEvent, newExecution } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const exe = newExecution({ definition_id: "order" });
 * await store.commit(exe, { emits: [{ target: null, event: newEvent("order.created") }] });
 * for (const entry of await store.pendingOutbox()) {
 *   // deliver entry.event to entry.targetId, then:
 *   await store.ackOutbox(entry.seq);
 * }
 * ```
 */
export class DynamoDBStore implements T.ExecutionStore {
  /** The ring size of each execution's trace; 0 = keep every step. */
  readonly traceMax: number;
  /** The seven tables this store uses. */
  readonly tables: ExecutionTables;
  /** Whether it was built with `otherWriters: true`: it finds other writers' rows. */
  readonly otherWriters: boolean;
  readonly #ctx: StoreContext;

  /**
   * A store on an existing client (anything with `send()`, still the caller's to destroy). Sends
   * nothing: call `ensureTables()` once, or use {@linkcode DynamoDBStore.create}.
   */
  constructor(client: Pick<DynamoDBClient, "send">, options: DynamoDBStoreOptions = {}) {
    this.#ctx = storeContext(client, options, (id) => this.load(id));
    this.tables = this.#ctx.tables;
    this.otherWriters = this.#ctx.otherWriters !== undefined;
    this.traceMax = this.#ctx.traceMax;
  }

  /**
   * Builds a client for `endpoint` (none: AWS), waits until DynamoDB answers, and ensures the
   * tables (`ensureTables: false`: checks they exist). `close()` destroys that client.
   *
   * @example Against DynamoDB Local
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * const endpoint = Deno.env.get("DYNAMODB_ENDPOINT");
   * await using store = await DynamoDBStore.create({ endpoint, prefix: "demo", deadlineMs: 10_000 });
   * ```
   * @param options Where DynamoDB is, how long to wait for it, and the store's options.
   * @returns A store whose tables exist.
   * @throws {TypeError} For options of the wrong type (`RangeError`: out of range), before sending.
   * @throws {MissingSetup} Without an endpoint, when no AWS region or credentials are found.
   * @throws {EndpointUnreachable} When DynamoDB did not answer within `deadlineMs` (see `onRetry`).
   * @throws {EndpointNotDynamoDB} When something else answered at the endpoint (an HTML page).
   * @throws {TableNotFound} With `ensureTables: false`, when the executions table is missing.
   * @throws {TableNotReady} When DynamoDB refused a table change for good, or 10 minutes passed.
   * @throws {TableDrift} With `checkTables: true`, when the tables differ from their definitions
   *   (with `otherWriters: true` and `ensureTables: false`: a stream it reads).
   */
  static create(options: CreateStoreOptions = {}): Promise<DynamoDBStore> {
    return openStore(options, (client, store) => new DynamoDBStore(client, store));
  }

  /**
   * Makes the seven tables what `tableDefinitions()` says (missing tables, indexes, TTL and, with
   * `otherWriters: true`, streams). Idempotent: after a failure, running it again goes on.
   * @example Creating the tables at deploy time, then checking them
   * ```ts
   * import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
   * import { DynamoDBStore } from "@harel/dynamodb";
   * const store = new DynamoDBStore(new DynamoDBClient({}), { prefix: "prod" });
   * await store.ensureTables({ onProgress: (p) => console.error(p.table, p.step) });
   * console.log(await store.checkTables()); // []
   * ```
   * @param options The deadline (10 minutes by default), and where progress goes.
   * @throws {TableNotReady} When DynamoDB refused a change for good, or the deadline passed.
   * @throws {Error} The SDK's error when a table cannot be created or described (IAM, ...).
   */
  async ensureTables(options?: EnsureTablesOptions): Promise<void> {
    this.#open("ensureTables");
    await ensureStoreTables(this.#ctx, options);
  }

  /** Every difference of the tables from their definitions, with its fix; `[]`: none. */
  async checkTables(): Promise<TableDifference[]> {
    this.#open("checkTables");
    return await checkStoreTables(this.#ctx);
  }

  /** The execution with this id, or `null`. */
  async load(id: string): Promise<Execution | null> {
    this.#open("load");
    checkKey("id", id, LIMITS.partitionKeyBytes);
    return await reads.readExecution(this.#ctx, id);
  }

  /** The execution and whether `eventId` was already handled, in one call. */
  async loadForEvent(id: string, eventId: string): Promise<T.LoadForEventResult> {
    this.#open("loadForEvent");
    checkKey("id", id, LIMITS.partitionKeyBytes);
    checkKey("eventId", eventId, LIMITS.sortKeyBytes);
    return await reads.readForEvent(this.#ctx, id, eventId);
  }

  /** Whether `eventId` was already handled by execution `id`. */
  async isProcessed(id: string, eventId: string): Promise<boolean> {
    this.#open("isProcessed");
    checkKey("id", id, LIMITS.partitionKeyBytes);
    checkKey("eventId", eventId, LIMITS.sortKeyBytes);
    return await reads.readProcessed(this.#ctx, id, eventId);
  }

  /** Saves the execution alone: `commit(exe)`, with its errors. */
  async save(exe: Execution): Promise<void> {
    await this.commit(exe);
  }

  /**
   * Writes the execution and everything it caused in one transaction, all or nothing, if the
   * stored version still equals `exe.version` (0 = insert); on success `exe.version` is bumped
   * in place. Input DynamoDB would reject, or JSON would silently change, is refused before
   * anything is sent, and so is a second commit of an object whose first has not settled.
   *
   * @example Handling an event
   * ```ts
   * import { DynamoDBStore, newEvent, newExecution, StoreConflict } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * const exe = newExecution({ definition_id: "order", status: "RUNNING" });
   * const paid = newEvent("order.paid");
   * try {
   *   const { version, outbox } = await store.commit(exe, {
   *     processedEventId: paid.id,
   *     emits: [{ target: null, event: newEvent("order.ship") }],
   *     timers: [{ action: "schedule", path: "order.waiting", fireAt: Date.now() / 1000 + 60 }],
   *     trace: { event: paid.kind },
   *   });
   *   console.log(version, outbox);
   * } catch (error) {
   *   if (!(error instanceof StoreConflict)) throw error;
   *   // someone else moved the execution on: reload and apply the event again
   * }
   * ```
   *
   * @param exe The execution at the version it was loaded at.
   * @param changes Outbox events, dedupe mark, timer changes, spawns and a trace step.
   * @returns The new version and the seqs of the outbox entries and spawns.
   *
   * @throws {StoreConflict} When the stored version is not `exe.version` (another writer won).
   * @throws {CommitOutcomeUnknown} When every send's answer was lost: reload to know.
   * @throws {CommitCancelled} When DynamoDB cancelled the transaction for another reason (each
   *   item's role and code), or transaction conflicts outlasted `conflictRetries`.
   * @throws {TypeError} For input DynamoDB would reject (a `RangeError` for a value out of its
   *   range: sizes, times, seqs), or a commit of an object whose commit has not settled.
   */
  async commit(exe: Execution, changes: T.CommitChanges = {}): Promise<T.CommitResult> {
    this.#open("commit");
    const release = claimCommit(exe);
    try {
      return await runCommit(this.#ctx, exe, changes);
    } finally {
      release();
    }
  }

  /**
   * Appends one trace step outside a commit, after the ring's highest index (or at `entry.index`),
   * dropping the step that leaves the `traceMax` window; a re-sent copy does not append twice.
   *
   * @throws {TypeError} For an id, entry or `entry.index` DynamoDB would reject (a `RangeError`
   *   for an index or size out of range), before anything is sent.
   * @throws {Error} The SDK's `TransactionCanceledException` when other appenders kept winning.
   * @throws {OutcomeUnknown} When no answer came back: the step may or may not be appended.
   */
  async appendTrace(id: string, entry: Record<string, unknown>): Promise<void> {
    this.#open("appendTrace");
    const { index, json } = planTraceEntry(id, entry);
    await this.#ctx.ring.append(id, index, json);
  }

  /** The execution's trace, oldest first, each step with its `index` (`limit`: the newest). */
  async readTrace(id: string, options?: O.TraceReadOptions): Promise<Record<string, unknown>[]> {
    this.#open("readTrace");
    return await readTraceSteps(this.#ctx, id, options);
  }

  /** The execution's timers by path, with their relay bookkeeping: O(`limit`), after `after`. */
  async readTimers(id: string, options?: O.TimerReadOptions): Promise<O.TimerState[]> {
    this.#open("readTimers");
    return await readTimers(this.#ctx, id, options);
  }

  /**
   * One page of executions: with `status`, latest to enter it first from the status index,
   * O(`limit`); else in scan order. A short page may have a `nextCursor`; `null` is the end.
   *
   * @throws {RangeError} For a bad `limit` or `updatedBefore` (a `TypeError` for a bad filter).
   * @throws {InvalidCursor} For a `cursor` of another listing (table or filters).
   * @throws {IndexNotFound} With `status`, when the table lacks the index: run `ensureTables()`.
   */
  async listExecutions(options: T.ListOptions = {}): Promise<T.ListPage> {
    this.#open("listExecutions");
    const listing = planListing(options, this.tables.executions.name);
    if (listing.indexed) {
      await (await this.#ctx.otherWriters)?.feed.maybe(this.#ctx, listing.signal);
    }
    return await (listing.indexed ? indexPage : reads.listPage)(this.#ctx, listing);
  }

  /**
   * With `otherWriters: true`, puts back into the status index the executions other writers
   * committed: one round of the table's stream (up to 1,000 records). Listings and passes run
   * one every 10 s; a default store sends nothing. See docs/operations.md.
   */
  async catchUpStatusIndex(options: { signal?: AbortSignal } = {}): Promise<O.StatusCatchUp> {
    this.#open("catchUpStatusIndex");
    return await catchUp(this.#ctx, checkCatchUpOptions(options));
  }

  /**
   * Deletes every execution in `status` last committed before `updatedBefore`, as
   * `deleteExecution` does: how many. O(matches), resumable (docs/retention.md).
   *
   * @throws {TypeError} Without `status` or `updatedBefore` (a `RangeError` for an open status
   *   without `allowOpen`, or milliseconds).
   * @throws {OutcomeUnknown} When a retirement's answers were all lost: run it again.
   */
  async deleteExecutions(options: O.DeleteExecutionsOptions): Promise<number> {
    this.#open("deleteExecutions");
    return await deleteSelected(this.#ctx, planBulkDelete(options), this.#ctx.resends);
  }

  /** The execution with its commit, expiry and timers (O(`timerLimit`)); `null` when absent. */
  async inspectExecution(
    id: string,
    options?: O.InspectOptions,
  ): Promise<O.ExecutionInspection | null> {
    this.#open("inspectExecution");
    checkKey("id", id, LIMITS.partitionKeyBytes);
    return await inspect(this.#ctx, id, options);
  }

  /** Its outbox entries, found by key: see {@linkcode T.ExecutionStore.executionOutbox}. */
  async executionOutbox(
    id: string,
    options?: T.ExecutionOutboxOptions,
  ): Promise<T.ExecutionOutbox> {
    this.#open("executionOutbox");
    return await executionOutbox(this.#ctx, id, checks.checkExecutionOutbox(id, options));
  }

  /**
   * The `limit` lowest-seq outbox entries deliverable now: not waiting, dead, unreadable, nor
   * behind such an entry of their target (docs/delivery.md). Memory grows with `limit` only.
   *
   * @throws {RangeError} For a `limit` that is not a positive integer or `Infinity`.
   */
  async pendingOutbox(options?: T.ReadLimitOptions): Promise<T.OutboxEntry[]> {
    this.#open("pendingOutbox");
    const limit = readLimit(options, "pendingOutbox()");
    return await pendingEntries(this.#ctx.outbox, limit);
  }

  /** Removes delivered outbox entries (one seq or many; unknown seqs are fine). */
  async ackOutbox(seq: number | number[]): Promise<void> {
    this.#open("ackOutbox");
    await acknowledgeSeqs(this.#ctx.outbox, checkSeqs(seq));
  }

  /** The outbox as the relay runners read and write it (docs/delivery.md). */
  get outboxQueue(): T.OutboxQueue {
    return this.#ctx.outbox;
  }

  /** The spawn intents as the relay runners read and write them. */
  get spawnQueue(): T.RowQueue<"spawns"> {
    return this.#ctx.spawns;
  }

  /** The timers as the sweeper reads and writes them. */
  get timerQueue(): T.RowQueue<"timers"> {
    return this.#ctx.timers;
  }

  /**
   * The `limit` lowest-seq spawn intents not yet acknowledged, waiting, dead or unreadable.
   * @throws {RangeError} For a `limit` that is not a positive integer or `Infinity`.
   */
  async pendingSpawns(options?: T.ReadLimitOptions): Promise<T.PendingSpawn[]> {
    this.#open("pendingSpawns");
    const limit = readLimit(options, "pendingSpawns()");
    const now = this.#ctx.now() / 1000;
    return decideDue(await this.#ctx.spawns.due(now, limit), now, limit).items.map((i) => i.item);
  }

  /** Removes started spawn intents (one seq or many). */
  async ackSpawn(seq: number | number[]): Promise<void> {
    this.#open("ackSpawn");
    await deleteSeqs(this.#ctx.client, this.tables.spawns.name, seq);
  }

  /**
   * The `limit` earliest timers due at `now` (epoch seconds), earliest first, but those waiting
   * for a retry or dead-lettered.
   *
   * @throws {RangeError} For a `now` that is not epoch seconds (e.g. milliseconds) or a `limit`
   *   that is not a positive integer or `Infinity`.
   */
  async dueTimers(now: number, options?: DueTimersOptions): Promise<T.Timer[]> {
    this.#open("dueTimers");
    checkTime("now", now);
    const limit = readLimit(options, "dueTimers()");
    if (options?.scan !== undefined && typeof options.scan !== "boolean") {
      throw new TypeError(`options.scan must be a boolean, got ${describe(options.scan)}`);
    }
    if (options?.scan) {
      return (await dueByScan(this.#ctx, now, limit)).map(({ attempts: _, ...timer }) => timer);
    }
    return decideDue(await this.#ctx.timers.due(now, limit), now, limit).items.map((i) => i.item);
  }

  /**
   * Deletes a timer only if it still fires at `fireAt`: `false` means it was re-scheduled or
   * cancelled, and must not fire. Exact after a lost answer (2 write units).
   *
   * @throws {RangeError} For a `fireAt` that is not epoch seconds (a `TypeError` for a key
   *   DynamoDB would reject), before anything is sent.
   * @throws {OutcomeUnknown} When no answer came back after `ambiguousRetries` re-sends: fire
   *   it if in doubt (the Timeout event's id makes a second delivery one effect).
   */
  async deleteTimer(executionId: string, path: string, fireAt: number): Promise<boolean> {
    this.#open("deleteTimer");
    checkKey("executionId", executionId, LIMITS.partitionKeyBytes);
    checkKey("path", path, LIMITS.sortKeyBytes);
    checkTime("fireAt", fireAt);
    return await claimTimer(this.#ctx, executionId, path, fireAt, this.#ctx.resends);
  }

  /**
   * Records a failed delivery on an outbox entry, spawn or timer (`retryAt: null`: dead-letters
   * it). `false` when the item is gone or, for a timer, re-scheduled.
   *
   * @throws {TypeError} For a key or failure of the wrong shape (a `RangeError` out of range).
   */
  async recordFailure<K extends T.RelayKind>(
    kind: K,
    key: T.RelayKey<K>,
    failure: T.RelayFailure,
  ): Promise<boolean> {
    this.#open("recordFailure");
    checks.checkRelayKey(kind, key);
    checks.checkFailure(failure);
    return await recordFailure(this, kind, key, failure);
  }

  /**
   * The `limit` lowest dead letters of a queue (timers: earliest first): items a relay gave up
   * on, kept until retried or dropped. See docs/delivery.md, "Dead letters".
   *
   * @throws {RangeError} For a `limit` that is not a positive integer or `Infinity`.
   */
  async deadLetters<K extends T.RelayKind>(
    kind: K,
    options?: T.DeadLetterOptions,
  ): Promise<T.DeadLetter<K>[]> {
    this.#open("deadLetters");
    checks.checkRelayKind(kind);
    const target = checks.checkTargetFilter(kind, options);
    return await letters.deadLetters(this.#ctx, kind, readLimit(options, "deadLetters()"), target);
  }

  /**
   * Makes a dead letter due again, its attempts forgotten: the next relay pass delivers it.
   * `false` when the item is gone.
   *
   * @throws {TypeError} For a key of the wrong shape.
   */
  async retryDeadLetter<K extends T.RelayKind>(kind: K, key: T.RelayKey<K>): Promise<boolean> {
    this.#open("retryDeadLetter");
    checks.checkRelayKey(kind, key);
    return await letters.retryDeadLetter(this.#ctx, kind, key);
  }

  /**
   * Deletes a dead letter: `true` once it is gone, `false` when the item is there but not
   * dead-lettered (a pending item is acknowledged, not dropped).
   *
   * @throws {TypeError} For a key of the wrong shape.
   */
  async dropDeadLetter<K extends T.RelayKind>(kind: K, key: T.RelayKey<K>): Promise<boolean> {
    this.#open("dropDeadLetter");
    checks.checkRelayKey(kind, key);
    return await letters.dropDeadLetter(this.#ctx, kind, key);
  }

  /**
   * Retries every dead letter of a queue (outbox: of one target with `targetId`), each as
   * `retryDeadLetter` does: how many. Run again after a crash or an abort, it goes on.
   *
   * @example Retrying an outage's dead letters
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * const retried = await store.retryDeadLetters("outbox", { onProgress: (n) => console.error(n) });
   * console.log(`${retried} retried`);
   * ```
   *
   * @throws {TypeError} For a kind or options of the wrong type (`targetId` is for the outbox).
   * @throws {OutcomeUnknown} When no answer came back for one of them: run it again.
   */
  async retryDeadLetters(
    kind: T.RelayKind,
    options: T.BulkDeadLetterOptions = {},
  ): Promise<number> {
    this.#open("retryDeadLetters");
    checks.checkBulkOptions(kind, options, "retryDeadLetters()");
    return await onDeadLetters(this.#ctx, kind, "retry", options);
  }

  /**
   * Drops every dead letter of a queue (outbox: of one target with `targetId`), each as
   * `dropDeadLetter` does: how many. Idempotent.
   *
   * @throws {TypeError} For a kind or options of the wrong type (`targetId` is for the outbox).
   * @throws {OutcomeUnknown} When no answer came back for one of them: run it again.
   */
  async dropDeadLetters(kind: T.RelayKind, options: T.BulkDeadLetterOptions = {}): Promise<number> {
    this.#open("dropDeadLetters");
    checks.checkBulkOptions(kind, options, "dropDeadLetters()");
    return await onDeadLetters(this.#ctx, kind, "drop", options);
  }

  /**
   * A queue's backlog for a dashboard or an alarm (relay lag included). Each count reads at most
   * `limit` rows, each checked by key (about a read unit a counted row).
   *
   * @throws {RangeError} For a `limit` outside 1 to 10,000.
   */
  async backlog(kind: T.RelayKind, options: T.BacklogOptions = {}): Promise<T.Backlog> {
    this.#open("backlog");
    checks.checkRelayKind(kind);
    const limit = checks.checkBacklogLimit(options);
    return await backlog(this.#ctx, kind, limit, this.#ctx.now() / 1000, options?.signal);
  }

  /**
   * Adopts into the relay index every row of a relay table written without its attributes (the
   * Python store's): one scan; how many. Passes of an `otherWriters: true` store do it as they go.
   *
   * @throws {OutcomeUnknown} When no answer came back for a row: run it again.
   */
  async adoptRows(kind: T.RelayKind): Promise<number> {
    this.#open("adoptRows");
    checks.checkRelayKind(kind);
    return await adoptTable(this.#ctx, kind, { exact: true });
  }

  /**
   * Removes the execution with its timers, trace steps and dedupe marks (its outbox and spawns
   * stay), and says what it removed. Idempotent. The execution goes first: a later commit fails
   * with {@linkcode StoreConflict}. See docs/retention.md.
   *
   * @throws {OutcomeUnknown} When no answer came back for the execution's delete, also after
   *   `ambiguousRetries` re-sends with the same token: call it again (it is idempotent).
   * @throws {TypeError} For an id DynamoDB would reject, before anything is sent.
   */
  async deleteExecution(id: string): Promise<T.DeleteExecutionResult> {
    this.#open("deleteExecution");
    checkKey("id", id, LIMITS.partitionKeyBytes);
    try {
      return await removeExecution(this.#ctx, id, this.#ctx.resends);
    } finally {
      this.#ctx.ring.forget(id); // its ring is gone: a later insert of the id reads its end afresh
      this.#ctx.chains.forget(id);
      this.#ctx.statuses.forget(id);
    }
  }

  /** Stops a running feed round, then destroys the client if `create()` built it. Idempotent. */
  async close(): Promise<void> {
    await (await this.#ctx.otherWriters)?.close();
    return await this.#ctx.ownership.close();
  }

  /** Same as {@linkcode DynamoDBStore.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Refuses a call on a closed store before anything else, input checks included. */
  #open(method: string): void {
    this.#ctx.ownership.open(method);
  }
}

instrument(DynamoDBStore, { executionIds: true });
