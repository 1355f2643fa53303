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

/** Whether a row holds back its target's later entries: dead (not set aside) or waiting to retry. */
export function holdsTarget(row: OutboxRow, now: number): boolean {
  if (row.state === "dead") return row.setAside !== true;
  return row.retryAt !== undefined && row.retryAt > now;
}

/**
 * The rows (lowest seq first) with each one after its target's first holding row marked as held,
 * as a relay pass sees them; a dead row stays dead.
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
