// listExecutions' and deleteExecutions' options, checked once for every backend: what to select,
// how to read it (the status index or a scan) and where to resume.
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
import { decodeCursor } from "../../core/cursor.ts";
import { checkOptionNames } from "../../core/_option_names.ts";
import { type ExecutionSummary, type Status, STATUSES } from "../../core/documents.ts";
import type { ListOptions } from "../../core/types.ts";
import type { DeleteExecutionsOptions } from "../../core/operator_types.ts";
import { FINISHED } from "../commit/_retention.ts";
import { fnv1a } from "../../core/_fnv1a.ts";
import { checkLimit } from "../../core/_bounded.ts";

/** What selects executions: a listing's filter, or a bulk delete's. */
export interface Selection {
  /** The statuses, in the engine's order, or null for any. */
  statuses: Status[] | null;
  /** The definition to filter on, when given (DynamoDB filters on it server-side). */
  definitionId?: string;
  rootsOnly: boolean;
  /** Epoch seconds: only executions last committed before it. */
  updatedBefore: number | null;
  /** With `updatedBefore`: also executions whose last commit time is unknown. */
  includeUndated: boolean;
  /** Read through the status index: a status given, and no `scan`. */
  indexed: boolean;
  /** The filter's fingerprint: a cursor is bound to it. */
  query: string;
  /** Whether an execution's summary (with its last commit time, if known) passes every filter. */
  matches(summary: ExecutionSummary): boolean;
}

/** A checked listing: the selection, page size and where to resume. */
export interface Listing extends Selection {
  /** Matches per page. */
  limit: number;
  /** Where the previous page stopped, in the backend's own terms (it checks it), or null. */
  after: unknown;
  /** The most stored rows a call examines before it answers with what it found. */
  maxExamined: number;
  /** Stops the reads of the call, when given. */
  signal: AbortSignal | undefined;
}

/** Checks `listExecutions` options of a listing of `table`, its cursor included. */
export function planListing(options: ListOptions, table: string): Listing {
  checkObject("options", options);
  checkOptionNames("listExecutions()", options);
  const { limit = 100, cursor = null, maxExamined = Infinity, signal } = options;
  checkInteger("limit", limit, 1, 1000);
  checkLimit("maxExamined", maxExamined);
  checkSignal(signal);
  const selection = select(options);
  return {
    ...selection,
    limit,
    after: cursor === null ? null : decodeCursor(cursor, table, selection.query),
    maxExamined,
    signal,
  };
}

/** Checks `deleteExecutions` options: a bulk delete says what it takes; open ones `allowOpen`. */
export function planBulkDelete(
  options: DeleteExecutionsOptions,
): Selection & Pick<DeleteExecutionsOptions, "onProgress" | "signal"> {
  checkObject("options", options);
  checkOptionNames("deleteExecutions()", options);
  const { status, updatedBefore, allowOpen = false, onProgress, signal } = options;
  if (status === undefined) {
    throw new TypeError(
      'deleteExecutions() needs a status (or statuses), e.g. { status: "DONE", updatedBefore }: ' +
        "a bulk delete says what it takes",
    );
  }
  if (updatedBefore === undefined) {
    throw new TypeError(
      "deleteExecutions() needs updatedBefore (epoch seconds): only executions last committed " +
        "before it are deleted",
    );
  }
  if (typeof allowOpen !== "boolean") {
    throw new TypeError(`allowOpen must be a boolean, got ${describe(allowOpen)}`);
  }
  checkCallback("onProgress", onProgress);
  checkSignal(signal);
  const selection = select(options);
  const open = selection.statuses!.filter((s) => !FINISHED.has(s));
  if (open.length > 0 && !allowOpen) {
    throw new RangeError(
      `deleteExecutions() deletes finished executions (DONE, CANCELLED, FAILED); ${
        open.join(", ")
      } ${open.length > 1 ? "are" : "is"} open: pass allowOpen: true to delete open ones too`,
    );
  }
  return { ...selection, onProgress, signal };
}

/** The filter both calls share, checked; its fingerprint names it in cursors. */
function select(options: ListOptions): Selection {
  const { definitionId, rootsOnly = false, updatedBefore, scan = false } = options;
  const { includeUndated = false } = options;
  const given = options.status;
  const wanted = given === undefined ? null : new Set(Array.isArray(given) ? given : [given]);
  for (const status of wanted ?? []) {
    if (!STATUSES.includes(status)) {
      throw new TypeError(`status must be one of ${STATUSES.join(", ")}, got ${describe(status)}`);
    }
  }
  if (wanted?.size === 0) {
    throw new TypeError("status [] selects nothing: name at least one status, or leave status out");
  }
  const statuses = wanted === null ? null : STATUSES.filter((s) => wanted.has(s));
  if (definitionId !== undefined) checkKey("definitionId", definitionId, LIMITS.itemBytes);
  for (const [name, flag] of Object.entries({ rootsOnly, scan, includeUndated })) {
    if (typeof flag !== "boolean") {
      throw new TypeError(`${name} must be a boolean, got ${describe(flag)}`);
    }
  }
  const before = updatedBefore === undefined ? null : checkTime("updatedBefore", updatedBefore);
  const indexed = statuses !== null && !scan;
  const query = fnv1a(
    JSON.stringify([statuses, definitionId ?? null, rootsOnly, before, includeUndated, indexed]),
  ).toString(36);
  return {
    statuses,
    definitionId,
    rootsOnly,
    updatedBefore: before,
    includeUndated,
    indexed,
    query,
    matches: (summary) =>
      (definitionId === undefined || summary.definition_id === definitionId) &&
      (statuses === null || statuses.includes(summary.status)) &&
      (!rootsOnly || summary.parent_id === null) &&
      (before === null ||
        (summary.updated_at === null ? includeUndated : summary.updated_at < before)),
  };
}

/** `catchUpStatusIndex()`'s options, checked: its signal. */
export function checkCatchUpOptions(options: unknown): AbortSignal | undefined {
  const { signal } = checkObject("options", options) as { signal?: unknown };
  checkOptionNames("catchUpStatusIndex()", options);
  return checkSignal(signal);
}
