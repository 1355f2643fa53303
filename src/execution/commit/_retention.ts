// Retention of finished executions: the `ttl` a commit leaves on the execution item, and
// what every read and commit counts as expired. DynamoDB deletes expired items up to days late,
// so an execution past its ttl is absent to this module however long DynamoDB still keeps it.
// Shared by DynamoDBStore and the memory twin, so both expire exactly alike.
import { type Item, N, S } from "../../core/_attributes.ts";
import { EXECUTION } from "../../core/_layout.ts";
import type { Status } from "../../core/documents.ts";
import { checkInteger } from "../../core/_validate.ts";

export { checkClock, secondsOf } from "../../core/_clock.ts";

/** The statuses an execution does not leave by itself: a commit to one of them starts its retention. */
export const FINISHED: ReadonlySet<Status> = new Set<Status>(["DONE", "CANCELLED", "FAILED"]);

/** The longest retention: ten years, as for dedupe marks. */
const MAX_FINISHED_TTL = 10 * 365 * 86_400;

/** `finishedTtlSeconds`, checked: `null` (keep forever) or whole seconds from 1 to ten years. */
export function checkFinishedTtl(value: unknown): number | null {
  if (value === null) return null;
  if (typeof value === "number" && Number.isInteger(value) && value > MAX_FINISHED_TTL) {
    throw new RangeError(
      `finishedTtlSeconds must be an integer from 1 to ${MAX_FINISHED_TTL} (ten years), got ${value}: ` +
        `it is in seconds (${value} ms would be ${Math.round(value / 1000)})`,
    );
  }
  return checkInteger("finishedTtlSeconds", value, 1, MAX_FINISHED_TTL);
}

/**
 * The expiry a commit that leaves the execution in `status` writes (epoch seconds), or `null`:
 * the commit removes any expiry (an open execution never expires, and a store without
 * `finishedTtlSeconds` keeps what it finishes).
 */
export function expiryFor(
  status: Status,
  finishedTtl: number | null,
  nowSeconds: number,
): number | null {
  return finishedTtl !== null && FINISHED.has(status) ? Math.floor(nowSeconds) + finishedTtl : null;
}

/**
 * Whether an execution item's `ttl` has passed at `nowSeconds`, as DynamoDB's TTL reads it: a
 * number at or before now. Any other `ttl` (none, a string, a boolean, NULL, milliseconds far
 * ahead) never expires, for DynamoDB as here. The one rule of expiry: every read applies it,
 * and every condition below says it in DynamoDB's words.
 */
export function isExpired(item: Item, nowSeconds: number): boolean {
  const ttl = item[EXECUTION.ttl]?.N;
  return ttl !== undefined && Number(ttl) <= nowSeconds;
}

/**
 * The item is alive: {@linkcode isExpired} is false. `#ttl` is the execution's `ttl`, the
 * values are {@linkcode livenessValues}': a `ttl` that is no number (another writer's text,
 * a boolean, NULL) never expires.
 */
export const ALIVE = "(attribute_not_exists(#ttl) OR NOT attribute_type(#ttl, :n) OR #ttl > :now)";
/**
 * The item is absent or expired, so an insert may take its place: `#id` and `#ttl` the
 * execution's, `:now` the time (a `ttl` of another type compares false: alive).
 */
export const ABSENT = "(attribute_not_exists(#id) OR #ttl <= :now)";

/** The values {@linkcode ALIVE} reads: the time (`:now`, epoch seconds) and the type `N`. */
export function livenessValues(nowSeconds: number): Item {
  return { ":now": N(nowSeconds), ":n": S("N") };
}
