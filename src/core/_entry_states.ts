// Where an outbox entry stands, as an operator reads it: one rule for both stores.
import { type Bookkept, isDead } from "./_relay_rules.ts";
import type { OutboxState } from "./relay_types.ts";

/**
 * An entry's state: dead, waiting (it failed), held (set apart, or behind an earlier head of its
 * target: `heldBehind` is the lowest), else pending. `heads`: the seqs of its target's heads.
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
