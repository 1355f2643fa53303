// What a store built with `otherWriters: true` runs for the writers that share its tables and keep
// none of this module's attributes (the Python harel store): loaded only by such a store. It reads
// each relay table's stream and adopts their rows, chaining outbox entries per target, and puts the
// executions they commit back into the status index (_status_feed.ts).
import type { DynamoDBSender, Item } from "../../dynamo/_dynamo.ts";
import type { OutboxQueue, RowQueue } from "../../core/relay_queues.ts";
import type { RelayKind } from "../../core/types.ts";
import type { OutboxContext, OutboxTable } from "../queue/_outbox_table.ts";
import type { RowTable } from "../queue/_row_tables.ts";
import type { FeedContext } from "./_feed_lease.ts";
import { StatusFeed, streamsClientOf } from "./_status_feed.ts";
import { RelayFeeds } from "./_relay_feeds.ts";
import { mixedOutbox, mixedRows } from "./_mixed_queues.ts";

/** The other writers' part of a store's context. */
export interface OtherWriters {
  /** The status feed: other writers' commits put back into the status index. */
  readonly feed: StatusFeed;
  /** The store's outbox as a mixed store reads it. */
  outbox(base: OutboxTable): OutboxQueue;
  /** The store's spawns or timers as a mixed store reads them. */
  rows<K extends "spawns" | "timers">(base: RowTable<K>): RowQueue<K>;
  /** A round of `kind`'s table feed now: the rows it adopted. */
  round(kind: RelayKind): Promise<Item[]>;
  /**
   * The executions other writers committed that `takes` selects, from the stream (at most 2 ×
   * `limit`, newest first), writing nothing: the CLI's `executions --other-writers`.
   */
  peekUnindexed(ctx: FeedContext, limit: number, takes: (item: Item) => boolean): Promise<Item[]>;
  /** Stops the rounds running, gives their leases back, destroys the Streams clients. */
  close(): Promise<void>;
}

/**
 * The part a store built with `otherWriters: true` runs on `ctx` (nothing is sent yet); its
 * Streams clients are built from `client`'s configuration.
 */
export function otherWritersOn(ctx: OutboxContext, client: DynamoDBSender): OtherWriters {
  const feed = new StatusFeed(() => streamsClientOf(client));
  const relayFeeds = new RelayFeeds(() => streamsClientOf(client));
  return {
    feed,
    outbox: (base) => mixedOutbox(base, ctx, relayFeeds, feed),
    rows: (base) => mixedRows(base, ctx, relayFeeds, feed),
    round: (kind) => relayFeeds.round(ctx, kind),
    peekUnindexed: (feedCtx, limit, takes) => feed.peek(feedCtx, limit, takes),
    close: async () => {
      await Promise.all([feed.close(), relayFeeds.close()]);
    },
  };
}
