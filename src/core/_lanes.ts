// The one concurrency pool: a few lanes working through a list, for the stores' batched reads
// and writes and for the relay's deliveries (which stop early, see relay.ts's inLanes).

/**
 * Runs `task` on every item, at most `limit` at a time; rejects with the first failure. With
 * `stop`, a lane takes no further item once `stop()` is true (the items already started finish).
 */
export async function eachConcurrently<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
  stop?: () => boolean,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length && !stop?.()) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/** How many BatchGetItem calls one read keeps in flight. */
export const GETS_IN_FLIGHT = 4;

/** How many batch writes or shard Queries one operation keeps in flight (within 50 sockets). */
export const WRITES_IN_FLIGHT = 16;

/** How many single-item writes and small transactions one operation keeps in flight. */
export const ITEM_WRITES_IN_FLIGHT = 8;
