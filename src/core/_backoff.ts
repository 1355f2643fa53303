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
