// listExecutions' options, checked once for every backend: what to filter on and where to resume.
import { checkInteger, checkKey, checkObject, describe, LIMITS } from "../core/_validate.ts";
import { decodeCursor } from "../core/cursor.ts";
import { type Execution, STATUSES } from "../core/documents.ts";
import type { ListOptions } from "../core/types.ts";

/** A checked listing: page size, where to resume, and the filter. */
export interface Listing {
  /** The definition to filter on, when given (DynamoDB filters on it server-side). */
  definitionId?: string;
  /** Matches per page. */
  limit: number;
  /** The id of the last execution the previous page returned, or null. */
  after: string | null;
  /** Whether an execution passes every filter. */
  matches(exe: Execution): boolean;
}

/**
 * Checks `listExecutions` options of a listing of `table`; refuses bad ones with a
 * TypeError/RangeError, and a cursor that is not this table's with InvalidCursor.
 */
export function planListing(options: ListOptions, table: string): Listing {
  checkObject("options", options);
  const { definitionId, rootsOnly = false, limit = 100, cursor = null } = options;
  checkInteger("limit", limit, 1, 1000);
  const statuses = options.status === undefined
    ? null
    : new Set(Array.isArray(options.status) ? options.status : [options.status]);
  for (const status of statuses ?? []) {
    if (!STATUSES.includes(status)) {
      throw new TypeError(`status must be one of ${STATUSES.join(", ")}, got ${describe(status)}`);
    }
  }
  if (definitionId !== undefined) checkKey("definitionId", definitionId, LIMITS.itemBytes);
  return {
    definitionId,
    limit,
    after: cursor === null ? null : decodeCursor(cursor, table),
    matches: (exe) =>
      (definitionId === undefined || exe.definition_id === definitionId) &&
      (statuses === null || statuses.has(exe.status)) &&
      (!rootsOnly || (exe.parent_id ?? null) === null),
  };
}
