/**
 * `DynamoDBStore`: the harel engine's durable execution store.
 *
 * @module
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SeqBlocks } from "./_seq_blocks.ts";
import {
  checkExecutionStoreOptions,
  checkInteger,
  checkKey,
  checkOptions,
  checkTime,
  describe,
  LIMITS,
} from "./_validate.ts";
import { connectStore, type DynamoDBSender } from "./connect.ts";
import { planListing } from "./_listing.ts";
import type { Execution } from "./documents.ts";
import {
  checkTableExists,
  ensureIndex,
  ensureTable,
  ensureTtl,
  type ExecutionTables,
  executionTables,
} from "./tables.ts";
import { DEFAULT_TIMER_SHARDS, TIMER_INDEX } from "./_timer_index.ts";
import { instrument } from "./_telemetry.ts";
import { TraceRing } from "./_trace_ring.ts";
import { type CommitContext, runCommit } from "./_commit_loop.ts";
import {
  type ExecutionReads,
  listPage,
  readExecution,
  readForEvent,
  readProcessed,
} from "./_execution_reads.ts";
import {
  backfillTimerShards,
  claimTimer,
  deleteSeqs,
  dueByScan,
  dueFromIndex,
  lowestSeqItems,
  type Reads,
  type TimerReads,
} from "./_table_reads.ts";
import { checkClient, ClientOwnership } from "./_ownership.ts";
import { outboxFromItem, spawnFromItem } from "./_layout.ts";
import { claimCommit, planTraceEntry, type TxContext } from "./_transaction.ts";
import type {
  CommitChanges,
  CommitResult,
  ExecutionStore,
  ListOptions,
  ListPage,
  LoadForEventResult,
  OutboxEntry,
  PendingSpawn,
  ReadLimitOptions,
  Timer,
} from "./types.ts";
import { readLimit } from "./_bounded.ts";

import type {
  CreateStoreOptions,
  DueTimersOptions,
  DynamoDBStoreOptions,
} from "./execution_store_options.ts";

export type { CreateStoreOptions, DueTimersOptions, DynamoDBStoreOptions };

/**
 * The durable execution store: executions with optimistic concurrency, their outbox,
 * spawn intents, dedupe marks, timers and trace, in seven DynamoDB tables shared with
 * the Python engine. Every commit is one `TransactWriteItems`: all of it or none of it.
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
export class DynamoDBStore implements ExecutionStore {
  /** The ring size of each execution's trace; 0 = keep every step. */
  readonly traceMax: number;
  /** The seven tables this store uses. */
  readonly tables: ExecutionTables;
  readonly #client: DynamoDBSender;
  readonly #ownership: ClientOwnership;
  readonly #consistent: boolean;
  readonly #processedTtl: number | null;
  readonly #conflictRetries: number;
  readonly #ambiguousRetries: number;
  readonly #outboxSeqs: SeqBlocks;
  readonly #spawnSeqs: SeqBlocks;
  readonly #ring: TraceRing;
  readonly #commits: CommitContext;
  readonly #tx: TxContext;
  readonly #reads: Reads;
  readonly #executionReads: ExecutionReads;
  readonly #timerReads: TimerReads;
  readonly #timerIndex: boolean;

  /**
   * A store on an existing client. Sends nothing: call `ensureTables()` once, or use
   * {@linkcode DynamoDBStore.create}. The client stays the caller's to destroy.
   *
   * @param client Any DynamoDB client (anything with `send()`).
   * @param options Prefix, trace ring size and tuning.
   */
  constructor(client: Pick<DynamoDBClient, "send">, options: DynamoDBStoreOptions = {}) {
    checkClient(client);
    const {
      prefix = "harel",
      traceMax = 200,
      consistentReads = true,
      processedTtlSeconds = null,
      seqBlockSize = 1000,
      conflictRetries = 8,
      ambiguousRetries = 3,
      timerIndex = false,
      timerShards = DEFAULT_TIMER_SHARDS,
    } = checkOptions(options);
    this.tables = executionTables(prefix);
    const rules = checkExecutionStoreOptions(traceMax, processedTtlSeconds);
    this.traceMax = rules.traceMax;
    if (typeof consistentReads !== "boolean") {
      throw new TypeError(`consistentReads must be a boolean, got ${describe(consistentReads)}`);
    }
    this.#consistent = consistentReads;
    this.#processedTtl = rules.processedTtl;
    this.#conflictRetries = checkInteger("conflictRetries", conflictRetries, 0, 100);
    this.#ambiguousRetries = checkInteger("ambiguousRetries", ambiguousRetries, 0, 100);
    const block = checkInteger("seqBlockSize", seqBlockSize, 1, 1_000_000);
    this.#ownership = new ClientOwnership("DynamoDBStore", client);
    this.#client = this.#ownership.gate(client);
    if (typeof timerIndex !== "boolean") {
      throw new TypeError(`timerIndex must be a boolean, got ${describe(timerIndex)}`);
    }
    this.#timerIndex = timerIndex;
    this.#tx = {
      tables: this.tables,
      traceMax: this.traceMax,
      processedTtl: this.#processedTtl,
      timerShards: checkInteger("timerShards", timerShards, 1, MAX_TIMER_SHARDS),
    };
    this.#reads = { client: this.#client, consistent: this.#consistent };
    this.#executionReads = { ...this.#reads, tables: this.tables };
    this.#ring = new TraceRing(this.#client, this.#tx, this.#consistent, this.#conflictRetries);
    this.#timerReads = {
      ...this.#reads,
      table: this.tables.timers.name,
      shards: this.#tx.timerShards,
    };
    this.#outboxSeqs = new SeqBlocks(this.#client, this.tables.counters.name, "outbox", block);
    this.#spawnSeqs = new SeqBlocks(this.#client, this.tables.counters.name, "spawn", block);
    this.#commits = {
      client: this.#client,
      tx: this.#tx,
      ring: this.#ring,
      outboxSeqs: this.#outboxSeqs,
      spawnSeqs: this.#spawnSeqs,
      conflictRetries: this.#conflictRetries,
      ambiguousRetries: this.#ambiguousRetries,
      load: (id) => this.load(id),
    };
  }

  /**
   * Builds a client for `endpoint` (dummy credentials `test`/`test` unless the
   * environment has AWS keys; no endpoint = AWS with the default credential chain),
   * waits with backoff until DynamoDB answers, and ensures the tables — or, with
   * `ensureTables: false`, only checks with one DescribeTable that they exist. The store
   * owns that client: `close()` destroys it.
   *
   * @example Against DynamoDB Local
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({
   *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
   *   prefix: "demo",
   *   deadlineMs: 10_000,
   * });
   * ```
   *
   * @param options Where DynamoDB is, how long to wait for it, and the store's options.
   * @returns A store whose tables exist.
   *
   * @throws {TypeError} For options of the wrong type (a `RangeError` for one out of its range),
   *   before anything is sent.
   * @throws {MissingSetup} Without an endpoint, when no AWS region or credentials are found.
   * @throws {EndpointUnreachable} When DynamoDB did not answer within `deadlineMs` (each
   *   failed attempt goes to `onRetry`).
   * @throws {EndpointNotDynamoDB} When something else answered at the endpoint (an HTML page).
   * @throws {TableNotFound} With `ensureTables: false`, when the executions table is missing.
   */
  static create(options: CreateStoreOptions = {}): Promise<DynamoDBStore> {
    options ??= {}; // null: no options, as in the constructor
    const ensure = options?.ensureTables ?? true;
    if (typeof ensure !== "boolean") {
      return Promise.reject(
        new TypeError(`ensureTables must be true or false, got ${describe(ensure)}`),
      );
    }
    let client: DynamoDBSender;
    return connectStore(
      options,
      (built) => new DynamoDBStore(client = built, options),
      (store) =>
        ensure ? store.ensureTables() : checkTableExists(
          client,
          store.tables.executions.name,
          "create the tables once at deploy time with `await store.ensureTables()` (or call " +
            "create() without ensureTables: false, which creates them)",
        ),
    );
  }

  /**
   * Creates the seven tables where missing (PAY_PER_REQUEST) and waits until they are
   * active; enables TTL on the processed table when `processedTtlSeconds` is set. With
   * `timerIndex`, adds the timer index, waits until it is active and gives the timers
   * armed without it their shard (a scan of the timers table). Idempotent.
   *
   * @example Creating the tables once at deploy time
   * ```ts
   * import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * const store = new DynamoDBStore(new DynamoDBClient({}), { prefix: "prod" });
   * await store.ensureTables();
   * ```
   *
   * @throws {StoreClosed} After `close()`.
   * @throws {Error} The SDK's error when a table cannot be created or described (e.g.
   *   `AccessDeniedException` without the IAM actions of `iamPolicy`).
   */
  async ensureTables(): Promise<void> {
    const { timers } = this.tables;
    await Promise.all(
      Object.values(this.tables).map((spec) =>
        // A timers table made now gets the index with it; an existing one gets it below.
        ensureTable(
          this.#client,
          spec,
          this.#timerIndex && spec === timers ? TIMER_INDEX : undefined,
        )
      ),
    );
    if (this.#processedTtl !== null) {
      await ensureTtl(this.#client, this.tables.processed.name, "ttl");
    }
    if (this.#timerIndex) {
      await ensureIndex(this.#client, this.tables.timers.name, TIMER_INDEX);
      await backfillTimerShards(this.#timerReads);
    }
  }

  /**
   * The execution with this id, or `null`.
   *
   * @example Loading an execution
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * const exe = await store.load("0123456789abcdef0123456789abcdef");
   * console.log(exe?.status ?? "no such execution");
   * ```
   */
  async load(id: string): Promise<Execution | null> {
    this.#open("load");
    checkKey("id", id, LIMITS.partitionKeyBytes);
    return await readExecution(this.#executionReads, id);
  }

  /**
   * The execution and whether `eventId` was already handled, in one call.
   *
   * @example Dropping a duplicate delivery
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * const { execution, processed } = await store.loadForEvent("exe-1", "event-1");
   * if (execution && !processed) {
   *   // apply the event, then commit with processedEventId: "event-1"
   * }
   * ```
   */
  async loadForEvent(id: string, eventId: string): Promise<LoadForEventResult> {
    this.#open("loadForEvent");
    checkKey("id", id, LIMITS.partitionKeyBytes);
    checkKey("eventId", eventId, LIMITS.sortKeyBytes);
    return await readForEvent(this.#executionReads, id, eventId);
  }

  /**
   * Whether `eventId` was already handled by execution `id`.
   *
   * @example Checking a dedupe mark
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * console.log(await store.isProcessed("exe-1", "event-1"));
   * ```
   */
  async isProcessed(id: string, eventId: string): Promise<boolean> {
    this.#open("isProcessed");
    checkKey("id", id, LIMITS.partitionKeyBytes);
    checkKey("eventId", eventId, LIMITS.sortKeyBytes);
    return await readProcessed(this.#executionReads, id, eventId);
  }

  /**
   * Saves the execution alone: `commit(exe)`.
   *
   * @example Saving an execution
   * ```ts
   * import assert from "node:assert/strict";
   * import { DynamoDBStore, newExecution } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * const exe = newExecution({ definition_id: "order" });
   * await store.save(exe);
   * assert.equal(exe.version, 1);
   * ```
   *
   * @throws {StoreConflict} As {@linkcode DynamoDBStore.commit}, and every error it throws.
   */
  async save(exe: Execution): Promise<void> {
    await this.commit(exe);
  }

  /**
   * Writes the execution and everything it caused in one transaction, all or nothing,
   * if the stored version still equals `exe.version` (0 = insert). On success
   * `exe.version` is bumped in place; on a lost race it throws {@linkcode StoreConflict},
   * `exe.version` is unchanged and nothing of the commit is written. Input DynamoDB would
   * reject is refused with a `TypeError`/`RangeError` before anything is sent, and so is a
   * second commit of the same object while the first has not settled (a missing `await`).
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
   * @throws {CommitOutcomeUnknown} When every send's answer was lost (`ambiguousRetries`
   *   re-sends): the commit may or may not be stored; reload to know.
   * @throws {CommitCancelled} When DynamoDB cancelled the transaction for another reason (each
   *   item's role and code), or transaction conflicts outlasted `conflictRetries`.
   * @throws {TypeError} For input DynamoDB would reject (a `RangeError` for a value out of its
   *   range: sizes, times, seqs), or a commit of an object whose commit has not settled.
   * @throws {StoreClosed} After `close()`.
   */
  async commit(exe: Execution, changes: CommitChanges = {}): Promise<CommitResult> {
    this.#open("commit");
    const release = claimCommit(exe);
    try {
      return await runCommit(this.#commits, exe, changes);
    } finally {
      release();
    }
  }

  /**
   * Appends one trace step outside a commit, at the ring's highest index + 1 (0 on an empty
   * ring), or at `entry.index` when the entry carries one (as the Python seed); the step that
   * falls out of this store's window (`traceMax`) is deleted. Two calls: the ring's end is
   * always read first.
   *
   * @example Appending an operator note
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await store.appendTrace("exe-1", { note: "operator retried the payment" });
   * ```
   *
   * @throws {TypeError} For an id, entry or `entry.index` DynamoDB would reject (a `RangeError`
   *   for an index or size out of range), before anything is sent.
   * @throws {Error} The SDK's `TransactionCanceledException` when other appenders kept winning
   *   for `conflictRetries` attempts.
   * @throws {StoreClosed} After `close()`.
   */
  async appendTrace(id: string, entry: Record<string, unknown>): Promise<void> {
    this.#open("appendTrace");
    const { index, json } = planTraceEntry(id, entry);
    await this.#ring.append(id, index, json);
  }

  /**
   * The execution's trace, oldest step first, each with its `index`.
   *
   * @example Reading a trace
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * for (const step of await store.readTrace("exe-1")) console.log(step.index, step);
   * ```
   */
  async readTrace(id: string): Promise<Record<string, unknown>[]> {
    this.#open("readTrace");
    checkKey("id", id, LIMITS.partitionKeyBytes);
    return await this.#ring.read(id);
  }

  /**
   * One page of executions, filtered. The listing follows DynamoDB's scan order (not
   * sorted); a page holds exactly `limit` matches unless the table is exhausted.
   *
   * @example Walking every running order
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * let cursor: string | null = null;
   * do {
   *   const page = await store.listExecutions({ definitionId: "order", status: "RUNNING", cursor });
   *   for (const summary of page.items) console.log(summary.id, summary.version);
   *   cursor = page.nextCursor;
   * } while (cursor);
   * ```
   *
   * @throws {RangeError} For a `limit` outside 1 to 1000 (a `TypeError` for a filter of the
   *   wrong type), before anything is sent.
   * @throws {InvalidCursor} For a `cursor` that is not a `nextCursor` of this table's listing.
   * @throws {StoreClosed} After `close()`.
   */
  async listExecutions(options: ListOptions = {}): Promise<ListPage> {
    this.#open("listExecutions");
    const listing = planListing(options, this.tables.executions.name);
    return await listPage(this.#executionReads, listing);
  }

  /**
   * The `limit` lowest-seq outbox entries not yet acknowledged (default 1000, `Infinity`
   * for all), by seq. Memory grows with `limit`, not with the backlog: a keys-only scan
   * keeps the lowest seqs in a bounded heap, then `BatchGetItem` reads their bodies.
   *
   * @example A relay pass
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * const entries = await store.pendingOutbox({ limit: 500 });
   * // deliver each entry.event to entry.targetId, then:
   * await store.ackOutbox(entries.map((entry) => entry.seq));
   * ```
   *
   * @throws {RangeError} For a `limit` that is not a positive integer or `Infinity`.
   * @throws {StoreClosed} After `close()`.
   */
  async pendingOutbox(options?: ReadLimitOptions): Promise<OutboxEntry[]> {
    this.#open("pendingOutbox");
    const items = await lowestSeqItems(this.#reads, this.tables.outbox.name, readLimit(options));
    return items.map(outboxFromItem);
  }

  /**
   * Removes delivered outbox entries (one seq or many; unknown seqs are fine).
   *
   * @example Acknowledging delivered entries
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await store.ackOutbox([1, 2, 3]);
   * ```
   */
  async ackOutbox(seq: number | number[]): Promise<void> {
    this.#open("ackOutbox");
    await deleteSeqs(this.#client, this.tables.outbox.name, "seq", seq);
  }

  /**
   * The `limit` lowest-seq spawn intents not yet acknowledged (default 1000, `Infinity`
   * for all), by seq; memory grows with `limit`, not with the backlog.
   *
   * @example Reading spawn intents
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * for (const spawn of await store.pendingSpawns({ limit: 100 })) {
   *   // start spawn.childId at spawn.rootPath with spawn.context, then:
   *   await store.ackSpawn(spawn.seq);
   * }
   * ```
   *
   * @throws {RangeError} For a `limit` that is not a positive integer or `Infinity`.
   * @throws {StoreClosed} After `close()`.
   */
  async pendingSpawns(options?: ReadLimitOptions): Promise<PendingSpawn[]> {
    this.#open("pendingSpawns");
    const items = await lowestSeqItems(this.#reads, this.tables.spawns.name, readLimit(options));
    return items.map(spawnFromItem);
  }

  /**
   * Removes started spawn intents (one seq or many).
   *
   * @example Acknowledging a started child
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await store.ackSpawn(7);
   * ```
   */
  async ackSpawn(seq: number | number[]): Promise<void> {
    this.#open("ackSpawn");
    await deleteSeqs(this.#client, this.tables.spawns.name, "seq", seq);
  }

  /**
   * The `limit` earliest timers due at `now` (epoch seconds; default 1000, `Infinity` for
   * all), earliest first; memory grows with `limit`, not with the number of timers.
   *
   * @example A timer sweep
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * for (const timer of await store.dueTimers(Date.now() / 1000, { limit: 100 })) {
   *   if (await store.deleteTimer(timer.executionId, timer.path, timer.fireAt)) {
   *     // deliver the timeout event to timer.executionId
   *   }
   * }
   * ```
   *
   * @throws {RangeError} For a `now` that is not epoch seconds (e.g. milliseconds) or a `limit`
   *   that is not a positive integer or `Infinity`.
   * @throws {IndexNotFound} With `timerIndex` and no `scan`, when the timers table lacks the
   *   index (`ensureTables()` was not run by a store with `timerIndex: true`).
   * @throws {StoreClosed} After `close()`.
   */
  async dueTimers(now: number, options?: DueTimersOptions): Promise<Timer[]> {
    this.#open("dueTimers");
    checkTime("now", now);
    const limit = readLimit(options);
    if (options?.scan !== undefined && typeof options.scan !== "boolean") {
      throw new TypeError(`options.scan must be a boolean, got ${describe(options.scan)}`);
    }
    if (this.#timerIndex && !options?.scan) return await dueFromIndex(this.#timerReads, now, limit);
    return await dueByScan(this.#timerReads, now, limit);
  }

  /**
   * Deletes a timer only if it still fires at `fireAt`: `false` means it was
   * re-scheduled (or cancelled) meanwhile, and must not fire.
   *
   * @example Claiming a due timer
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * const won = await store.deleteTimer("exe-1", "order.waiting", 1_700_000_000);
   * console.log(won ? "fire it" : "a re-schedule won");
   * ```
   *
   * @throws {RangeError} For a `fireAt` that is not epoch seconds (a `TypeError` for a key
   *   DynamoDB would reject), before anything is sent.
   * @throws {StoreClosed} After `close()`.
   */
  async deleteTimer(executionId: string, path: string, fireAt: number): Promise<boolean> {
    this.#open("deleteTimer");
    checkKey("executionId", executionId, LIMITS.partitionKeyBytes);
    checkKey("path", path, LIMITS.sortKeyBytes);
    checkTime("fireAt", fireAt);
    return await claimTimer(this.#timerReads, executionId, path, fireAt);
  }

  /**
   * Releases the client if `create()` built it; a client passed to the constructor stays
   * the caller's. Idempotent.
   *
   * @example Closing a store
   * ```ts
   * import { DynamoDBStore } from "@harel/dynamodb";
   *
   * const store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await store.close();
   * ```
   */
  close(): Promise<void> {
    // The client stays the caller's when it was injected: only a client create() built is
    // destroyed. Either way this store refuses every later call (StoreClosed).
    return this.#ownership.close();
  }

  /** Same as {@linkcode DynamoDBStore.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Refuses a call on a closed store before anything else, input checks included. */
  #open(method: string): void {
    this.#ownership.open(method);
  }
}

/** The most timer shards: a sweep pays one Query per shard. */
const MAX_TIMER_SHARDS = 1000;

// Every public method in a span `DynamoDBStore.{method}` (see _telemetry.ts).
instrument(DynamoDBStore, { executionIds: true });
