// What a store built with `otherWriters: true` runs for the writers that share its tables and
// keep none of this module's attributes (the Python harel store): it finds their outbox entries
// and spawns by seq (_foreign_seqs.ts) and their timers by a scan (_adoption_scan.ts), adopts
// them into the relay index, records its own seq blocks so that their seqs are known
// (_recorded_blocks.ts), and puts the executions they commit back into the status index from the
// executions table's stream (_status_feed.ts). A default store builds none of this: the store's
// context holds this part only when the option is on, and the queue calls it only when present.
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import type { QueueOtherWriters } from "../queue/_queue_items.ts";
import type { ReserveBlock } from "../commit/_seq_blocks.ts";
import { foreignRows, upkeep } from "./_adoption_scan.ts";
import { recordedBlocks } from "./_recorded_blocks.ts";
import { StatusFeed, streamsClientOf } from "./_status_feed.ts";

/** The other writers' part of a store's context. */
export interface OtherWriters extends QueueOtherWriters {
  /** The status feed: other writers' commits put back into the status index. */
  readonly feed: StatusFeed;
  /** How the store's seq blocks are reserved: recorded in the counter item, one per counter. */
  readonly reserve: () => ReserveBlock;
}

/** The part a store built with `otherWriters: true` on `client` runs (nothing is sent yet). */
export function otherWritersOn(client: DynamoDBSender): OtherWriters {
  return {
    upkeep,
    foreignRows,
    feed: new StatusFeed(() => streamsClientOf(client)),
    reserve: recordedBlocks,
  };
}
