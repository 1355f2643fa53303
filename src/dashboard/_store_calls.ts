// Everything the dashboard asks of the store, in one place: each page's reads and each action,
// mapped onto the `ExecutionStore` calls that exist. Every read is bounded by a page size or a
// cap, so a page's memory and store calls do not grow with the tables. Where a call the store
// does not have yet would serve a page better (a listing newest first, per-target bulk retries,
// a backlog summary), it slots in here and the pages do not change.
import type { Execution, ExecutionSummary, Status } from "../core/documents.ts";
import type { DeadLetter, ExecutionStore, RelayItem, RelayKey, RelayKind } from "../core/types.ts";

/** How far the backlog summary counts before it says "N+". */
export const SUMMARY_CAP = 100;
/** How many dead letters one "Retry all" or "Drop all" looks at. */
export const BULK_CAP = 1000;
/** How many bulk retries or drops run at once. */
const BULK_CONCURRENCY = 8;

/** A count from a read that stops at a cap. */
export interface CappedCount {
  /** Items counted. */
  n: number;
  /** Whether the read stopped at its cap (there may be more). */
  capped: boolean;
}

/** One queue's line in the backlog summary. */
export interface QueueBacklog {
  /** The queue. */
  kind: RelayKind;
  /** Items a relay pass would deliver now. */
  ready: CappedCount;
  /** Dead letters. */
  dead: CappedCount;
  /**
   * In epoch seconds: when the oldest ready outbox entry's event was made, the oldest pending
   * (not dead) spawn was written, the earliest due timer was due; null when none says.
   */
  oldestAt: number | null;
}

/** A page of the executions listing. */
export interface ExecutionsPage {
  /** The summaries of this page. */
  items: ExecutionSummary[];
  /** The cursor of the next page, or null. */
  nextCursor: string | null;
}

/** The filters of the executions listing. */
export interface ExecutionFilters {
  /** Only these statuses (none: every status). */
  statuses: Status[];
  /** Only this definition, or null. */
  definition: string | null;
}

/** One page of executions, in the store's listing order. */
export async function executionsPage(
  store: ExecutionStore,
  filters: ExecutionFilters,
  options: { limit: number; cursor: string | null },
): Promise<ExecutionsPage> {
  const page = await store.listExecutions({
    ...(filters.statuses.length ? { status: filters.statuses } : {}),
    ...(filters.definition === null ? {} : { definitionId: filters.definition }),
    limit: options.limit,
    cursor: options.cursor,
  });
  return { items: page.items, nextCursor: page.nextCursor };
}

/**
 * The backlog of each queue, each count capped at `SUMMARY_CAP`: the reads a relay pass makes,
 * side-effect free (the outbox through `pendingOutbox`: a pass's own read of it also records
 * the held targets for the next pass, a write a page must not make).
 */
export async function backlog(store: ExecutionStore, now: number): Promise<QueueBacklog[]> {
  const cap = { limit: SUMMARY_CAP };
  const capped = (n: number): CappedCount => ({ n, capped: n >= SUMMARY_CAP });
  const [outbox, spawns, timers, ...dead] = await Promise.all([
    store.pendingOutbox(cap),
    store.relayBatch("spawns", { ...cap, now }),
    store.relayBatch("timers", { ...cap, now }),
    store.deadLetters("outbox", cap),
    store.deadLetters("spawns", cap),
    store.deadLetters("timers", cap),
  ]);
  const outboxOldest = outbox.reduce<number | null>((oldest, entry) => {
    const at = Date.parse(entry.event.created_time ?? "") / 1000;
    return Number.isFinite(at) && (oldest === null || at < oldest) ? at : oldest;
  }, null);
  return [
    {
      kind: "outbox",
      ready: capped(outbox.length),
      dead: capped(dead[0]!.length),
      oldestAt: outboxOldest,
    },
    {
      kind: "spawns",
      ready: capped(spawns.items.length + spawns.unreadable.length),
      dead: capped(dead[1]!.length),
      oldestAt: spawns.oldestAt,
    },
    {
      kind: "timers",
      ready: capped(timers.items.length + timers.unreadable.length),
      dead: capped(dead[2]!.length),
      oldestAt: timers.oldestAt,
    },
  ];
}

/** An execution and its trace, or null when there is no such execution. */
export async function executionDetail(
  store: ExecutionStore,
  id: string,
): Promise<{ execution: Execution; trace: Record<string, unknown>[] } | null> {
  const [execution, trace] = await Promise.all([store.load(id), store.readTrace(id)]);
  return execution === null ? null : { execution, trace };
}

/** The `limit` lowest dead letters of a queue, and whether there may be more. */
export async function deadLetterPage<K extends RelayKind>(
  store: ExecutionStore,
  kind: K,
  limit: number,
): Promise<{ letters: DeadLetter<K>[]; more: boolean }> {
  const letters = await store.deadLetters(kind, { limit });
  return { letters, more: letters.length >= limit };
}

/**
 * Whom a dead letter was for: an outbox entry's target (null: a broadcast), a spawn's child,
 * a timer's execution. An unreadable row's target is read from its stored attributes.
 */
export function targetOf<K extends RelayKind>(kind: K, letter: DeadLetter<K>): string | null {
  const item = letter.item as RelayItem<RelayKind> | null;
  if (item !== null) {
    if ("targetId" in item) return item.targetId;
    if ("childId" in item) return item.childId;
    return item.executionId;
  }
  const field = kind === "outbox" ? "target_id" : kind === "spawns" ? "child_id" : "execution_id";
  const value = letter.raw[field];
  return typeof value === "string" ? value : null;
}

/** Makes one dead letter due again: false when there is no such dead letter any more. */
export function retryOne<K extends RelayKind>(
  store: ExecutionStore,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  return store.retryDeadLetter(kind, key);
}

/** Drops one dead letter: false when there is no such dead letter any more. */
export function dropOne<K extends RelayKind>(
  store: ExecutionStore,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  return store.dropDeadLetter(kind, key);
}

/** What a bulk action did. */
export interface BulkOutcome {
  /** Dead letters retried or dropped. */
  done: number;
  /** Whether the read stopped at its cap: there may be more to do. */
  more: boolean;
}

/**
 * Retries (or drops) the dead letters of a queue, or of one outbox target: the `BULK_CAP`
 * lowest dead letters are read, and each that matches is retried (dropped) on its own, as an
 * operator would one by one. A letter retried, dropped or delivered meanwhile is not counted.
 */
export async function onEveryDeadLetter<K extends RelayKind>(
  store: ExecutionStore,
  kind: K,
  what: "retry" | "drop",
  target?: string,
): Promise<BulkOutcome> {
  const letters = await store.deadLetters(kind, { limit: BULK_CAP });
  const chosen = target === undefined
    ? letters
    : letters.filter((letter) => targetOf(kind, letter) === target);
  let done = 0;
  for (let i = 0; i < chosen.length; i += BULK_CONCURRENCY) {
    const results = await Promise.all(
      chosen.slice(i, i + BULK_CONCURRENCY).map((letter) =>
        what === "retry"
          ? store.retryDeadLetter(kind, letter.key)
          : store.dropDeadLetter(kind, letter.key)
      ),
    );
    done += results.filter(Boolean).length;
  }
  return { done, more: letters.length >= BULK_CAP };
}

/** Deletes an execution with its timers, trace and dedupe marks: false when there was none. */
export async function deleteOne(store: ExecutionStore, id: string): Promise<boolean> {
  return (await store.deleteExecution(id)).execution;
}
