/**
 * What the conformance suites compare before and after a refused call: a snapshot of every
 * table of an execution store, as its public reads see it.
 *
 * @module
 */
import type { Execution } from "../core/documents.ts";
import { MAX_EPOCH_SECONDS } from "../core/_validate.ts";
import type { ExecutionStore, OutboxEntry, PendingSpawn, Timer } from "../core/types.ts";

/**
 * Everything an execution store holds about `ids`, and all it holds pending.
 *
 * @example Comparing two snapshots
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryStore, snapshotStore, type StoreSnapshot } from "@harel/dynamodb/testing";
 *
 * const store = new MemoryStore();
 * const before: StoreSnapshot = await snapshotStore(store, []);
 * assert.deepEqual(before.outbox, []);
 * ```
 */
export interface StoreSnapshot {
  /** The executions, in the order of the ids (`null` when absent). */
  executions: (Execution | null)[];
  /** Their traces. */
  traces: Record<string, unknown>[][];
  /** The whole outbox. */
  outbox: OutboxEntry[];
  /** Every spawn intent. */
  spawns: PendingSpawn[];
  /** Every timer. */
  timers: Timer[];
}

/**
 * A snapshot of a store, to show with `deepEqual` that a call changed nothing.
 *
 * @example Showing that a refused commit changed nothing
 * ```ts
 * import { MemoryStore, snapshotStore } from "@harel/dynamodb/testing";
 *
 * const store = new MemoryStore();
 * const before = await snapshotStore(store, ["exe-1"]);
 * await store.commit({ id: "" } as never).catch(() => {});
 * console.log(JSON.stringify(await snapshotStore(store, ["exe-1"])) === JSON.stringify(before));
 * ```
 *
 * @param ids The executions whose document and trace to include.
 */
export async function snapshotStore(store: ExecutionStore, ids: string[]): Promise<StoreSnapshot> {
  return {
    executions: await Promise.all(ids.map((id) => store.load(id))),
    traces: await Promise.all(ids.map((id) => store.readTrace(id))),
    outbox: await store.pendingOutbox(),
    spawns: await store.pendingSpawns(),
    timers: await store.dueTimers(MAX_EPOCH_SECONDS),
  };
}
