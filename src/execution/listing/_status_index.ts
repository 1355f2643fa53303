// The executions table's status index (docs/design.md): which shard an execution is written to,
// and whether a commit moves its entry. A commit that keeps its status writes nothing to it.
import type { Item } from "../../core/_attributes.ts";
import { EXECUTION } from "../../core/_layout.ts";
import { VersionCache } from "../../core/_lru.ts";
import type { Status } from "../../core/documents.ts";
import { fnv1a } from "../../core/_fnv1a.ts";

export { STATUS_INDEX } from "../../core/table_specs.ts";

/** How many shards each status spreads over (wire format, so no option): one Query each. */
export const STATUS_SHARDS = 16;

/** The index partition of an execution in `status`: its id's shard, fixed for its life. */
export function statusKey(status: Status, id: string): string {
  return `${status}#${fnv1a(id) % STATUS_SHARDS}`;
}

/** When an item was last committed, epoch seconds, or `null` when unknown. */
export function lastCommitTime(item: Item): number | null {
  // The Python store's whole-item Put drops `updated_at`: our commits write it, and the status
  // feed writes it back for another writer's commit from its stream record.
  const at = Number(item[EXECUTION.updatedAt]?.N);
  return Number.isFinite(at) ? at : null;
}

/**
 * How a commit treats the index: `same` (nothing to write), `changed` (the entry moves), or
 * `unknown` (keep the stored time if the status is the same, else refused and built as `changed`).
 */
export type StatusMove = "same" | "changed" | "unknown";

/**
 * The status index partition (`status_shard`, `null`: none) of the executions this store read
 * or committed, by the version they are at: a commit from that version knows whether it moves.
 */
export class StatusCache extends VersionCache<string | null> {
  /** Remembers what an execution item read or returned holds. */
  sawItem(id: string, item: Item | undefined): void {
    const version = item?.[EXECUTION.version]?.N;
    if (version === undefined) this.forget(id);
    else this.set(id, Number(version), item![EXECUTION.statusShard]?.S ?? null);
  }

  /** How a commit of `id` from version `expected` into partition `key` treats the index. */
  moveOf(id: string, expected: number, key: string): StatusMove {
    if (expected === 0) return "changed";
    const stored = this.at(id, expected);
    // Out of the index (another writer's Put): the status feed may put it back at any time.
    if (stored === undefined || stored === null) return "unknown";
    return stored === key ? "same" : "changed";
  }
}
