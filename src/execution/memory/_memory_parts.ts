// MemoryStore's reads of one execution's parts as DynamoDBStore reads them: a page of its timers
// by path (the timers table's sort key), a page of its trace (the newest steps below an index).
import type { Timer } from "../../core/types.ts";
import type { TimerState } from "../../core/operator_types.ts";
import type { Bookkeeping } from "./_memory_queues.ts";
import { byPath } from "../listing/_part_reads.ts";

/** The first `limit` timers of execution `id` by path, after `after`, with their bookkeeping. */
export function timersOf(
  timers: Iterable<Timer & Partial<Bookkeeping>>,
  id: string,
  limit: number,
  after: string | null,
): TimerState[] {
  return [...timers]
    .filter((t) => t.executionId === id && (after === null || t.path > after))
    .sort(byPath)
    .slice(0, limit)
    .map((t) => ({
      executionId: t.executionId,
      path: t.path,
      fireAt: t.fireAt,
      attempts: t.attempts ?? 0,
      retryAt: t.retryAt ?? null,
      deadAt: t.deadAt ?? null,
      lastError: t.lastError ?? null,
    }));
}

/** The newest `limit` steps of a ring (index → JSON) below `before`, oldest first. */
export function tracePage(
  ring: ReadonlyMap<number, string>,
  limit: number,
  before: number | null,
): Record<string, unknown>[] {
  const steps = [...ring].filter(([index]) => before === null || index < before)
    .sort(([a], [b]) => a - b);
  return steps.slice(limit === Infinity ? 0 : Math.max(0, steps.length - limit))
    .map(([index, entry]) => ({ ...JSON.parse(entry), index }));
}
