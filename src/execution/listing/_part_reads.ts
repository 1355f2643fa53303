// The options of the reads of one execution's parts (trace, timers, inspection), checked once for
// both stores.
import { checkLimit } from "../../core/_bounded.ts";
import { checkOptionsOf } from "../../core/_option_names.ts";
import { checkKey, describe, LIMITS } from "../../core/_validate.ts";
import type {
  InspectOptions,
  TimerReadOptions,
  TraceReadOptions,
} from "../../core/operator_types.ts";

/** A checked trace read: the newest `limit` steps below `before` (null: from the newest). */
export interface TraceRead {
  limit: number;
  before: number | null;
  /** Whether it reads the whole trace (no option given): the ring's plain read. */
  whole: boolean;
}

/** `readTrace`'s options, checked (a TypeError or RangeError naming the option). */
export function planTraceRead(options: TraceReadOptions | undefined): TraceRead {
  const given = checkOptionsOf("readTrace()", options);
  const limit = given.limit === undefined ? Infinity : checkLimit("limit", given.limit);
  const { before } = given;
  if (before !== undefined && (typeof before !== "number" || !Number.isSafeInteger(before))) {
    throw new RangeError(`before must be a trace index (an integer), got ${describe(before)}`);
  }
  return { limit, before: before ?? null, whole: limit === Infinity && before === undefined };
}

/** A checked timer read: the first `limit` timers by path, after `after` (null: the first). */
export interface TimerRead {
  limit: number;
  after: string | null;
}

/** `readTimers`' options, checked. */
export function planTimerRead(options: TimerReadOptions | undefined): TimerRead {
  const given = checkOptionsOf("readTimers()", options);
  const limit = given.limit === undefined ? Infinity : checkLimit("limit", given.limit);
  const after = given.after === undefined
    ? null
    : checkKey("after", given.after, LIMITS.sortKeyBytes);
  return { limit, after };
}

/** `inspectExecution`'s options, checked: how many timers it reads (0 to Infinity). */
export function planInspect(options: InspectOptions | undefined): number {
  const given = checkOptionsOf("inspectExecution()", options);
  const { timerLimit = Infinity } = given;
  if (timerLimit === 0 || timerLimit === Infinity) return timerLimit;
  if (typeof timerLimit !== "number" || !Number.isSafeInteger(timerLimit) || timerLimit < 0) {
    throw new RangeError(
      `timerLimit must be 0 (no timers), a positive integer or Infinity, got ${
        describe(timerLimit)
      }`,
    );
  }
  return timerLimit;
}

/** Timers by path, as the timers table's sort key orders them (the memory twin's order). */
export function byPath<T extends { path: string }>(a: T, b: T): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}
