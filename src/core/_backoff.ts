// Exponential backoff with equal jitter, written here because jsr:@std/async cannot be reached.

/**
 * How a retry loop waits between attempts.
 *
 * @example Waiting longer between attempts
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *   backoff: { minDelayMs: 250, maxDelayMs: 5000, multiplier: 2 },
 * });
 * ```
 */
export interface BackoffOptions {
  /** First delay in milliseconds. @default {100} */
  minDelayMs?: number;
  /** Largest delay in milliseconds. @default {2000} */
  maxDelayMs?: number;
  /** Growth factor per attempt. @default {2} */
  multiplier?: number;
}

/**
 * The delay before retry number `attempt` (0-based): "equal jitter", half the capped
 * exponential plus a random share of the other half.
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const { minDelayMs = 100, maxDelayMs = 2000, multiplier = 2 } = options;
  const ceiling = Math.min(maxDelayMs, minDelayMs * multiplier ** attempt);
  // The random half spreads racing writers apart; the fixed half keeps each wait from
  // collapsing to nothing, so a retry never hammers a throttled table.
  return ceiling / 2 + Math.random() * ceiling / 2;
}

/** Sleeps `ms`, rejecting with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** What a wait for an endpoint tells `onRetry` after each failed attempt. */
export interface WaitAttempt {
  endpoint: string;
  attempt: number;
  error: unknown;
  waitedMs: number;
  delayMs: number;
  deadlineMs: number;
}

/** How long and how a wait for an endpoint goes on (the connect options of both clients). */
export interface WaitSettings {
  deadlineMs?: number;
  signal?: AbortSignal;
  onRetry?: (info: WaitAttempt) => void;
  backoff?: BackoffOptions;
}

/**
 * Runs `attempt` until it succeeds, retrying while the endpoint is unreachable, until
 * `deadlineMs` (then `unreachable`) or the signal; `otherwise` maps any other error.
 */
export async function waitUntilAnswers<T>(
  attempt: (until: AbortSignal) => Promise<T>,
  settings: WaitSettings,
  endpoint: string,
  isUnreachable: (error: unknown) => boolean,
  unreachable: (waitedMs: number, cause: unknown) => Error,
  otherwise: (error: unknown) => unknown = (error) => error,
): Promise<T> {
  const { deadlineMs = 30_000, signal, onRetry } = settings;
  if (!(Number.isFinite(deadlineMs) && deadlineMs >= 0)) {
    throw new RangeError(`deadlineMs must be a finite number >= 0, got ${deadlineMs}`);
  }
  if (onRetry !== undefined && typeof onRetry !== "function") {
    throw new TypeError(`onRetry must be a function, got ${typeof onRetry}`);
  }
  const started = Date.now();
  // An endpoint that accepts connections but never answers would hold an attempt forever
  // (the SDK sets no request timeout): the deadline and the signal end the wait anyway.
  const deadline = AbortSignal.timeout(deadlineMs);
  const until = signal ? AbortSignal.any([signal, deadline]) : deadline;
  let lastError: unknown;
  try {
    for (let n = 1;; n++) {
      try {
        until.throwIfAborted();
        return await attempt(until);
      } catch (error) {
        if (until.aborted) throw until.reason; // the SDK's own AbortError says less
        if (!isUnreachable(error)) throw error;
        lastError = error;
      }
      const delayMs = backoffDelay(n - 1, settings.backoff);
      onRetry?.({
        endpoint,
        attempt: n,
        error: lastError,
        waitedMs: Date.now() - started,
        delayMs,
        deadlineMs,
      });
      await sleep(delayMs, until);
    }
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (deadline.aborted && (error === until.reason || isUnreachable(error))) {
      throw unreachable(Date.now() - started, error === until.reason ? lastError ?? error : error);
    }
    throw otherwise(error);
  }
}
