// What a store built with `otherWriters: true` runs for the writers that share its tables and
// keep none of this module's attributes (the Python harel store): it reads each relay table's
// stream and adopts their outbox entries, spawns and timers into the relay index, chaining the
// outbox entries per target (_adoption_handlers.ts), and puts the executions they commit back
// into the status index from the executions table's stream (_status_feed.ts). A default store
// builds none of this: the store's context holds this part only when the option is on, and the
// queue calls it only when present.
import type { DynamoDBSender, Item } from "../../dynamo/_dynamo.ts";
import type { FeedContext } from "./_feed_lease.ts";
import type { QueueOtherWriters } from "../queue/_queue_items.ts";
import { StatusFeed, streamsClientOf } from "./_status_feed.ts";
import { RelayFeeds } from "./_relay_feeds.ts";

/** The other writers' part of a store's context. */
export interface OtherWriters extends QueueOtherWriters {
  /** The status feed: other writers' commits put back into the status index. */
  readonly feed: StatusFeed;
  /** The relay tables' feeds: other writers' outbox entries, spawns and timers adopted. */
  readonly relayFeeds: RelayFeeds;
  /**
   * The executions other writers committed that `takes` selects, read from the executions
   * table's stream from the feed's checkpoint: at most 2 × `limit`, newest first. Writes nothing
   * (no lease, no checkpoint, no index entry): the CLI's `executions --other-writers`.
   */
  peekUnindexed(ctx: FeedContext, limit: number, takes: (item: Item) => boolean): Promise<Item[]>;
  /** Stops the rounds running, gives their leases back, destroys the Streams clients. */
  close(): Promise<void>;
}

/** The part a store built with `otherWriters: true` on `client` runs (nothing is sent yet). */
export function otherWritersOn(client: DynamoDBSender): OtherWriters {
  const feed = new StatusFeed(() => streamsClientOf(client));
  const relayFeeds = new RelayFeeds(() => streamsClientOf(client));
  return {
    feed,
    relayFeeds,
    round: (q, kind) => relayFeeds.round(q, kind),
    chaining: () => relayFeeds.chaining(),
    peekUnindexed: (ctx, limit, takes) => feed.peek(ctx, limit, takes),
    close: async () => {
      await Promise.all([feed.close(), relayFeeds.close()]);
    },
  };
}
