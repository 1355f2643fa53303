/**
 * The relay and the timer sweeper: one bounded pass each over the outbox, the spawn intents
 * and the due timers of any {@linkcode ExecutionStore}, ready for `Deno.cron` or an interval.
 *
 * @module
 */
import { eachConcurrently } from "./core/_lanes.ts";
import { ATTR, withSpan } from "./core/_telemetry.ts";
import { pythonFloatRepr } from "./core/_py_repr.ts";
import { checkKey, checkTime, LIMITS } from "./core/_validate.ts";
import { type Event, newEvent } from "./core/documents.ts";
import type {
  ExecutionStore,
  OutboxEntry,
  OutboxQueue,
  OutboxRow,
  PendingSpawn,
  RelayFailure,
  RelayKey,
  RelayLease,
  RowQueue,
  Timer,
  UnreadableRow,
} from "./core/types.ts";
import { UnreadableEntry } from "./core/errors.ts";
import { decideDue, failedAttempt, isHead, setAside } from "./core/_relay_rules.ts";
import { applyPlan, readOutbox, release } from "./core/_outbox_pipeline.ts";
import { Acks, Pass } from "./relay/_relay_pass.ts";
import { type CheckedOptions, checkOptions } from "./relay/_options.ts";
import type { OutboxRelayOptions, RelayOptions, SweepOptions } from "./core/relay_types.ts";

/**
 * What one relay or sweep pass did. Entries counted in none of `delivered`, `failed` and
 * `held` (not started before the signal aborted, behind a pending earlier entry of the same
 * source) stay pending for the next pass.
 * The pass's span (`relayOutbox`, `relaySpawns`, `sweepTimers`) carries the same figures:
 * `harel.relay.delivered`, `harel.relay.failed`, `harel.relay.held` and, when known,
 * `harel.relay.lag_seconds`.
 *
 * @example Logging a pass
 * ```ts
 * import { relayOutbox, type RelayReport } from "@harel/dynamodb";
 * import { MemoryStore } from "@harel/dynamodb/testing";
 *
 * const report: RelayReport = await relayOutbox(new MemoryStore(), async () => {});
 * console.log(`${report.delivered} delivered, ${report.failed} failed, lag ${report.lagSeconds} s`);
 * ```
 */
export interface RelayReport {
  /** Entries handled and acknowledged (timers: fired; then deleted unless re-scheduled). */
  delivered: number;
  /** Entries whose callback threw: they wait (backoff) and come again, or are dead-lettered. */
  failed: number;
  /**
   * Entries dead-lettered this pass after `maxAttempts` failures, or unreadable (each reported
   * to `onError` as an {@linkcode UnreadableEntry}): kept, visible with `deadLetters`.
   */
  setAside: number;
  /**
   * Outbox: entries this pass left pending behind a held target (an earlier entry waits, is
   * dead, or failed in this pass). A full pass counts each when it first sets it apart, and again
   * after a new failure of its target; with `seqs`, those of the given entries. 0 otherwise.
   */
  held: number;
  /**
   * Relay lag: the age in seconds of the oldest pending entry this pass saw (since its commit,
   * else its event's `created_time`; timers: since due). `null` when none, or nothing says when.
   */
  lagSeconds: number | null;
}

/**
 * harel's `Timeout` event for a timer, as the Python engine's `timeout_event`: id
 * `timeout:{executionId}:{path}:{fireAt}` (`fireAt` as Python's float `repr`), kind `"Timeout"`,
 * data `{ path }`. Python and Deno sweepers make the same id, so the receiver dedupes them.

 *
 * @example The event of a timer
 * ```ts
 * import assert from "node:assert/strict";
 * import { timeoutEvent } from "@harel/dynamodb";
 *
 * const event = timeoutEvent("exe-1", "order.waiting", 1_700_000_001);
 * assert.equal(event.id, "timeout:exe-1:order.waiting:1700000001.0");
 * ```
 *
 * @param executionId The execution the timer belongs to.
 * @param path The timer's state path.
 * @param fireAt When it was due, in epoch seconds.
 * @returns The Timeout event.
 */
export function timeoutEvent(executionId: string, path: string, fireAt: number): Event {
  checkKey("executionId", executionId, LIMITS.partitionKeyBytes);
  checkKey("path", path, LIMITS.sortKeyBytes);
  checkTime("fireAt", fireAt);
  return {
    ...newEvent("Timeout", { path }),
    id: `timeout:${executionId}:${path}:${pythonFloatRepr(fireAt)}`,
  };
}

/**
 * One relay pass over the outbox: the `limit` lowest deliverable entries, in seq order per
 * `targetId` (one in flight per target, `concurrency` targets at once), acknowledged in batches.
 * An entry whose `deliver` throws waits `backoff`, then is dead-lettered after `maxAttempts`;
 * meanwhile the rest of its target waits behind it, without taking the `limit` from other
 * targets. Rows no one can read are set aside. With `seqs`, just a commit's own entries. At least
 * once: receivers dedupe on `event.id` (docs/delivery.md).
 *
 * @example A relay pass every few seconds
 * ```ts
 * import { DynamoDBStore, relayOutbox } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const report = await relayOutbox(store, async (entry) => {
 *   await fetch(`https://example.com/executions/${entry.targetId}/events`, {
 *     method: "POST",
 *     body: JSON.stringify(entry.event),
 *   });
 * });
 * console.log(report.delivered, report.failed);
 * ```
 *
 * @param store Any execution store.
 * @param deliver Delivers one entry (sync or async); throwing or rejecting leaves it pending.
 * @param options How many entries, how many at once, and a signal to stop.
 * @returns How many entries were delivered and how many failed.
 *
 * @throws {TypeError} For a bad callback or options (`RangeError`: out of range), before reading.
 * @throws {StoreClosed} When the store is closed; any error of its outbox queue rejects the
 *   pass too (what `deliver` throws goes to `onError`).
 */
export function relayOutbox(
  store: ExecutionStore,
  deliver: (entry: OutboxEntry) => void | Promise<void>,
  options: OutboxRelayOptions = {},
): Promise<RelayReport> {
  // Bad options are a rejected promise, as every failure of the pass, never a throw.
  return Promise.try(() => {
    const checked = checkOptions("deliver", deliver, options);
    return inSpan("relayOutbox", checked, (pass) => relayOutboxPass(pass, store, deliver, checked));
  });
}

async function relayOutboxPass(
  pass: Pass,
  store: ExecutionStore,
  deliver: (entry: OutboxEntry) => void | Promise<void>,
  options: CheckedOptions,
): Promise<RelayReport> {
  if (pass.signal.aborted) return emptyReport();
  const queue = store.outboxQueue;
  // Delivery within the request takes no lease: it delivers a commit's own fresh entries.
  if (options.seqs !== undefined) return await outboxPass(pass, queue, deliver, undefined, options);
  return await leased(queue, (lease) => outboxPass(pass, queue, deliver, lease, options));
}

async function outboxPass(
  pass: Pass,
  queue: OutboxQueue,
  deliver: (entry: OutboxEntry) => void | Promise<void>,
  lease: RelayLease | undefined,
  { limit, concurrency, retry, seqs }: Pick<
    CheckedOptions,
    "limit" | "concurrency" | "retry" | "seqs"
  >,
): Promise<RelayReport> {
  const { signal } = pass;
  const now = queue.now();
  const plan = await readOutbox(queue, { now, limit, seqs, signal });
  if (seqs === undefined) await applyPlan(queue, plan);
  const report = startReport(plan.oldestAt, now);
  report.held = plan.held;
  const record = recorder(pass, report);
  const fail = (row: OutboxRow, failure: RelayFailure) =>
    record(failure, async () => (await queue.apply({ fail: [{ row, failure }] })).failed[0]!);
  const lanes = new Map<string, OutboxRow[]>();
  const unreadable: OutboxRow[] = [];
  for (const row of plan.deliver) {
    if ("error" in row.entry) unreadable.push(row);
    else lanes.set(row.target, [...lanes.get(row.target) ?? [], row]);
  }
  // A delivered head is deleted by its target's release. Another relay that ran while this
  // pass's lease had run out may have made an entry of it a head: then every target is looked at.
  const acks = new Acks<OutboxRow>(
    pass,
    (rows) => queue.apply({ ack: plainIds(rows) }),
    async (rows) => {
      const heads = rows.filter((row) => isHead(row));
      const looked = lease?.lapsed ?? true ? rows : heads;
      await release(queue, looked.map((row) => row.target), heads);
    },
  );
  await Promise.all([
    eachSettled(pass, unreadable, async (row) => {
      const { error } = row.entry as { error: string };
      pass.onError?.(new UnreadableEntry("outbox", row.seq, error));
      await fail(row, setAside(row.attempts, error));
    }),
    inLanes(pass, [...lanes.values()], concurrency, async (lane) => {
      for (const [i, row] of lane.entries()) {
        if (signal.aborted || (lease && !await lease.keep())) return;
        try {
          await deliver(row.entry as OutboxEntry);
        } catch (error) {
          report.failed++;
          pass.onError?.(error);
          await fail(row, failedAttempt(row.attempts, error, retry, now));
          // Set aside as unreadable, it holds nothing back (as an unreadable row).
          if (error instanceof UnreadableEntry) continue;
          // It waits (or is dead-lettered), and the rest of this target waits behind it.
          report.held += lane.length - i - 1;
          return;
        }
        report.delivered++;
        await acks.add(row);
      }
    }),
  ]);
  await acks.flush();
  return report;
}

/** The ids of rows that were no head when read (a head is deleted by its target's release). */
const plainIds = (rows: OutboxRow[]) => rows.filter((row) => !isHead(row)).map((row) => row.id);

/**
 * One relay pass over the spawn intents: `start` on the `limit` lowest seqs (`concurrency` at
 * once), started ones acknowledged in batches; one whose `start` throws stays pending. At least
 * once: `start` must tolerate a child that already exists.
 *
 * @example Starting spawned children
 * ```ts
 * import { DynamoDBStore, newExecution, relaySpawns, StoreConflict } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * await relaySpawns(store, async (spawn) => {
 *   const child = newExecution({
 *     id: spawn.childId,
 *     definition_id: "child",
 *     parent_id: spawn.parentId,
 *     root_path: spawn.rootPath,
 *     context: spawn.context,
 *   });
 *   try {
 *     await store.save(child);
 *   } catch (error) {
 *     if (!(error instanceof StoreConflict)) throw error; // started by an earlier pass
 *   }
 * });
 * ```
 *
 * @param store Any execution store.
 * @param start Starts one child (sync or async); throwing or rejecting leaves the intent pending.
 * @param options How many intents, how many at once, and a signal to stop.
 * @returns How many spawns were started and how many failed.
 *
 * @throws {TypeError} For a bad callback or options (`RangeError`: out of range), before reading.
 * @throws {StoreClosed} When the store is closed; any error of `pendingSpawns` or
 *   `ackSpawn` rejects the pass too (what `start` throws goes to `onError`).
 */
export function relaySpawns(
  store: ExecutionStore,
  start: (spawn: PendingSpawn) => void | Promise<void>,
  options: RelayOptions = {},
): Promise<RelayReport> {
  // Bad options are a rejected promise, as every failure of the pass, never a throw.
  return Promise.try(() => {
    const checked = checkOptions("start", start, options);
    return inSpan("relaySpawns", checked, (pass) => relaySpawnsPass(pass, store, start, checked));
  });
}

async function relaySpawnsPass(
  pass: Pass,
  store: ExecutionStore,
  start: (spawn: PendingSpawn) => void | Promise<void>,
  options: CheckedOptions,
): Promise<RelayReport> {
  if (pass.signal.aborted) return emptyReport();
  const queue = store.spawnQueue;
  return await leased(queue, (lease) => spawnsPass(pass, store, queue, start, lease, options));
}

async function spawnsPass(
  pass: Pass,
  store: ExecutionStore,
  queue: RowQueue<"spawns">,
  start: (spawn: PendingSpawn) => void | Promise<void>,
  lease: RelayLease,
  { limit, concurrency, retry }: CheckedOptions,
): Promise<RelayReport> {
  const now = queue.now();
  const batch = decideDue(await queue.due(now, limit, pass.signal), now, limit);
  const report = startReport(batch.oldestAt, now);
  const record = recorder(pass, report);
  const acks = new Acks<PendingSpawn>(
    pass,
    (spawns) => store.ackSpawn(spawns.map((spawn) => spawn.seq)),
  );
  await Promise.all([
    setAsideAll(
      pass,
      "spawns",
      batch.unreadable,
      (key, failure) => record(failure, () => queue.fail(key, failure)),
    ),
    inLanes(pass, batch.items, concurrency, async ({ item: spawn, attempts }) => {
      if (!await lease.keep()) return;
      try {
        await start(spawn);
      } catch (error) {
        report.failed++;
        pass.onError?.(error);
        const failure = failedAttempt(attempts, error, retry, now);
        await record(failure, () => queue.fail(spawn.seq, failure));
        return;
      }
      report.delivered++;
      await acks.add(spawn);
    }),
  ]);
  await acks.flush();
  return report;
}

/**
 * One sweep of the due timers: the `limit` earliest due at `now`, each (`concurrency` at once)
 * fired with `fire(timer, timeoutEvent(...))`, then deleted if still at that time. A timer whose
 * `fire` throws fires again next pass with the same event id (one effect for a deduping receiver).
 *
 * @example A sweep on Deno.cron
 * ```ts
 * import { DynamoDBStore, sweepTimers } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * await sweepTimers(store, async (timer, event) => {
 *   // load timer.executionId, skip if event.id was processed, apply, commit with
 *   // processedEventId: event.id
 *   console.log(timer.executionId, event.id);
 * });
 * ```
 *
 * @param store Any execution store.
 * @param fire Delivers the Timeout event of one timer (sync or async); throwing or rejecting
 *   keeps the timer.
 * @param options The time, how many timers, how many at once, and a signal to stop.
 * @returns How many timers fired and how many failed.
 *
 * @throws {TypeError} For a bad callback or options (`RangeError`: out of range), before reading.
 * @throws {RangeError} For a `now` that is not epoch seconds (e.g. milliseconds).
 * @throws {StoreClosed} When the store is closed; any error of `dueTimers` rejects the pass
 *   too (what `fire` and `deleteTimer` throw goes to `onError`).
 */
export function sweepTimers(
  store: ExecutionStore,
  fire: (timer: Timer, event: Event) => void | Promise<void>,
  options: SweepOptions = {},
): Promise<RelayReport> {
  // Bad options are a rejected promise, as every failure of the pass, never a throw.
  return Promise.try(() => {
    const checked = checkOptions("fire", fire, options);
    return inSpan("sweepTimers", checked, (pass) => sweepTimersPass(pass, store, fire, checked));
  });
}

async function sweepTimersPass(
  pass: Pass,
  store: ExecutionStore,
  fire: (timer: Timer, event: Event) => void | Promise<void>,
  options: CheckedOptions,
): Promise<RelayReport> {
  if (pass.signal.aborted) return emptyReport();
  const queue = store.timerQueue;
  return await leased(queue, (lease) => timersPass(pass, store, queue, fire, lease, options));
}

async function timersPass(
  pass: Pass,
  store: ExecutionStore,
  queue: RowQueue<"timers">,
  fire: (timer: Timer, event: Event) => void | Promise<void>,
  lease: RelayLease,
  { limit, concurrency, retry, now: at }: Pick<
    CheckedOptions,
    "limit" | "concurrency" | "retry" | "now"
  >,
): Promise<RelayReport> {
  const now = at ?? queue.now();
  const batch = decideDue(await queue.due(now, limit, pass.signal), now, limit);
  const report = startReport(batch.oldestAt, now);
  const record = recorder(pass, report);
  await inLanes(pass, batch.items, concurrency, async ({ item: timer, attempts }) => {
    if (!await lease.keep()) return;
    try {
      await fire(timer, timeoutEvent(timer.executionId, timer.path, timer.fireAt));
    } catch (error) {
      // It fires again after its backoff, with the same event id.
      report.failed++;
      pass.onError?.(error);
      const failure = failedAttempt(attempts, error, retry, now);
      await record(failure, () => queue.fail(timer, failure));
      return;
    }
    report.delivered++;
    try {
      // Guarded: false means a commit re-scheduled it meanwhile; the new timer stays.
      await store.deleteTimer(timer.executionId, timer.path, timer.fireAt);
    } catch (error) {
      pass.onError?.(error); // it fires again next pass, with the same event id
    }
  });
  return report;
}

/** How long a pass holds its queue, renewed as it goes: a pass that dies holds it no longer. */
const LEASE_SECONDS = 30;

/** Runs `body` holding `queue`'s lease (another relay holds it: nothing to do). */
async function leased(
  queue: { lease(seconds: number): Promise<RelayLease | null> },
  body: (lease: RelayLease) => Promise<RelayReport>,
): Promise<RelayReport> {
  const lease = await queue.lease(LEASE_SECONDS);
  if (lease === null) return emptyReport();
  try {
    return await body(lease);
  } finally {
    await lease.release();
  }
}

function emptyReport(): RelayReport {
  return { delivered: 0, failed: 0, setAside: 0, held: 0, lagSeconds: null };
}

function startReport(oldestAt: number | null, now: number): RelayReport {
  return { ...emptyReport(), lagSeconds: oldestAt === null ? null : Math.max(0, now - oldestAt) };
}

/** Records a failed attempt with `write`; what it throws goes to `onError`, never the pass. */
function recorder(pass: Pass, report: RelayReport) {
  return async (failure: RelayFailure, write: () => Promise<boolean>): Promise<void> => {
    try {
      await write();
      if (failure.retryAt === null) report.setAside++;
    } catch (error) {
      pass.onError?.(error);
    }
  };
}

/** Sets aside rows no one can read, each reported to `onError` as an UnreadableEntry. */
async function setAsideAll<K extends "spawns" | "timers">(
  pass: Pass,
  kind: K,
  rows: UnreadableRow<K>[],
  write: (key: RelayKey<K>, failure: RelayFailure) => Promise<void>,
): Promise<void> {
  await eachSettled(pass, rows, async (row) => {
    pass.onError?.(new UnreadableEntry(kind, row.key, row.error));
    await write(row.key, setAside(row.attempts, row.error));
  });
}

/** Runs `task` on each item in turn; what it throws stops the pass. */
async function eachSettled<T>(pass: Pass, items: T[], task: (item: T) => Promise<void>) {
  for (const item of items) {
    try {
      await task(item);
    } catch (error) {
      pass.stop(error);
    }
  }
}

/**
 * Runs one pass in a span named after its runner. It settles once the acknowledgements the pass
 * owes are flushed, whatever the body did, rejecting with the body's error, else with what
 * stopped the pass (a throwing `onError`), else with a failed acknowledgement.
 */
function inSpan(
  name: string,
  { signal, onError }: CheckedOptions,
  body: (pass: Pass) => Promise<RelayReport>,
): Promise<RelayReport> {
  return withSpan(name, {}, async (span) => {
    const pass = new Pass(name, signal, onError);
    let report: RelayReport | undefined, failure: { error: unknown } | null = null;
    try {
      report = await body(pass);
    } catch (error) {
      failure = { error };
    }
    const unacknowledged = await pass.finishInFlight();
    failure ??= pass.failure ?? unacknowledged;
    if (failure) throw failure.error;
    span.setAttributes({
      [ATTR.delivered]: report!.delivered,
      [ATTR.failed]: report!.failed,
      [ATTR.setAside]: report!.setAside,
      [ATTR.held]: report!.held,
    });
    if (report!.lagSeconds !== null) span.setAttribute(ATTR.lag, report!.lagSeconds);
    return report!;
  });
}

/**
 * Runs `task` on every item, `lanes` at a time, until the pass stops; a task that throws stops
 * it. Resolves only when no task still runs.
 */
async function inLanes<T>(
  pass: Pass,
  items: T[],
  lanes: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  const settled = async (item: T) => {
    try {
      await task(item);
    } catch (error) {
      pass.stop(error);
    }
  };
  await eachConcurrently(items, lanes, settled, () => pass.signal.aborted);
}
