// What the dashboard reads of the store: each page's reads are bounded by a page size or a cap.
import type { ExecutionSummary, Status } from "../core/documents.ts";
import type { ExecutionInspection, TimerState } from "../core/operator_types.ts";
import { UnreadableExecution } from "../core/errors.ts";
import type {
  DeadLetter,
  ExecutionOutbox,
  ExecutionStore,
  RelayItem,
  RelayKind,
  UnreadableExecutionRow,
} from "../core/types.ts";
import { KINDS } from "./_layout.ts";

/** How many rows each backlog count reads before it says "N+". */
export const SUMMARY_CAP = 100;
/** The most stored rows a listing page reads (at least 3 × `pageSize`): a rare filter pages on. */
export const EXAMINE_BUDGET = 500;

export function examineBudget(pageSize: number): number {
  return Math.max(EXAMINE_BUDGET, 3 * pageSize);
}
/** How long a "Retry all" or "Drop all" request works before answering: before a proxy gives up. */
export const BULK_BUDGET_MS = 20_000;

/** What the first page lists when no status is asked for: the executions still under way. */
export const OPEN_STATUSES: readonly Status[] = ["PENDING", "RUNNING", "SUSPENDED", "CANCELLING"];

/** A count from a read that stops at a cap (`capped`: there may be more). */
export interface CappedCount {
  n: number;
  capped: boolean;
}

/** One queue's card in the backlog summary (the store's `backlog`, each count capped). */
export interface QueueBacklog {
  kind: RelayKind;
  /** Not failed and not delivered yet (timers: due now). */
  pending: CappedCount;
  /** Waiting for a retry after a failed delivery. */
  waiting: CappedCount;
  /** Dead letters. */
  dead: CappedCount;
  /** Outbox: the targets whose later entries wait behind a waiting or dead one. */
  heldTargets: CappedCount;
  /** When the oldest pending item counted was committed (epoch seconds), or null. */
  oldestAt: number | null;
}

export interface ExecutionsPage {
  items: ExecutionSummary[];
  nextCursor: string | null;
  /** The items of this page whose document cannot be read: key and why. */
  unreadable?: UnreadableExecutionRow[];
}

export interface ExecutionFilters {
  /** `"open"` ({@linkcode OPEN_STATUSES}), these statuses, or `"any"` (the table's order). */
  status: "open" | "any" | Status[];
  definition: string | null;
  /** Only those last committed before this time: as given (for links) and in epoch seconds. */
  before: { text: string; seconds: number } | null;
}

/** The statuses a filter lists, or null for every execution (the table's order). */
export function statusesOf(filters: ExecutionFilters): Status[] | null {
  if (filters.status === "any") return null;
  return filters.status === "open" ? [...OPEN_STATUSES] : filters.status;
}

/** One page of executions, O(page); a filter reads at most `examineBudget` rows. */
export async function executionsPage(
  store: ExecutionStore,
  filters: ExecutionFilters,
  options: { limit: number; cursor: string | null; signal?: AbortSignal },
): Promise<ExecutionsPage> {
  const statuses = statusesOf(filters);
  const page = await store.listExecutions({
    ...(statuses === null ? {} : { status: statuses }),
    ...(filters.definition === null ? {} : { definitionId: filters.definition }),
    ...(filters.before === null ? {} : { updatedBefore: filters.before.seconds }),
    limit: options.limit,
    cursor: options.cursor,
    maxExamined: examineBudget(options.limit),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { items: page.items, nextCursor: page.nextCursor, unreadable: page.unreadable ?? [] };
}

/** The backlog of each queue: one `backlog` call per queue, each count capped at `SUMMARY_CAP`. */
export async function backlog(
  store: ExecutionStore,
  signal?: AbortSignal,
): Promise<QueueBacklog[]> {
  const options = { limit: SUMMARY_CAP, ...(signal ? { signal } : {}) };
  const all = await Promise.all(KINDS.map((kind) => store.backlog(kind, options)));
  const capped = (n: number): CappedCount => ({ n, capped: n >= SUMMARY_CAP });
  return all.map((b, i) => ({
    kind: KINDS[i]!,
    pending: capped(b.pending),
    waiting: capped(b.waiting),
    dead: capped(b.dead),
    // Counted among the waiting and dead entries read: more may hide past a capped count.
    heldTargets: { n: b.heldTargets, capped: b.waiting >= SUMMARY_CAP || b.dead >= SUMMARY_CAP },
    oldestAt: b.oldestAt,
  }));
}

/** How many entries each list of an execution's outbox its page shows (`executionOutbox`). */
export const OUTBOX_SHOWN = 50;

/** The most trace steps an execution's page (and a trace page) shows; the rest are a link away. */
export const TRACE_SHOWN = 50;
/** The most timers an execution's page shows (the first by path), and a timers page. */
export const TIMERS_SHOWN = 50;

/** What an execution's page shows of its timers and trace: at most a page of each. */
export interface ExecutionParts {
  /** Its first `TIMERS_SHOWN` timers by path, and whether there are more. */
  timers: TimerState[];
  moreTimers: boolean;
  /** Its newest `TRACE_SHOWN` trace steps, oldest first, and whether there are older. */
  trace: Record<string, unknown>[];
  moreTrace: boolean;
  /** At most `OUTBOX_SHOWN` of each list of its outbox entries. */
  outbox: ExecutionOutbox;
}

/** An execution with a page of its timers, trace and outbox; null when absent. */
export async function executionDetail(
  store: ExecutionStore,
  id: string,
): Promise<
  | (
    & ExecutionParts
    & (
      | { inspection: ExecutionInspection; unreadable: null }
      | { inspection: null; unreadable: UnreadableExecution }
    )
  )
  | null
> {
  const [inspection, timers, trace, outbox] = await Promise.all([
    store.inspectExecution(id, { timerLimit: 0 }).catch((error) => {
      if (error instanceof UnreadableExecution) return error;
      throw error;
    }),
    timerPage(store, id, null),
    tracePage(store, id, null),
    store.executionOutbox(id, { limit: OUTBOX_SHOWN }),
  ]);
  if (inspection === null) return null;
  return inspection instanceof UnreadableExecution
    ? { inspection: null, unreadable: inspection, outbox, ...timers, ...trace }
    : { inspection, unreadable: null, outbox, ...timers, ...trace };
}

/** A page of an execution's timers by path (after `after`), and whether more follow. */
export async function timerPage(
  store: ExecutionStore,
  id: string,
  after: string | null,
): Promise<Pick<ExecutionParts, "timers" | "moreTimers">> {
  const timers = await store.readTimers(id, {
    limit: TIMERS_SHOWN + 1,
    ...(after === null ? {} : { after }),
  });
  return { timers: timers.slice(0, TIMERS_SHOWN), moreTimers: timers.length > TIMERS_SHOWN };
}

/** A page of an execution's trace, the newest steps below `before`, and whether older follow. */
export async function tracePage(
  store: ExecutionStore,
  id: string,
  before: number | null,
): Promise<Pick<ExecutionParts, "trace" | "moreTrace">> {
  const trace = await store.readTrace(id, {
    limit: TRACE_SHOWN + 1,
    ...(before === null ? {} : { before }),
  });
  return { trace: trace.slice(-TRACE_SHOWN), moreTrace: trace.length > TRACE_SHOWN };
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

/** Whom a dead letter was for (null: a broadcast); an unreadable row's, from its attributes. */
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

/** How many dead letters were retried or dropped, and whether it stopped before the end. */
export interface BulkOutcome {
  done: number;
  stopped: boolean;
}

/** Retries (or drops) every dead letter of a queue or outbox target until done or `signal`. */
export async function onEveryDeadLetter(
  store: ExecutionStore,
  kind: RelayKind,
  what: "retry" | "drop",
  target: string | null,
  signal: AbortSignal,
): Promise<BulkOutcome> {
  let done = 0;
  const options = {
    ...(target === null ? {} : { targetId: target }),
    onProgress: (n: number) => void (done = n),
    signal,
  };
  try {
    done = what === "retry"
      ? await store.retryDeadLetters(kind, options)
      : await store.dropDeadLetters(kind, options);
    return { done, stopped: false };
  } catch (error) {
    if (signal.aborted && error === signal.reason) return { done, stopped: true };
    throw error;
  }
}
