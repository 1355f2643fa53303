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
