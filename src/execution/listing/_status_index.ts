// The executions table's status index: which shard an execution is written to, and what a commit
// writes for the index. The wire format is the attributes `status_shard` (S, `"{status}#{shard}"`)
// and `status_at` (N, epoch seconds: when the execution entered that status) on the execution
// item, described in docs/design.md. Both change only when the status does, so a commit that
// keeps its status writes nothing to the index; `updated_at` (the last commit) is not projected.
import type { Item } from "../../core/_attributes.ts";
import { EXECUTION } from "../../core/_layout.ts";
import { VersionCache } from "../../core/_lru.ts";
import type { Status } from "../../core/documents.ts";
import { fnv1a } from "../../core/_fnv1a.ts";

export { STATUS_INDEX } from "../../core/table_specs.ts";

/**
 * How many shards each status spreads over. Part of the wire format: every writer and reader of
 * a table must agree, so it is no option. An index partition key takes about 1,000 writes/s and
 * an execution's status change costs it two (the entry moves): 16 shards carry about 8,000
 * status changes per second into one status; a listing pays one Query per shard.
 */
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
 * How a commit treats the index: `same`, the stored item is known to be in the commit's status
 * (nothing to write); `changed`, known to be in another one or in none (the entry moves, its
 * time is the commit's); `unknown`, the commit keeps the stored time if the status is the same
 * and is refused (and built again as `changed`) if it is not.
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
    // Out of the index (another writer's whole-item Put): the status feed may put it back at
    // any time, in its status since when it entered it, which a commit that stays keeps.
    if (stored === undefined || stored === null) return "unknown";
    return stored === key ? "same" : "changed";
  }
}
