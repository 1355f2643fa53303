// Checks of what the relay methods take (both execution stores): refused before anything is sent.
import { checkOptionNames } from "../../core/_option_names.ts";
import {
  checkCallback,
  checkInteger,
  checkKey,
  checkObject,
  checkSignal,
  checkTime,
  describe,
  LIMITS,
} from "../../core/_validate.ts";
import type { RelayFailure, RelayKind } from "../../core/types.ts";

const KINDS: readonly RelayKind[] = ["outbox", "spawns", "timers"];

/** A queue's name: `"outbox"`, `"spawns"` or `"timers"`. */
export function checkRelayKind(kind: unknown): RelayKind {
  if (!KINDS.includes(kind as RelayKind)) {
    throw new TypeError(`kind must be "outbox", "spawns" or "timers", got ${describe(kind)}`);
  }
  return kind as RelayKind;
}

/** A key of that queue: a seq as stored (any finite number), or a timer. */
export function checkRelayKey(kind: unknown, key: unknown): void {
  if (checkRelayKind(kind) === "timers") {
    const timer = checkObject("key", key as Record<string, unknown>);
    checkKey("key.executionId", timer.executionId, LIMITS.partitionKeyBytes);
    checkKey("key.path", timer.path, LIMITS.sortKeyBytes);
    checkTime("key.fireAt", timer.fireAt);
  } else if (typeof key !== "number" || !Number.isFinite(key)) {
    // Not only the seqs this module hands out: another writer's row is set aside by its own key.
    throw new TypeError(`key must be a seq (a finite number), got ${describe(key)}`);
  }
}

/** A failure record: whole attempts ≥ 1, a retry time in epoch seconds or null, an error text. */
export function checkFailure(failure: unknown): RelayFailure {
  const f = checkObject("failure", failure as Record<string, unknown>);
  checkInteger("failure.attempts", f.attempts, 1, Number.MAX_SAFE_INTEGER);
  if (f.retryAt !== null) checkTime("failure.retryAt", f.retryAt);
  if (typeof f.error !== "string") {
    throw new TypeError(`failure.error must be a string, got ${describe(f.error)}`);
  }
  if (f.unreadable !== undefined && typeof f.unreadable !== "boolean") {
    throw new TypeError(`failure.unreadable must be a boolean, got ${describe(f.unreadable)}`);
  }
  if (f.unreadable && f.retryAt !== null) {
    throw new TypeError("failure.unreadable sets a row aside: its retryAt must be null");
  }
  return f as unknown as RelayFailure;
}

/**
 * The options of `deadLetters`: known names only (a misspelt `targetId` must not list every
 * target's), and a `targetId` filter (outbox only, a string or `null`; undefined: every target).
 */
export function checkTargetFilter(
  kind: RelayKind,
  options: { targetId?: unknown } | undefined,
): string | null | undefined {
  if (typeof options === "object" && options !== null) {
    checkOptionNames("deadLetters()", options);
  }
  return targetFilter(kind, options?.targetId);
}

function targetFilter(kind: RelayKind, targetId: unknown): string | null | undefined {
  if (targetId === undefined) return undefined;
  if (kind !== "outbox") {
    throw new TypeError(`options.targetId is for the outbox only, not ${kind}`);
  }
  if (targetId !== null) checkKey("options.targetId", targetId, LIMITS.itemBytes);
  return targetId as string | null;
}

/**
 * The options of `retryDeadLetters` / `dropDeadLetters`, checked before anything is sent: a name
 * it does not know is refused (`{ target: "payments" }` would otherwise act on every target).
 */
export function checkBulkOptions(
  kind: unknown,
  options: unknown,
  method: "retryDeadLetters()" | "dropDeadLetters()",
): void {
  checkRelayKind(kind);
  const o = checkObject("options", options as Record<string, unknown>);
  checkOptionNames(method, o);
  targetFilter(kind as RelayKind, o.targetId);
  checkCallback("options.onProgress", o.onProgress);
  checkSignal(o.signal, "options.signal");
}

/** The `limit` of `backlog`: 1 to 10,000 rows per count (no other option). */
export function checkBacklogLimit(options: unknown): number {
  const o = checkObject("options", (options ?? {}) as Record<string, unknown>);
  checkOptionNames("backlog()", o);
  checkSignal(o.signal, "options.signal");
  return o.limit === undefined ? 1000 : checkInteger("options.limit", o.limit, 1, 10_000);
}

/** The default and the most entries each list of `executionOutbox` holds. */
export const EXECUTION_OUTBOX_LIMIT = { default: 100, max: 1000 } as const;

/** `executionOutbox`'s id and options, checked: the limit of each list. */
export function checkExecutionOutbox(id: string, options: unknown): number {
  checkKey("id", id, LIMITS.partitionKeyBytes);
  const o = checkObject("options", (options ?? {}) as Record<string, unknown>);
  checkOptionNames("executionOutbox()", o);
  const { default: fallback, max } = EXECUTION_OUTBOX_LIMIT;
  return o.limit === undefined ? fallback : checkInteger("options.limit", o.limit, 1, max);
}
