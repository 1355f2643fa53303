// A store's clock (#26): the `now` option every store takes (epoch milliseconds, as `Date.now`),
// checked once, and read in seconds. Everything time-based a store does reads it, so a fake
// clock moves all of it.
import { describe } from "./_validate.ts";

/**
 * The `now` option, checked: a function returning epoch milliseconds, as `Date.now`. One reading
 * is taken here: a clock that gives epoch seconds (`Date.now() / 1000`) reads 1.5e9 to 1e11
 * today and for millennia, which in milliseconds is 1970-01-18 to 1973-03-03; every time a store
 * wrote by it would be in 1970 (dedupe marks and finished executions expired at once for every
 * other reader, timers never due). A fake clock that starts at 0 or at a chosen date passes.
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
