// MemoryStore's listing (#25), as DynamoDBStore's: with statuses, newest commit first (as the
// status index reads); without, in id order (its stand-in for scan order). The cursor is the
// last summary returned: its `[updated_at, id]` in the first order, its id in the second.
import { cursorId, encodeCursor } from "../core/cursor.ts";
import { InvalidCursor } from "../core/errors.ts";
import type { ExecutionSummary } from "../core/documents.ts";
import type { ListPage } from "../core/types.ts";
import type { Listing } from "./_listing.ts";

/** Newest commit first; at one time, the higher id first (as DynamoDBStore merges shards). */
export function newestFirst(a: ExecutionSummary, b: ExecutionSummary): number {
  return (b.updated_at ?? 0) - (a.updated_at ?? 0) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/** One page of `listing` over `live`, every live execution's summary. */
export function memoryPage(live: ExecutionSummary[], listing: Listing, table: string): ListPage {
  const { after, limit } = listing;
  let rows: ExecutionSummary[];
  let position: (summary: ExecutionSummary) => unknown;
  if (listing.indexed) {
    rows = live.sort(newestFirst);
    position = (summary) => [summary.updated_at, summary.id];
    if (after !== null) {
      if (
        !Array.isArray(after) || after.length !== 2 || typeof after[0] !== "number" ||
        typeof after[1] !== "string"
      ) throw new InvalidCursor("its position is not [updated_at, id]");
      const last = { updated_at: after[0], id: after[1] } as ExecutionSummary;
      rows = rows.filter((summary) => newestFirst(last, summary) < 0);
    }
  } else {
    rows = live.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    position = (summary) => summary.id;
    if (after !== null) {
      const id = cursorId(after);
      rows = rows.filter((summary) => summary.id > id);
    }
  }
  const items: ExecutionSummary[] = [];
  for (const [i, summary] of rows.entries()) {
    if (!listing.matches(summary)) continue;
    items.push(summary);
    if (items.length === limit) {
      const more = i < rows.length - 1;
      return {
        items,
        nextCursor: more ? encodeCursor(table, listing.query, position(summary)) : null,
      };
    }
  }
  return { items, nextCursor: null };
}
