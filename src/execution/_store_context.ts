// What DynamoDBStore's modules share, built once from the checked options: one object that is
// every context a module names for the part it reads.
import type { DynamoDBSender, Item } from "../dynamo/_dynamo.ts";
import { checkClient, ClientOwnership } from "../dynamo/_ownership.ts";
import {
  checkTableExists,
  ensureDefinedTable,
  ensureRun,
  type EnsureTablesOptions,
  type ExecutionTables,
  executionTables,
} from "../dynamo/tables.ts";
import { type TableDefinitions, tableDefinitions } from "../dynamo/table_definitions.ts";
import { checkDefinedTables, type TableDifference, TableDrift } from "../dynamo/table_check.ts";
import { adoptTable } from "./queue/_adoption.ts";
import type { OtherWriters } from "./other_writers/other_writers.ts";
import type { OutboxQueue, RowQueue } from "../core/relay_queues.ts";
import type { Execution } from "../core/documents.ts";
import type { StatusCatchUp } from "../core/operator_types.ts";
import { checkExecutionStoreOptions, checkInteger, describe } from "../core/_validate.ts";
import { checkOptionsOf } from "../core/_option_names.ts";
import { SeqBlocks } from "./commit/_seq_blocks.ts";
import { StatusCache } from "./listing/_status_index.ts";
import { TraceRing } from "./commit/_trace_ring.ts";
import { ChainCache } from "./commit/_outbox_chain.ts";
import { OutboxTable, type QueueContext } from "./queue/_outbox_table.ts";
import { RowTable } from "./queue/_row_tables.ts";
import type { CommitContext } from "./commit/_commit_loop.ts";
import { type ExecutionReads, readChains, SharedTables } from "./listing/_execution_reads.ts";
import type { TimerReads } from "./queue/_timers.ts";
import type { TxContext } from "./commit/_transaction.ts";
import { checkClock, checkFinishedTtl } from "./commit/_retention.ts";
import type { CreateStoreOptions, DynamoDBStoreOptions } from "./execution_store_options.ts";
import { checkCreateOptions } from "../core/_option_names.ts";
import { connectStore } from "../dynamo/connect.ts";

type Role = keyof ExecutionTables;

/** A DynamoDBStore's client (gated by its ownership), options, caches and seq blocks. */
export type StoreContext =
  & ExecutionReads
  & TimerReads
  & QueueContext
  & TxContext
  & CommitContext
  & {
    /** Whether the client is still the store's to use, and who destroys it on close. */
    readonly ownership: ClientOwnership;
    /** The tables as `ensureTables()` makes them and `checkTables()` expects them. */
    readonly definitions: TableDefinitions;
    /** What runs for other writers: only with `otherWriters: true` (loaded then, not before). */
    readonly otherWriters?: Promise<OtherWriters>;
    /** The spawn intents and timers as the relay reads and writes them. */
    readonly spawns: RowQueue<"spawns">;
    readonly timers: RowQueue<"timers">;
  };

/** Checks the options (the first bad one is named) and builds the store's context. */
export function storeContext(
  client: DynamoDBSender,
  options: DynamoDBStoreOptions,
  load: (id: string) => Promise<Execution | null>,
): StoreContext {
  checkClient(client);
  const {
    prefix = "harel",
    traceMax: traceMaxOption = 200,
    consistentReads = true,
    processedTtlSeconds = null,
    seqBlockSize = 1000,
    conflictRetries: conflictRetriesOption = 8,
    ambiguousRetries: ambiguousRetriesOption = 3,
    otherWriters = false,
    finishedTtlSeconds = null,
    now = Date.now,
  } = checkOptionsOf("new DynamoDBStore()", options);
  const tables = executionTables(prefix);
  const rules = checkExecutionStoreOptions(traceMaxOption, processedTtlSeconds);
  if (typeof consistentReads !== "boolean") {
    throw new TypeError(`consistentReads must be a boolean, got ${describe(consistentReads)}`);
  }
  const conflictRetries = checkInteger("conflictRetries", conflictRetriesOption, 0, 100);
  const ambiguousRetries = checkInteger("ambiguousRetries", ambiguousRetriesOption, 0, 100);
  const block = checkInteger("seqBlockSize", seqBlockSize, 1, 1_000_000);
  if (typeof otherWriters !== "boolean") {
    throw new TypeError(`otherWriters must be a boolean, got ${describe(otherWriters)}`);
  }
  const ownership = new ClientOwnership("DynamoDBStore", client);
  const gated = ownership.gate(client);
  const tx: TxContext = {
    tables,
    traceMax: rules.traceMax,
    processedTtl: rules.processedTtl,
    finishedTtl: checkFinishedTtl(finishedTtlSeconds),
    now: checkClock(now),
  };
  const context: Omit<
    StoreContext,
    "tx" | "outbox" | "spawns" | "timers" | "round" | "otherWriters"
  > = {
    ...tx,
    client: gated,
    consistent: consistentReads,
    chains: new ChainCache(),
    statuses: new StatusCache(),
    table: tables.timers.name,
    ring: new TraceRing(gated, tx, consistentReads, conflictRetries, ambiguousRetries),
    outboxSeqs: new SeqBlocks(gated, tables.counters.name, "outbox", block),
    spawnSeqs: new SeqBlocks(gated, tables.counters.name, "spawn", block),
    conflictRetries,
    ambiguousRetries,
    resends: { lost: ambiguousRetries, conflicts: conflictRetries },
    load,
    readChains: (id) => readChains(store, id),
    sharing: new SharedTables(otherWriters),
    ownership,
    open: (method: string) => ownership.open(method),
    definitions: tableDefinitions({ prefix, otherWriters }),
  };
  const store = Object.assign(context, { tx }) as StoreContext;
  const outbox = new OutboxTable(store);
  const spawns = new RowTable(store, "spawns");
  const timers = new RowTable(store, "timers");
  if (!otherWriters) return Object.assign(store, { outbox, spawns, timers });
  const others = import("./other_writers/other_writers.ts").then((m) =>
    m.otherWritersOn(store, client)
  );
  return Object.assign(store, {
    otherWriters: others,
    outbox: late(outbox, others.then((o) => o.outbox(outbox))),
    spawns: lateRows(spawns, others.then((o) => o.rows(spawns))),
    timers: lateRows(timers, others.then((o) => o.rows(timers))),
    round: async (kind: "outbox" | "spawns" | "timers") => await (await others).round(kind),
  });
}

/** An outbox queue once `mixed` has loaded (the other writers' part is imported on demand). */
function late(base: OutboxQueue, mixed: Promise<OutboxQueue>): OutboxQueue {
  return {
    now: () => base.now(),
    lease: (seconds) => base.lease(seconds),
    candidates(now, signal) {
      const cursor = mixed.then((queue) => queue.candidates(now, signal));
      return { next: async (count) => await (await cursor).next(count) };
    },
    rows: async (ids) => await (await mixed).rows(ids),
    holds: async (targets) => await (await mixed).holds(targets),
    apply: async (writes) => await (await mixed).apply(writes),
  };
}

/** A spawn or timer queue once `mixed` has loaded. */
function lateRows<K extends "spawns" | "timers">(
  base: RowQueue<K>,
  mixed: Promise<RowQueue<K>>,
): RowQueue<K> {
  return {
    now: () => base.now(),
    lease: (seconds) => base.lease(seconds),
    due: async (now, limit, signal) => await (await mixed).due(now, limit, signal),
    fail: async (key, failure) => await (await mixed).fail(key, failure),
  };
}

/** `catchUpStatusIndex()`: a round of the status feed; none without other writers (`"off"`). */
export async function catchUp(
  ctx: StoreContext,
  signal: AbortSignal | undefined,
): Promise<StatusCatchUp> {
  const feed = (await ctx.otherWriters)?.feed;
  if (feed === undefined) {
    return { records: 0, indexed: 0, scanned: 0, behind: false, skipped: "off" };
  }
  return await feed.round(ctx, signal);
}

/** `OtherWriters.peekUnindexed` with a part of its own that writes nothing, closed after. */
export async function peekOtherWriters(
  client: DynamoDBSender,
  tables: ExecutionTables,
  limit: number,
  takes: (item: Item) => boolean,
): Promise<Item[]> {
  const { otherWritersOn } = await import("./other_writers/other_writers.ts");
  const ctx = { client, tables, now: Date.now, resends: NO_RESENDS, open: () => {} };
  const others = otherWritersOn(ctx, client);
  try {
    return await others.peekUnindexed({ client, tables, now: Date.now }, limit, takes);
  } finally {
    await others.close();
  }
}

const NO_RESENDS = { lost: 0, conflicts: 0 };

/**
 * Makes the seven tables what their definitions say, and adopts the rows of a relay table that
 * predates the relay index (one scan, once).
 */
export async function ensureStoreTables(
  ctx: StoreContext,
  options?: EnsureTablesOptions,
): Promise<void> {
  const run = ensureRun(options);
  await Promise.all(
    (Object.keys(ctx.tables) as Role[]).map(async (role) => {
      const added = await ensureDefinedTable(ctx.client, ctx.definitions.tables[role], run);
      if (added && (role === "outbox" || role === "spawns" || role === "timers")) {
        await adoptTable(ctx, role);
      }
    }),
  );
}

/** The seven tables against their definitions: 7 DescribeTable and 2 DescribeTimeToLive calls. */
export function checkStoreTables(ctx: StoreContext): Promise<TableDifference[]> {
  const all = ctx.definitions.tables;
  return checkDefinedTables(ctx.client, Object.keys(ctx.tables).map((role) => all[role as Role]));
}

/**
 * `DynamoDBStore.create()`: checks the options, builds the client, waits until DynamoDB answers,
 * then ensures (or checks) the tables. `make` builds the store on the client.
 */
export function openStore<
  S extends {
    ensureTables(): Promise<void>;
    checkTables(): Promise<TableDifference[]>;
    tables: ExecutionTables;
  },
>(
  options: CreateStoreOptions,
  make: (client: DynamoDBSender, options: DynamoDBStoreOptions) => S,
): Promise<S> {
  let ensure: boolean, store: DynamoDBStoreOptions;
  const { checkTables = false } = options ?? {};
  try {
    ({ options, store, ensure } = checkCreateOptions("DynamoDBStore.create()", options));
    if (typeof checkTables !== "boolean") {
      throw new TypeError(`checkTables must be true or false, got ${describe(checkTables)}`);
    }
  } catch (error) {
    return Promise.reject(error);
  }
  let client: DynamoDBSender;
  return connectStore(
    options,
    (built) => make(client = built, store),
    async (made) => {
      if (ensure) await made.ensureTables();
      else if (!checkTables) {
        await checkTableExists(
          client,
          made.tables.executions.name,
          "create the tables once at deploy time with `await store.ensureTables()` (or call " +
            "create() without ensureTables: false, which creates them)",
        );
      }
      // A store that cannot read other writers' changes would miss their rows without a word.
      const mixed = !ensure && store.otherWriters === true;
      let differences = checkTables || mixed ? await made.checkTables() : [];
      if (!checkTables) differences = differences.filter((d) => d.kind.includes("stream"));
      if (differences.length) throw new TableDrift(differences);
    },
  );
}
