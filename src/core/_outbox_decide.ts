// The outbox pass's decisions, once, for both execution stores (#38). A pass reads — the entries
// an index offered, every row it then read by key, the holds of their targets — and this decides:
// which entries go out now and in what order, which wait behind their target's head, and what
// the holds need. Pure: no store, no clock; every row here was read by key, so nothing is decided
// on what an index showed. MemoryStore runs the same function on its own rows.
import { type Bookkept, holdsAt, isHead } from "./_relay_rules.ts";

/** A row's state, as its place says: pending, waiting, dead, held; `null`: no place yet. */
export type PlaceLetter = "p" | "w" | "d" | "h";

/** An outbox row as read by key. */
export interface EntryRow extends Bookkept {
  /** The seq, to order by. */
  seq: number;
  /** The seq as stored: the row's key. */
  id: string;
  /** Its target's key (a hash of the target id: see _outbox_chain.ts). */
  target: string;
  /** The previous seq of the same source to the same target: 0 none, undefined unknown. */
  prev: number | undefined;
  attempts: number;
  /** Its place (the relay index's partition, e.g. `p3`); null for a row with none. */
  part: string | null;
  /** When it was committed (`created_at`), epoch seconds; null when the row does not say. */
  createdAt: number | null;
}

/** A target's hold, as read by key: the entries holding it, and those set apart behind them. */
export interface HoldRow {
  heads: readonly string[];
  held: readonly string[];
  /**
   * Entries were set apart without room on the list (when, epoch seconds): the index alone finds
   * them, so the target's entries the list does not name wait, and a release looks for them.
   */
  spill?: number;
}

/** What a pass read, for {@linkcode decideOutbox}. */
export interface OutboxRead {
  /** The pass's time, epoch seconds. */
  now: number;
  /** How many entries may go out. */
  limit: number;
  /** The rows the pass was offered (an index's candidates, or a commit's own seqs), by id. */
  offered: Iterable<string>;
  /** Every row read by key (offered, listed by a hold, predecessors): absent means gone. */
  rows: ReadonlyMap<string, EntryRow>;
  /** The holds of the offered rows' targets (absent: the target holds nothing). */
  holds: ReadonlyMap<string, HoldRow>;
  /**
   * A commit's own seqs delivered within the request: nothing is written, and an entry waits for
   * a pass when it is behind any head of its target or its predecessor is unknown.
   */
  inline: boolean;
  /**
   * Other writers share the table (`otherWriters: true`): an entry with no `prev_seq` is not
   * chained yet (the outbox feed gives it one, see _feed_chain.ts), so it waits, and so does
   * the rest of its target in this pass.
   */
  unchainedWaits?: boolean;
}

/** What a pass does: deliver, set apart, release. */
export interface OutboxDecision {
  /** What goes out, lowest seq first, at most `limit`: per target, in this order. */
  deliver: EntryRow[];
  /** Of `deliver`, the heads whose retry is due: acknowledging one releases its target. */
  dueHeads: Set<string>;
  /** Pending entries to set apart behind their target's lowest head (its id), by target. */
  setApart: Map<string, { head: string; rows: EntryRow[] }>;
  /** Heads behind a lower head of their target: set apart behind it, no longer heads. */
  demote: Map<string, { head: string; rows: EntryRow[] }>;
  /** Targets whose hold lists a head that no longer holds it (gone, or no longer failed). */
  release: Set<string>;
  /** Entries a hold lists as set apart that are gone (delivered), by target. */
  unlist: Map<string, string[]>;
  /** How many offered entries wait behind a held target (RelayItems.held). */
  held: number;
  /** When the oldest offered pending entry was written (`created_at`), or null. */
  oldestAt: number | null;
}

/** The letter of a place (`p3` → `p`), or null for a place this module does not write. */
export function placeLetter(part: string | null | undefined): PlaceLetter | null {
  const letter = part?.[0];
  return letter === "p" || letter === "w" || letter === "d" || letter === "h" ? letter : null;
}

/**
 * Decides a pass. Per target, entries go in seq order: a head whose retry is due first (it holds
 * nothing), then what its hold set apart behind it and what the hold brought back, then the rest
 * — up to the lowest head that still holds the target (waiting, dead, or listed and no longer
 * failed while its release brings back what it held). Above that head, pending entries are set
 * apart behind it. An entry whose predecessor (same source and target) is still there waits,
 * and so does the rest of its target in this pass.
 */
export function decideOutbox(read: OutboxRead): OutboxDecision {
  const { rows, holds } = read;
  const decision: OutboxDecision = {
    deliver: [],
    dueHeads: new Set(),
    setApart: new Map(),
    demote: new Map(),
    release: new Set(),
    unlist: new Map(),
    held: 0,
    oldestAt: null,
  };
  const offered = new Map<string, EntryRow[]>(); // by target
  for (const id of new Set(read.offered)) {
    const row = rows.get(id);
    if (row === undefined) continue; // acknowledged since it was offered
    const lane = offered.get(row.target);
    if (lane) lane.push(row);
    else offered.set(row.target, [row]);
    if (row.deadAt === null || row.deadAt === undefined) {
      const at = row.createdAt;
      if (typeof at === "number" && (decision.oldestAt === null || at < decision.oldestAt)) {
        decision.oldestAt = at;
      }
    }
  }
  const deliverable: EntryRow[] = [];
  for (const [target, mine] of offered) {
    const hold = holds.get(target) ?? { heads: [], held: [] };
    deliverable.push(...decideTarget(target, mine, hold, read, decision));
  }
  decision.deliver = deliverable.sort((a, b) => a.seq - b.seq).slice(0, read.limit);
  const out = new Set(decision.deliver.map((row) => row.id));
  for (const id of decision.dueHeads) if (!out.has(id)) decision.dueHeads.delete(id);
  return decision;
}

/** One target's lane: what goes out, in order; records what waits in `decision`. */
function decideTarget(
  target: string,
  mine: EntryRow[],
  hold: HoldRow,
  { now, rows, inline, unchainedWaits = false }: OutboxRead,
  decision: OutboxDecision,
): EntryRow[] {
  // The lowest head holding the target, and whether it is a listed failed entry (one a pass may
  // set entries apart behind) or one whose release is due (gone, or no longer failed).
  let from: { seq: number; id: string } | undefined;
  let firm = false;
  const listedHeads = new Set(hold.heads);
  for (const id of hold.heads) {
    const row = rows.get(id);
    const stale = row === undefined || !isHead(row);
    if (stale) decision.release.add(target);
    if (!(stale || inline || holdsAt(row, now))) continue;
    const seq = row?.seq ?? Number(id);
    if (from === undefined || seq < from.seq) {
      from = { seq, id };
      firm = !stale;
    }
  }
  // A failed entry its hold does not list (a writer that keeps no holds): it holds the rest,
  // but nothing is set apart behind it (only a listed head's release brings entries back).
  for (const row of mine) {
    if (listedHeads.has(row.id) || !isHead(row) || !(inline || holdsAt(row, now))) continue;
    if (from === undefined || row.seq < from.seq) {
      from = row;
      firm = false;
    }
  }
  const lane = new Map<string, EntryRow>(mine.map((row) => [row.id, row]));
  const listedHeld = new Set(hold.held);
  const offered = new Set(lane.keys());
  for (const id of hold.held) {
    const row = rows.get(id);
    if (row !== undefined) lane.set(id, row);
    else if (decision.unlist.has(target)) decision.unlist.get(target)!.push(id);
    else decision.unlist.set(target, [id]);
  }
  const out: EntryRow[] = [];
  const handedOut = new Set<EntryRow>(); // `out`, for a lookup in O(1)
  let blocked = false; // nothing more of this target goes out in this pass
  let dueHeadOut = false;
  for (const row of [...lane.values()].sort((a, b) => a.seq - b.seq)) {
    if (row.unreadable || (isHead(row) && holdsAt(row, now))) continue; // set aside, or `from`
    const setApart = placeLetter(row.part) === "h";
    if (from !== undefined && row.seq > from.seq) {
      if (offered.has(row.id)) decision.held++;
      if (inline || !firm || setApart) continue;
      if (!isHead(row)) addTo(decision.setApart, target, from.id, row);
      else if (listedHeads.has(row.id)) addTo(decision.demote, target, from.id, row);
      continue;
    }
    if (setApart && !dueHeadOut) {
      // Still set apart, and no head before it goes out in this pass: what follows waits.
      blocked = true;
      continue;
    }
    // Entries set apart that the hold could not list may still be in the index's lag: what the
    // list does not name waits until a release has brought them all back.
    if (hold.spill !== undefined && !listedHeld.has(row.id)) {
      if (offered.has(row.id)) decision.held++;
      decision.release.add(target);
      blocked = true;
      continue;
    }
    // Its predecessor of the same source is still there and not handed out before it: it waits,
    // and so does what follows. A commit's own entry with an unknown predecessor waits for a pass;
    // with other writers, so does any entry the outbox feed has not chained yet.
    const prev = row.prev ? rows.get(String(row.prev)) : undefined;
    if (
      ((inline || unchainedWaits) && row.prev === undefined) ||
      (prev !== undefined && !prev.unreadable && !handedOut.has(prev))
    ) blocked = true;
    if (blocked) continue;
    out.push(row);
    handedOut.add(row);
    if (isHead(row)) {
      decision.dueHeads.add(row.id);
      dueHeadOut = true;
    }
  }
  return out;
}

function addTo(
  map: Map<string, { head: string; rows: EntryRow[] }>,
  target: string,
  head: string,
  row: EntryRow,
): void {
  const entry = map.get(target);
  if (entry) entry.rows.push(row);
  else map.set(target, { head, rows: [row] });
}
