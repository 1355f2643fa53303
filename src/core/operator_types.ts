/**
 * The shapes of the operator calls on executions: bulk deletes, and one execution at once.
 *
 * @module
 */
import type { Execution, Status } from "./documents.ts";

/**
 * Options of `deleteExecutions`: which executions go. `status` and `updatedBefore` are required,
 * so that a bulk delete always says what it takes.
 *
 * @example Finished orders untouched for a year
 * ```ts
 * import type { DeleteExecutionsOptions } from "@harel/dynamodb";
 *
 * const options: DeleteExecutionsOptions = {
 *   status: ["DONE", "CANCELLED", "FAILED"],
 *   definitionId: "order",
 *   updatedBefore: Date.now() / 1000 - 365 * 86_400,
 *   onProgress: ({ deleted, examined }) => console.error(`${deleted} of ${examined}`),
 * };
 * ```
 */
export interface DeleteExecutionsOptions {
  /** Only executions in this status (or these): finished ones unless `allowOpen`. */
  status: Status | Status[];
  /** Only executions this module last committed before this time, epoch seconds. */
  updatedBefore: number;
  /** Only this definition. @default {undefined} */
  definitionId?: string;
  /** Also delete open executions: they stop mid-flight, with their timers. @default {false} */
  allowOpen?: boolean;
  /**
   * Scan the whole executions table instead of the status index: also finds the Python store's
   * executions. @default {false}
   */
  scan?: boolean;
  /**
   * Also take executions whose last commit time is unknown (the Python store's), unchecked
   * against `updatedBefore`. Mostly with `scan`. @default {false}
   */
  includeUndated?: boolean;
  /** Called after each batch of executions examined, with the totals so far. @default {undefined} */
  onProgress?: (progress: DeleteProgress) => void;
  /** Stops the run between batches; it resolves with how many it deleted. @default {undefined} */
  signal?: AbortSignal;
}

/**
 * How far a `deleteExecutions` run is.
 *
 * @example A progress line
 * ```ts
 * import type { DeleteProgress } from "@harel/dynamodb";
 *
 * const line = ({ deleted, elapsedMs }: DeleteProgress) =>
 *   `${deleted} deleted, ${(deleted / (elapsedMs / 1000)).toFixed(0)}/s`;
 * ```
 */
export interface DeleteProgress {
  /** Executions deleted so far. */
  deleted: number;
  /** Executions looked at so far (deleted, or skipped: committed since they were listed). */
  examined: number;
  /** Milliseconds since the run started. */
  elapsedMs: number;
}

/**
 * A timer of an execution with a relay's bookkeeping on it.
 *
 * @example Telling a dead-lettered timer
 * ```ts
 * import type { TimerState } from "@harel/dynamodb";
 *
 * const dead = (timer: TimerState) => timer.deadAt !== null;
 * ```
 */
export interface TimerState {
  /** The execution it belongs to. */
  executionId: string;
  /** Its state path. */
  path: string;
  /** When it fires, epoch seconds. */
  fireAt: number;
  /** Failed attempts to fire it. */
  attempts: number;
  /** When the next attempt may start (epoch seconds), or `null`. */
  retryAt: number | null;
  /** When it was dead-lettered (epoch seconds), or `null`. */
  deadAt: number | null;
  /** The last error a relay recorded, or `null`. */
  lastError: string | null;
}

/**
 * What one round of {@linkcode DynamoDBStore.catchUpStatusIndex} did: the executions another
 * writer's whole-item `Put` took out of the status index, put back from the table's stream.
 *
 * @example Catching up before a report
 * ```ts
 * import type { StatusCatchUp } from "@harel/dynamodb";
 *
 * const round: StatusCatchUp = { records: 3, indexed: 2, scanned: 0, behind: false, skipped: null };
 * console.log(`${round.indexed} executions put back${round.behind ? ", more to read" : ""}`);
 * ```
 */
export interface StatusCatchUp {
  /** Change records read from the stream. */
  records: number;
  /** Executions written back into the status index. */
  indexed: number;
  /** Rows examined by the one-off scan for rows the stream never showed (0 once it is done). */
  scanned: number;
  /** More is waiting: the next round goes on from where this one stopped. */
  behind: boolean;
  /**
   * Why nothing was read: `"off"` (no `otherWriters: true`, or not the SDK's client), `"no
   * stream"` (run `ensureTables()`), `"leased"` (another store is reading it); `null` if it ran.
   */
  skipped: "off" | "no stream" | "leased" | null;
}

/**
 * One execution as an operator sees it (`inspectExecution`): the document, when it was last
 * committed, when it expires, and its timers.
 *
 * @example When a finished execution goes
 * ```ts
 * import type { ExecutionInspection } from "@harel/dynamodb";
 *
 * const expiry = (seen: ExecutionInspection) =>
 *   seen.expiresAt === null ? "kept" : new Date(seen.expiresAt * 1000).toISOString();
 * ```
 */
export interface ExecutionInspection {
  /** The execution document. */
  execution: Execution;
  /** When this module last committed it, epoch seconds; `null` when unknown. */
  updatedAt: number | null;
  /** When it expires (its `ttl`, epoch seconds; `finishedTtlSeconds`), or `null`: never. */
  expiresAt: number | null;
  /** Its armed timers, earliest first, with their relay bookkeeping. */
  timers: TimerState[];
}

/**
 * Options of `readTrace`: a page of an execution's trace, taken from the newest (each page
 * oldest first), for a trace too long to read at once.
 *
 * @example The 50 newest steps, then the 50 before them
 * ```ts
 * import type { ExecutionStore, TraceReadOptions } from "@harel/dynamodb";
 *
 * async function twoPages(store: ExecutionStore, id: string): Promise<number> {
 *   const newest = await store.readTrace(id, { limit: 50 });
 *   if (newest.length === 0) return 0;
 *   const options: TraceReadOptions = { limit: 50, before: newest[0]!.index as number };
 *   return newest.length + (await store.readTrace(id, options)).length;
 * }
 * ```
 */
export interface TraceReadOptions {
  /** At most this many steps: the newest (below `before`), oldest first. @default {Infinity} */
  limit?: number;
  /** Only steps whose `index` is below this (the page before's oldest). @default {undefined} */
  before?: number;
}

/**
 * Options of `readTimers`: a page of an execution's timers, by path.
 *
 * @example Every timer, 100 at a time
 * ```ts
 * import type { ExecutionStore, TimerReadOptions, TimerState } from "@harel/dynamodb";
 *
 * async function all(store: ExecutionStore, id: string): Promise<TimerState[]> {
 *   const timers: TimerState[] = [];
 *   for (let options: TimerReadOptions = { limit: 100 };;) {
 *     const page = await store.readTimers(id, options);
 *     timers.push(...page);
 *     if (page.length < 100) return timers;
 *     options = { limit: 100, after: page.at(-1)!.path };
 *   }
 * }
 * ```
 */
export interface TimerReadOptions {
  /** At most this many timers, the first by path: a positive integer or `Infinity`. @default {Infinity} */
  limit?: number;
  /** Only timers whose path sorts after this one (the last path of the page before). @default {undefined} */
  after?: string;
}

/**
 * Options of `inspectExecution`.
 *
 * @example The document and its facts, no timers
 * ```ts
 * import type { InspectOptions } from "@harel/dynamodb";
 *
 * const options: InspectOptions = { timerLimit: 0 }; // one GetItem
 * ```
 */
export interface InspectOptions {
  /** At most this many timers, the first by path; `0` reads none. @default {Infinity} */
  timerLimit?: number;
}
