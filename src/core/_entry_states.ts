// Where an outbox entry stands, as an operator reads it (#34): one rule for both stores, from the
// entry's own bookkeeping, whether a relay pass set it apart, and its target's heads.
import { type Bookkept, isDead } from "./_relay_rules.ts";
import type { OutboxState } from "./relay_types.ts";

/**
 * An entry's state: dead-lettered; waiting (it failed, its retry due or not); held (set apart by
 * a pass, or behind a head of its target: an earlier entry that failed), behind its target's
 * lowest head before it; else pending. `heads`: the seqs of its target's heads.
 */
export function entryState(
  row: Bookkept,
  seq: number,
  setApart: boolean,
  heads: Iterable<number>,
): { state: OutboxState; heldBehind: number | null } {
  if (isDead(row)) return { state: "dead", heldBehind: null };
  if (typeof row.retryAt === "number") return { state: "waiting", heldBehind: null };
  let behind: number | null = null;
  for (const head of heads) if (head < seq && (behind === null || head < behind)) behind = head;
  if (setApart || behind !== null) return { state: "held", heldBehind: behind };
  return { state: "pending", heldBehind: null };
}
