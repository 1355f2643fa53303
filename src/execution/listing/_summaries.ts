// Execution items as a listing's rows: a summary, or the item's key and why it is unreadable, so
// that a row another writer stored oddly does not fail the whole page.
import type { Item } from "../../core/_attributes.ts";
import { EXECUTION, readExecutionDocument } from "../../core/_layout.ts";
import type { ExecutionSummary } from "../../core/documents.ts";
import type { ListPage, UnreadableExecutionRow } from "../../core/types.ts";
import type { Selection } from "./_listing.ts";
import { lastCommitTime } from "./_status_index.ts";

/** One listed item: its summary, or why it has none. */
export type ListedRow = { summary: ExecutionSummary } | { unreadable: UnreadableExecutionRow };

/** The summary fields that must be strings, and those that may also be null (or absent). */
const STRINGS = ["id", "definition_id", "status"] as const;
const OPTIONAL_STRINGS = ["outcome", "active_path", "parent_id"] as const;

/**
 * An execution item as a listing row. The `id` and `version` are the item's, not the document's:
 * what a load or an action by that id finds.
 */
export function rowOfItem(item: Item): ListedRow {
  const id = item[EXECUTION.id]?.S ?? "";
  const read = readExecutionDocument(item);
  if ("error" in read) return { unreadable: { id, error: read.error } };
  const doc = read.document as unknown as Record<string, unknown>;
  for (const field of STRINGS) {
    if (typeof doc[field] !== "string") {
      return { unreadable: { id, error: `its ${field} is ${kindOf(doc[field])}, not a string` } };
    }
  }
  for (const field of OPTIONAL_STRINGS) {
    const value = doc[field];
    if (value !== undefined && value !== null && typeof value !== "string") {
      return {
        unreadable: { id, error: `its ${field} is ${kindOf(value)}, not a string or null` },
      };
    }
  }
  const stored = Number(item[EXECUTION.version]?.N);
  const version = Number.isFinite(stored) ? stored : doc.version;
  if (typeof version !== "number" || !Number.isFinite(version)) {
    return { unreadable: { id, error: `its version is ${kindOf(version)}, not a number` } };
  }
  return {
    summary: {
      id,
      definition_id: doc.definition_id as string,
      status: doc.status as ExecutionSummary["status"],
      outcome: (doc.outcome ?? null) as string | null,
      active_path: (doc.active_path ?? null) as string | null,
      version,
      parent_id: (doc.parent_id ?? null) as string | null,
      updated_at: lastCommitTime(item),
    },
  };
}

/**
 * Whether a listing takes a row: a summary by every filter; an unreadable item by the filters its
 * stored attributes answer (`definition_id`, `updated_at`).
 */
export function takes(selection: Selection, item: Item, row: ListedRow): boolean {
  if ("summary" in row) return selection.matches(row.summary);
  const definition = item[EXECUTION.definitionId]?.S;
  if (selection.definitionId !== undefined && definition !== selection.definitionId) return false;
  if (selection.updatedBefore === null) return true;
  const at = lastCommitTime(item);
  return at === null ? selection.includeUndated : at < selection.updatedBefore;
}

/** A page's `unreadable` field: there only when some row was. */
export function apart(unreadable: UnreadableExecutionRow[]): Pick<ListPage, "unreadable"> {
  return unreadable.length ? { unreadable } : {};
}

/** A stored value's kind in a sentence: "an object", "true", "a number", "absent". */
function kindOf(value: unknown): string {
  if (value === undefined) return "absent";
  if (value === null) return "null";
  if (typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}
