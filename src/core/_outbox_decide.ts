// The outbox's decisions, once, for both execution stores: on rows and holds read by key (never on
// what an index showed), which entries go out and in what order, and what the pass writes. Pure.
import { holdsAt, isHead } from "./_relay_rules.ts";
import type { OutboxHold, OutboxRow, OutboxWrites, Release, SetApart } from "./relay_queues.ts";

/** What a pass read, for {@linkcode decideOutbox}. */
export interface OutboxRead {
  /** The pass's time, epoch seconds. */
  now: number;
  /** How many entries may go out. */
  limit: number;
  /** The stored seqs offered (an index's candidates, or a commit's own seqs). */
  offered: Iterable<string>;
  /** Every row read by key (offered, listed by a hold, predecessors): absent means gone. */
  rows: ReadonlyMap<string, OutboxRow>;
  /** The holds of the offered rows' targets (absent: the target holds nothing). */
  holds: ReadonlyMap<string, OutboxHold>;
  /**
   * A commit's own seqs delivered within the request: nothing is set apart, and an entry behind
   * any head of its target, or whose predecessor is unknown, waits for a pass.
   */
  inline: boolean;
}

/** What a pass does: what goes out, what it writes first, and what it counts. */
export interface OutboxPlan {
  /** What goes out, lowest seq first, at most `limit`: per target, in this order. */
  deliver: OutboxRow[];
  /** Set apart, demoted, unlisted and released, before anything goes out. */
  writes: Required<Pick<OutboxWrites, "setApart" | "demote" | "unlist" | "release">>;
  /** How many offered entries wait behind a held target. */
  held: number;
  /** When the oldest offered pending entry was committed, or null. */
  oldestAt: number | null;
}

/** The state letter of a place (`p3` → `p`). */
export const placeLetter = (part: string): string => part[0] ?? "";

/**
 * Decides a pass. Per target, entries go in seq order: a head whose retry is due first, then what
 * its hold lists, then the rest, up to the lowest head that still holds the target; above that
 * head, pending entries are set apart behind it. An entry whose predecessor is still there waits,
 * and so does the rest of its target in this pass.
 */
export function decideOutbox(read: OutboxRead): OutboxPlan {
  const { rows, holds } = read;
  const plan: OutboxPlan = {
    deliver: [],
    writes: { setApart: [], demote: [], unlist: [], release: [] },
    held: 0,
    oldestAt: null,
  };
  const offered = new Map<string, OutboxRow[]>(); // by target
  for (const id of new Set(read.offered)) {
    const row = rows.get(id);
    if (row === undefined) continue; // acknowledged since it was offered
    const lane = offered.get(row.target);
    if (lane) lane.push(row);
    else offered.set(row.target, [row]);
    if (row.deadAt === null && row.createdAt !== null) {
      plan.oldestAt = Math.min(plan.oldestAt ?? Infinity, row.createdAt);
    }
  }
  const deliverable: OutboxRow[] = [];
  for (const [target, mine] of offered) {
    const hold = holds.get(target) ?? { heads: [], held: [], spill: null };
    deliverable.push(...decideTarget(target, mine, hold, read, plan));
  }
  plan.deliver = deliverable.sort((a, b) => a.seq - b.seq).slice(0, read.limit);
  return plan;
}

/** One target's lane: what goes out, in order; records in `plan` what waits and what to write. */
function decideTarget(
  target: string,
  mine: OutboxRow[],
  hold: OutboxHold,
  { now, rows, inline }: OutboxRead,
  plan: OutboxPlan,
): OutboxRow[] {
  // The lowest head holding the target, and whether entries may be set apart behind it (a
  // listed head that still fails; not one gone or retried, whose release is due).
  let from: { seq: number; id: string } | undefined;
  let firm = false;
  let release = false;
  const listedHeads = new Set(hold.heads);
  for (const id of hold.heads) {
    const row = rows.get(id);
    const stale = row === undefined || !isHead(row);
    if (stale) release = true;
    if (!(stale || inline || holdsAt(row, now))) continue;
    const seq = row?.seq ?? Number(id);
    if (from === undefined || seq < from.seq) {
      from = { seq, id };
      firm = !stale;
    }
  }
  // A failed entry its hold does not list (a writer that keeps no holds) holds the rest, but
  // nothing is set apart behind it: only a listed head's release brings entries back.
  for (const row of mine) {
    if (listedHeads.has(row.id) || !isHead(row) || !(inline || holdsAt(row, now))) continue;
    if (from === undefined || row.seq < from.seq) {
      from = row;
      firm = false;
    }
  }
  const lane = new Map<string, OutboxRow>(mine.map((row) => [row.id, row]));
  const offered = new Set(lane.keys());
  const listed = new Set(hold.held);
  const gone: string[] = [];
  for (const id of hold.held) {
    const row = rows.get(id);
    if (row !== undefined) lane.set(id, row);
    else gone.push(id);
  }
  if (gone.length) plan.writes.unlist.push({ target, ids: gone });
  const out: OutboxRow[] = [];
  const handedOut = new Set<OutboxRow>();
  let blocked = false; // nothing more of this target goes out in this pass
  let dueHeadOut = false;
  for (const row of [...lane.values()].sort((a, b) => a.seq - b.seq)) {
    if (row.unreadable || (isHead(row) && holdsAt(row, now))) continue; // set aside, or `from`
    const setApart = placeLetter(row.part) === "h";
    if (from !== undefined && row.seq > from.seq) {
      if (offered.has(row.id)) plan.held++;
      if (inline || !firm || setApart) continue;
      addTo(isHead(row) ? plan.writes.demote : plan.writes.setApart, target, from.id, row);
      continue;
    }
    if (setApart && !dueHeadOut) {
      // Set apart and nothing holds it any more (a release cut short): bring it back.
      if (from === undefined) release = true;
      blocked = true;
      continue;
    }
    // Entries set apart without room on the list may still be in the index's lag: what the list
    // does not name waits until a release has brought them all back.
    if (hold.spill !== null && !listed.has(row.id) && !isHead(row)) {
      if (offered.has(row.id)) plan.held++;
      release = true;
      blocked = true;
      continue;
    }
    // Its predecessor of the same source, an entry it waits for, or the highest chained by the
    // feed below it is still there, and not handed out before it: it waits, and so does what
    // follows; so does a commit's own entry whose predecessor is unknown.
    const pending = (seq: number | string | undefined) => {
      const before = seq === undefined ? undefined : rows.get(String(seq));
      return before !== undefined && !before.unreadable && !handedOut.has(before);
    };
    if (
      row.waits || (inline && row.prev === undefined) || (row.prev && pending(row.prev)) ||
      row.after?.some(pending) || pending(chainedBelow(hold, row.seq))
    ) blocked = true;
    if (blocked) continue;
    out.push(row);
    handedOut.add(row);
    if (isHead(row)) dueHeadOut = true;
  }
  if (release && !inline) plan.writes.release.push(releaseOf(target, hold, rows));
  return out;
}

/** The highest seq below `seq` of the target's entries chained by the outbox feed, if any. */
export function chainedBelow(hold: OutboxHold | undefined, seq: number): string | undefined {
  return hold?.recent?.findLast((id) => Number(id) < seq);
}

function addTo(moves: SetApart[], target: string, head: string, row: OutboxRow): void {
  const last = moves.at(-1);
  if (last?.target === target) last.rows.push(row);
  else moves.push({ target, head, rows: [row] });
}

/**
 * A target's release: the entries its hold set apart below the lowest head still holding it (all
 * of them when none does) come back, lowest first; heads gone, no longer failed, or delivered
 * (`acks`, deleted first) leave the hold. `rows`: what the hold names, read by key.
 */
export function releaseOf(
  target: string,
  hold: OutboxHold,
  rows: ReadonlyMap<string, OutboxRow>,
  acks: readonly string[] = [],
): Release {
  let lowest = Infinity;
  const gone: string[] = [];
  for (const id of hold.heads) {
    const row = rows.get(id);
    if (row === undefined || acks.includes(id) || !isHead(row)) gone.push(id);
    else lowest = Math.min(lowest, row.seq);
  }
  const back = hold.held.map((id) => rows.get(id)).filter((row): row is OutboxRow =>
    row !== undefined && placeLetter(row.part) === "h" && row.seq < lowest
  ).sort((a, b) => a.seq - b.seq);
  return { target, acks: [...acks], back, gone, lowest, spill: hold.spill };
}
