// A mixed store's queues: every read first runs its table's feed round, so other writers' rows are
// adopted and offered in the same call (whatever the index shows yet), and an outbox entry the
// feed has not chained yet waits. Each read also nudges the status feed (not awaited).
import type { OutboxQueue, OutboxRow, QueueRow, RowQueue } from "../../core/relay_queues.ts";
import { OUTBOX, TIMER } from "../../core/_layout.ts";
import {
  candidateOf,
  type OutboxContext,
  type OutboxTable,
  rowOf,
} from "../queue/_outbox_table.ts";
import type { RowTable } from "../queue/_row_tables.ts";
import type { RelayFeeds } from "./_relay_feeds.ts";
import type { StatusFeed } from "./_status_feed.ts";

/** The outbox of a mixed store, on `base`. */
export function mixedOutbox(
  base: OutboxTable,
  ctx: OutboxContext,
  feeds: RelayFeeds,
  status: StatusFeed,
): OutboxQueue {
  /** An entry not chained yet waits; so does another writer's while the feed backfills. */
  const marked = (row: OutboxRow): OutboxRow => {
    if (
      (feeds.chaining() && row.prev === undefined) ||
      (feeds.backfilling() && row.sourceId === null)
    ) row.waits = true;
    return row;
  };
  return {
    now: () => base.now(),
    lease: (seconds) => base.lease(seconds),
    candidates(now, signal) {
      void status.maybe(ctx, signal).catch(() => {}); // a pass keeps the status index fresh
      const inner = base.candidates(now);
      let adopted: Promise<ReturnType<typeof candidateOf>[]> | undefined;
      return {
        async next(count) {
          adopted ??= feeds.round(ctx, "outbox", signal).then((items) =>
            items.map((item) =>
              // A row its adoption answered with whole: the pass reads it no more.
              item[OUTBOX.event] === undefined
                ? candidateOf(item)
                : { ...candidateOf(item), row: marked(rowOf(item)) }
            )
          );
          const found = (await adopted).splice(0, count);
          if (found.length < count && !signal?.aborted) {
            found.push(...await inner.next(count - found.length));
          }
          return found;
        },
      };
    },
    async rows(ids) {
      const rows = await base.rows(ids);
      for (const row of rows.values()) marked(row);
      return rows;
    },
    holds: (targets) => base.holds(targets),
    apply: (writes) => base.apply(writes),
  };
}

/** The spawns or timers of a mixed store, on `base`. */
export function mixedRows<K extends "spawns" | "timers">(
  base: RowTable<K>,
  ctx: OutboxContext,
  feeds: RelayFeeds,
  status: StatusFeed,
): RowQueue<K> {
  return {
    now: () => base.now(),
    lease: (seconds) => base.lease(seconds),
    async due(now, limit, signal): Promise<QueueRow<K>[]> {
      void status.maybe(ctx, signal).catch(() => {});
      const adopted = await feeds.round(ctx, base.kind, signal);
      if (signal?.aborted) return [];
      const due = base.kind === "timers"
        ? adopted.filter((row) => Number(row[TIMER.fireAt]?.N) <= now)
        : adopted;
      return [...await base.read(due), ...await base.due(now, limit)];
    },
    fail: (key, failure) => base.fail(key, failure),
  };
}
