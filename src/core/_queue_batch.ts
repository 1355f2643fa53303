// What a store's queue read gives its relayBatch, before the batch is stamped with its time.
import type { RelayItems, RelayKind } from "./relay_types.ts";

/**
 * A batch of a queue without its time: what the reads return, relayBatch adds `now` (and `held`,
 * 0 unless the outbox's read counted some).
 */
export type QueueBatch<K extends RelayKind> = Omit<RelayItems<K>, "now" | "held"> & {
  held?: number;
};
