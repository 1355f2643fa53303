// A store's clock (#26): the `now` option every store takes (epoch milliseconds, as `Date.now`),
// checked once, and read in seconds. Everything time-based a store does reads it, so a fake
// clock moves all of it.
import { describe } from "./_validate.ts";

/** The `now` option, checked: a function returning epoch milliseconds, as `Date.now`. */
export function checkClock(now: unknown): () => number {
  if (typeof now !== "function") {
    throw new TypeError(`now must be a function (epoch milliseconds), got ${describe(now)}`);
  }
  return now as () => number;
}

/** The clock's time in epoch seconds (fractional), refusing a clock that gives no number. */
export function secondsOf(now: () => number): number {
  const ms = now();
  if (typeof ms !== "number" || !Number.isFinite(ms)) {
    throw new TypeError(`now() must return epoch milliseconds, got ${describe(ms)}`);
  }
  return ms / 1000;
}
