// A relay pass's read and writes without a callback: what the runners hand out (the outbox's
// entries set apart, released, as a pass would), for tests that take the items themselves.
import { applyPlan, readOutbox } from "../../src/core/_outbox_pipeline.ts";
import { decideDue } from "../../src/core/_relay_rules.ts";
import type { ExecutionStore, OutboxEntry, PendingSpawn, Timer } from "../../mod.ts";

/** What a pass of one queue hands out, and (outbox) how many it left behind held targets. */
export interface HandedOut<T> {
  items: { item: T; attempts: number }[];
  held: number;
}

/** The outbox entries a pass hands out at `now` (its writes made); with `seqs`, just those. */
export async function passOutbox(
  store: ExecutionStore,
  { limit = 1000, now, seqs }: { limit?: number; now?: number; seqs?: number[] } = {},
): Promise<HandedOut<OutboxEntry>> {
  const queue = store.outboxQueue;
  const plan = await readOutbox(queue, { now: now ?? queue.now(), limit, seqs });
  if (seqs === undefined) await applyPlan(queue, plan);
  const items = plan.deliver.flatMap((row) =>
    "error" in row.entry ? [] : [{ item: row.entry, attempts: row.attempts }]
  );
  return { items, held: plan.held };
}

/** The spawns or timers a pass hands out at `now`. */
export async function passRows<K extends "spawns" | "timers">(
  store: ExecutionStore,
  kind: K,
  { limit = 1000, now }: { limit?: number; now?: number } = {},
): Promise<HandedOut<K extends "spawns" ? PendingSpawn : Timer>> {
  const queue = (kind === "spawns" ? store.spawnQueue : store.timerQueue) as ExecutionStore[
    "spawnQueue"
  ];
  const at = now ?? queue.now();
  const { items } = decideDue(await queue.due(at, limit), at, limit);
  return { items, held: 0 } as HandedOut<K extends "spawns" ? PendingSpawn : Timer>;
}
