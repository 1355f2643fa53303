// Which outbox rows the CLI shows as held, from the rows' own bookkeeping only (no hold item, no
// index: whatever a relay keeps to find held targets faster, the rows say what holds).
import type { OutboxRow } from "./_cli_reads.ts";

/** An outbox row as the CLI shows it, with what holds it back when something does. */
export type ShownOutboxRow = OutboxRow | (Omit<OutboxRow, "state"> & Held);

/** A row held behind an earlier entry of its target: that entry's seq. */
export interface Held {
  /** Waiting for an earlier entry of its target to be delivered, retried or dropped. */
  state: "held";
  /** The seq of the entry it waits behind: its target's lowest dead or waiting entry. */
  heldBehind: number;
}

/**
 * Whether a row holds back the later entries of its target at `now`: dead-lettered (unless it
 * was set aside as unreadable, which holds nothing back) or waiting for a retry still to come.
 */
export function holdsTarget(row: OutboxRow, now: number): boolean {
  if (row.state === "dead") return row.setAside !== true;
  return row.retryAt !== undefined && row.retryAt > now;
}

/**
 * The rows (lowest seq first, as `oldestOutbox` reads them) with every row that comes after its
 * target's first holding row marked as held behind it, as a relay pass sees them. A dead row
 * stays dead: an operator acts on it either way.
 */
export function markHeld(rows: readonly OutboxRow[], now: number): ShownOutboxRow[] {
  const holder = new Map<string | null, number>();
  return rows.map((row) => {
    const behind = holder.get(row.targetId);
    if (behind !== undefined && row.state !== "dead") {
      return { ...row, state: "held", heldBehind: behind };
    }
    if (behind === undefined && holdsTarget(row, now)) holder.set(row.targetId, row.seq);
    return row;
  });
}
