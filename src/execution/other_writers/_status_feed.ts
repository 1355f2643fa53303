// The status feed: the Python store's commit is a whole-item Put that drops `status_shard` and
// `status_at`, so the execution leaves the status index. A round of the executions table's stream
// writes them back (with `updated_at` the record's time), conditioned on the version the record
// shows; rows the stream never showed are found once by a scan, a page per round.
import { EXECUTION, FEED } from "../../core/_layout.ts";
import type { StatusCatchUp } from "../../core/operator_types.ts";
import { batchGet, chunks, type Item, N, S } from "../../dynamo/_dynamo.ts";
import {
  backfillPage,
  createdAt,
  type EntryContext,
  isIndexed,
  putBack,
} from "./_status_entries.ts";
import { type FeedReport, type StreamsSender, TableFeed } from "./_table_feed.ts";

export { FEED_EVERY_MS, streamsClientOf, type StreamsSender } from "./_table_feed.ts";

/** What a round reads and writes with. */
export type FeedContext = EntryContext;

/** A store's side of the status feed: the executions table's feed. */
export class StatusFeed {
  /** The engine reading the executions table's stream. */
  readonly feed: TableFeed<FeedContext>;

  /**
   * `build` builds the Streams client when first needed (null: a client that is not the SDK's,
   * and then there is no feed).
   */
  constructor(build: () => StreamsSender | null) {
    this.feed = new TableFeed<FeedContext>({
      kind: "status",
      table: "executions",
      itemId: FEED.id,
      streams: build,
      handler: putBack,
      ignore: isIndexed,
      backfill: backfillPage,
      missed: "listings by status miss the executions other writers committed last " +
        "(catchUpStatusIndex() throws what it fails with)",
    });
  }

  /** The Streams client, built on first use; null when there is no feed. */
  get streams(): StreamsSender | null {
    return this.feed.streams;
  }

  /** Waits for the round running to end and save where it stopped, destroys the client. */
  close(): Promise<void> {
    return this.feed.close();
  }

  /** A round unless this store read the feed in the last 10 s; never throws. */
  maybe(ctx: FeedContext, signal?: AbortSignal): Promise<void> {
    return this.feed.maybe(ctx, signal);
  }

  /**
   * An operator's view (the CLI): the `limit` most recent executions other writers committed that
   * the status index does not show yet, read without the lease, nothing written. `takes` selects.
   */
  async peek(ctx: FeedContext, limit: number, takes: (item: Item) => boolean): Promise<Item[]> {
    const latest = new Map<string, number>();
    const trim = (keep: number) => {
      if (latest.size <= keep) return;
      const newest = [...latest].sort((a, b) => b[1] - a[1]).slice(0, keep);
      latest.clear();
      for (const [id, at] of newest) latest.set(id, at);
    };
    await this.feed.round(ctx, {
      readOnly: true,
      peek: (records) => {
        for (const record of records) {
          const id = record.dynamodb?.Keys?.[EXECUTION.id]?.S;
          if (id === undefined) continue;
          const image = record.dynamodb?.NewImage as Item | undefined;
          const at = createdAt(record);
          latest.delete(id); // its newest record decides
          if (image === undefined || image[EXECUTION.statusShard] !== undefined) continue;
          if (at === undefined || !takes({ ...image, [EXECUTION.updatedAt]: { N: at } })) continue;
          latest.set(id, Number(at));
        }
        trim(2 * limit);
      },
    });
    trim(2 * limit);
    const table = ctx.tables.executions.name;
    const found: Item[] = [];
    for (const run of chunks([...latest.keys()], 100)) {
      await batchGet(ctx.client, {
        [table]: { Keys: run.map((id) => ({ [EXECUTION.id]: S(id) })), ConsistentRead: true },
      }, (responses) => {
        for (const item of responses[table] ?? []) {
          const at = latest.get(item[EXECUTION.id]?.S ?? "");
          if (at === undefined || item[EXECUTION.statusShard] !== undefined) continue;
          const dated = { ...item, [EXECUTION.updatedAt]: N(at) };
          if (takes(dated)) found.push(dated);
        }
      });
    }
    const when = (item: Item) => Number(item[EXECUTION.updatedAt]!.N);
    return found.sort((a, b) => when(b) - when(a)).slice(0, limit);
  }

  /** One round now (or the one running), as `catchUpStatusIndex()` reports it. */
  async round(ctx: FeedContext, signal?: AbortSignal): Promise<StatusCatchUp> {
    return catchUpOf(await this.feed.round(ctx, { signal }));
  }
}

function catchUpOf(report: FeedReport): StatusCatchUp {
  const { records, handled, scanned, behind, skipped } = report;
  return { records, indexed: handled, scanned, behind, skipped };
}
