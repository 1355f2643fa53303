// MemoryStore's listing, as DynamoDBStore's: with statuses, the latest to enter its status
// first; without, in id order (for scan order). The cursor is the last summary's key.
import { cursorId, encodeCursor } from "../../core/cursor.ts";
import { InvalidCursor } from "../../core/errors.ts";
import type { ExecutionSummary } from "../../core/documents.ts";
import type { ListPage } from "../../core/types.ts";
import type { Listing } from "../listing/_listing.ts";

/**
 * One page of `listing` over `live`, every live execution's summary; `since` says when each
 * entered its status (epoch seconds).
 */
export function memoryPage(
  live: ExecutionSummary[],
  listing: Listing,
  table: string,
  since: ReadonlyMap<string, number>,
): ListPage {
  const { after, limit } = listing;
  // The latest to enter its status first; at one time, the higher id first (as DynamoDBStore
  // merges shards).
  const at = (summary: { id: string }) => since.get(summary.id) ?? 0;
  const newestFirst = (a: { id: string }, b: { id: string }) =>
    at(b) - at(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
  let rows: ExecutionSummary[];
  let position: (summary: ExecutionSummary) => unknown;
  if (listing.indexed) {
    rows = live.sort(newestFirst);
    position = (summary) => [at(summary), summary.id];
    if (after !== null) {
      if (
        !Array.isArray(after) || after.length !== 2 || typeof after[0] !== "number" ||
        typeof after[1] !== "string"
      ) throw new InvalidCursor("its position is not [status_at, id]");
      const [time, id] = after;
      rows = rows.filter((summary) =>
        at(summary) < time || (at(summary) === time && summary.id < id)
      );
    }
  } else {
    rows = live.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    position = (summary) => summary.id;
    if (after !== null) {
      const id = cursorId(after);
      rows = rows.filter((summary) => summary.id > id);
    }
  }
  listing.signal?.throwIfAborted();
  const items: ExecutionSummary[] = [];
  for (const [i, summary] of rows.entries()) {
    const more = i < rows.length - 1;
    if (listing.matches(summary)) items.push(summary);
    // A page ends when it is full, or (as DynamoDBStore's) when `maxExamined` rows were read.
    if (items.length === limit || i + 1 === listing.maxExamined) {
      return {
        items,
        nextCursor: more ? encodeCursor(table, listing.query, position(summary)) : null,
      };
    }
  }
  return { items, nextCursor: null };
}
