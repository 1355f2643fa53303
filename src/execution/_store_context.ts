// What DynamoDBStore's modules share, built once by its constructor from the checked options:
// one object that is every context a module names for the part it reads (Reads,
// ExecutionReads, TimerReads, QueueContext, TxContext, CommitContext).
import type { DynamoDBSender } from "../dynamo/_dynamo.ts";
import { checkClient, ClientOwnership } from "../dynamo/_ownership.ts";
import {
  checkTableExists,
  ensureIndex,
  ensureStream,
  ensureTable,
  ensureTtl,
  type ExecutionTables,
  executionTables,
  type TableSpec,
} from "../dynamo/tables.ts";
import { Lru } from "../core/_lru.ts";
import { RELAY_INDEX } from "./queue/_relay_index.ts";
import { adoptTable } from "./queue/_adoption.ts";
import { type OtherWriters, otherWritersOn } from "./other_writers/other_writers.ts";
import type { Execution } from "../core/documents.ts";
import type { StatusCatchUp } from "../core/operator_types.ts";
import { checkExecutionStoreOptions, checkInteger, describe } from "../core/_validate.ts";
import { checkOptionsOf } from "../core/_option_names.ts";
import { SeqBlocks } from "./commit/_seq_blocks.ts";
import { STATUS_INDEX, StatusCache } from "./listing/_status_index.ts";
import { TraceRing } from "./commit/_trace_ring.ts";
import { ChainCache } from "./commit/_outbox_chain.ts";
import type { QueueContext } from "./queue/_queue_items.ts";
import type { CommitContext } from "./commit/_commit_loop.ts";
import { type ExecutionReads, readChains, SharedTables } from "./listing/_execution_reads.ts";
import type { TimerReads } from "./queue/_timers.ts";
import type { TxContext } from "./commit/_transaction.ts";
import { checkClock, checkFinishedTtl } from "./commit/_retention.ts";
import type { CreateStoreOptions, DynamoDBStoreOptions } from "./execution_store_options.ts";
import { checkCreateOptions } from "../core/_option_names.ts";
import { connectStore } from "../dynamo/connect.ts";

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
    /** What runs for other writers: only with `otherWriters: true`. */
    readonly otherWriters?: OtherWriters;
  };

/**
 * Checks the options (in the order the constructor always has: the first bad one is named)
 * and builds the store's context. `load` is the store's own, for a commit out of conflict
 * retries.
 */
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
  const others = otherWriters ? otherWritersOn(client) : undefined;
  const tx: TxContext = {
    tables,
    traceMax: rules.traceMax,
    processedTtl: rules.processedTtl,
    finishedTtl: checkFinishedTtl(finishedTtlSeconds),
    now: checkClock(now),
  };
  const context: Omit<StoreContext, "timers" | "tx"> = {
    ...tx,
    client: gated,
    consistent: consistentReads,
    chains: new ChainCache(),
    statuses: new StatusCache(),
    table: tables.timers.name,
    headsOut: new Lru(10_000),
    ring: new TraceRing(gated, tx, consistentReads, conflictRetries, ambiguousRetries),
    outboxSeqs: new SeqBlocks(gated, tables.counters.name, "outbox", block, others?.reserve()),
    spawnSeqs: new SeqBlocks(gated, tables.counters.name, "spawn", block, others?.reserve()),
    conflictRetries,
    ambiguousRetries,
    resends: { lost: ambiguousRetries, conflicts: conflictRetries },
    load,
    readChains: (id) => readChains(store, id),
    sharing: new SharedTables(otherWriters),
    ownership,
    ...(others ? { otherWriters: others } : {}),
  };
  const store: StoreContext = Object.assign(context, { timers: context, tx }) as StoreContext;
  return store;
}

/** `catchUpStatusIndex()`: a round of the status feed; none without other writers (`"off"`). */
export async function catchUp(
  ctx: StoreContext,
  signal: AbortSignal | undefined,
): Promise<StatusCatchUp> {
  const feed = ctx.otherWriters?.feed;
  if (feed === undefined) {
    return { records: 0, indexed: 0, scanned: 0, behind: false, skipped: "off" };
  }
  return await feed.round(ctx, signal);
}

/**
 * Creates the tables that are missing (with their indexes: the executions table's status index,
 * the relay tables' relay index; with other writers, the executions table's stream), turns on the
 * TTLs the options use, adds the indexes (and the stream) to existing tables, and adopts the rows
 * of a relay table that predates the relay index.
 */
export async function ensureStoreTables(ctx: StoreContext): Promise<void> {
  const { executions, outbox, spawns, timers } = ctx.tables;
  const streamed = ctx.otherWriters !== undefined; // the status feed reads the stream
  const indexes = (spec: TableSpec) => [
    ...(spec === executions ? [STATUS_INDEX] : []),
    ...([outbox, spawns, timers].includes(spec) ? [RELAY_INDEX] : []),
  ];
  await Promise.all(
    Object.values(ctx.tables).map((spec) =>
      ensureTable(ctx.client, spec, indexes(spec), {
        stream: spec === executions && streamed,
      }).then(() =>
        // The status index (#25) on an executions table made before it.
        spec === executions
          ? ensureIndex(ctx.client, spec.name, STATUS_INDEX).then(() =>
            // The status feed (#34) reads the table's stream.
            streamed ? ensureStream(ctx.client, spec.name) : undefined
          )
          : undefined
      )
    ),
  );
  const expiring = [
    ctx.processedTtl === null ? undefined : ctx.tables.processed.name,
    ctx.finishedTtl === null ? undefined : ctx.tables.executions.name,
  ];
  await Promise.all(
    expiring.flatMap((table) => table === undefined ? [] : [ensureTtl(ctx.client, table, "ttl")]),
  );
  // A table that predates the index (another writer made it) gets it, and its rows are adopted
  // now (one scan, once); rows other writers add later are found by the passes of a store built
  // with `otherWriters: true` (by seq; timers by the sweeps' scan).
  await Promise.all(
    (["outbox", "spawns", "timers"] as const).map(async (kind) => {
      if (await ensureIndex(ctx.client, ctx.tables[kind].name, RELAY_INDEX)) {
        await adoptTable(ctx, kind);
      }
    }),
  );
}

/**
 * `DynamoDBStore.create()`: checks the options, builds the client, waits until DynamoDB answers,
 * then ensures the tables (or, with `ensureTables: false`, checks with one DescribeTable that
 * the executions table exists). `make` builds the store on the client.
 */
export function openStore<S extends { ensureTables(): Promise<void>; tables: ExecutionTables }>(
  options: CreateStoreOptions,
  make: (client: DynamoDBSender, options: DynamoDBStoreOptions) => S,
): Promise<S> {
  let ensure: boolean, store: DynamoDBStoreOptions;
  try {
    ({ options, store, ensure } = checkCreateOptions("DynamoDBStore.create()", options));
  } catch (error) {
    return Promise.reject(error);
  }
  let client: DynamoDBSender;
  return connectStore(
    options,
    (built) => make(client = built, store),
    (made) =>
      ensure ? made.ensureTables() : checkTableExists(
        client,
        made.tables.executions.name,
        "create the tables once at deploy time with `await store.ensureTables()` (or call " +
          "create() without ensureTables: false, which creates them)",
      ),
  );
}
