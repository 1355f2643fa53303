// A store's clock: the `now` option every store takes, checked once and read in seconds.
// Everything time-based a store does reads it, so a fake clock moves all of it.
import { describe } from "./_validate.ts";

/**
 * The `now` option, checked with one reading: epoch milliseconds, as `Date.now`. A clock in
 * seconds (1.5e9 to 1e11) would expire everything it writes at once; a fake clock at 0 passes.
 */
export function checkClock(now: unknown): () => number {
  if (typeof now !== "function") {
    throw new TypeError(`now must be a function (epoch milliseconds), got ${describe(now)}`);
  }
  if (now === Date.now) return Date.now;
  const ms = (now as () => unknown)();
  if (typeof ms === "number" && ms >= 1.5e9 && ms < 1e11) {
    throw new RangeError(
      `now() returned ${ms}, in January 1970 as epoch milliseconds: it looks like epoch seconds ` +
        "(Date.now() / 1000); the clock must give epoch milliseconds, as Date.now (multiply by 1000)",
    );
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
