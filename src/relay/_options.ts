// The runners' options, checked before anything is read: a bad one is a rejected promise that
// names it and what is allowed.
import { readLimit } from "../core/_bounded.ts";
import { checkRunnerOptions } from "../core/_option_names.ts";
import {
  checkCallback,
  checkInteger,
  checkSignal,
  checkTime,
  describe,
} from "../core/_validate.ts";
import type { Retry } from "../core/_relay_rules.ts";
import type { OutboxRelayOptions, SweepOptions } from "../core/relay_types.ts";

/** What a runner's options may hold (relay_types.ts documents them). */
type RunnerOptions = OutboxRelayOptions & SweepOptions;

const YEAR = 365 * 24 * 3600;

function checkRetry(options: RunnerOptions): Retry {
  const { maxAttempts = 10, backoff = {} } = options;
  if (backoff === null || typeof backoff !== "object") {
    throw new TypeError(
      `backoff must be an object such as { minSeconds: 10, maxSeconds: 3600 }, got ${
        describe(backoff)
      }`,
    );
  }
  const minSeconds = checkSeconds("backoff.minSeconds", backoff.minSeconds ?? 10);
  const maxSeconds = checkSeconds("backoff.maxSeconds", backoff.maxSeconds ?? 3600);
  if (maxSeconds < minSeconds) {
    throw new RangeError(
      `backoff.maxSeconds (${maxSeconds}) must not be below backoff.minSeconds (${minSeconds})` +
        (minSeconds >= 1000
          ? `; both are seconds, not milliseconds (${minSeconds} ms is minSeconds: ${
            minSeconds / 1000
          })`
          : ""),
    );
  }
  return {
    maxAttempts: maxAttempts === Infinity
      ? Infinity
      : checkInteger("maxAttempts", maxAttempts, 1, 1000),
    minSeconds,
    maxSeconds,
  };
}

function checkSeconds(field: string, value: unknown): number {
  if (typeof value !== "number" || !(value >= 0 && value <= YEAR)) {
    throw new RangeError(
      `${field} must be seconds from 0 to ${YEAR} (one year), got ${describe(value)}${
        typeof value === "number" && value > YEAR ? " (milliseconds? it is in seconds)" : ""
      }`,
    );
  }
  return value;
}

/** A runner's options, checked before anything is read. */
export interface CheckedOptions {
  limit: number;
  concurrency: number;
  signal: AbortSignal | undefined;
  onError: ((error: unknown) => void) | undefined;
  retry: Retry;
  /** `relayOutbox`: deliver just these seqs. */
  seqs?: number[];
  /** `sweepTimers`: the time timers are due at (undefined: the store's clock). */
  now?: number;
}

/** The options of a runner taking `callback`, checked (a sweep's `now` too). */
export function checkOptions(
  field: string,
  callback: unknown,
  options: RunnerOptions,
): CheckedOptions {
  if (typeof callback !== "function") {
    throw new TypeError(`${field} must be a function, got ${describe(callback)}`);
  }
  if (options === null || typeof options !== "object") {
    throw new TypeError(`options must be an object, got ${describe(options)}`);
  }
  checkRunnerOptions(field, options);
  const { concurrency = 16, signal, onError } = options;
  checkSignal(signal);
  checkCallback("onError", onError);
  return {
    limit: readLimit({ limit: options.limit }),
    concurrency: checkInteger("concurrency", concurrency, 1, 1000),
    signal,
    onError,
    retry: checkRetry(options),
    seqs: options.seqs,
    now: options.now === undefined ? undefined : checkTime("now", options.now),
  };
}
