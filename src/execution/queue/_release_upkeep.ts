// One outbox pass's upkeep: it finishes the releases a crash left half done (see RELEASES in
// core/_layout.ts), a few a pass, in both modes.
import { batchGet, type Item, S } from "../../dynamo/_dynamo.ts";
import { COUNTER, RELEASES } from "../../core/_layout.ts";
import { finishReleases } from "./_holds.ts";
import type { QueueContext } from "./_queue_items.ts";

/** How many stale release marks one pass finishes. */
export const RELEASES_PER_PASS = 10;

/** Finishes the stale releases of the outbox (the marks read strongly, in one BatchGetItem). */
export async function finishCrashedReleases(q: QueueContext): Promise<void> {
  const table = q.tables.counters.name;
  let item: Item | undefined;
  await batchGet(q.timers.client, {
    [table]: { Keys: [{ [COUNTER.id]: S(RELEASES.id) }], ConsistentRead: true },
  }, (responses) => {
    item ??= responses[table]?.[0];
  });
  const marks = [...item?.[RELEASES.targets]?.SS ?? []];
  if (marks.length > 0) await finishReleases(q, marks, RELEASES_PER_PASS);
}
