// The queue's transitions, once, for both execution stores (#38): what each one does to a row —
// the bookkeeping it leaves and the place it moves the row to (docs/delivery.md, "The state
// machine") — and to its outbox target's hold (heads: entries that failed and hold the target;
// held: entries set apart behind them). DynamoDBStore builds its writes from these
// (queue/_transitions.ts, queue/_holds.ts); MemoryStore applies them to its maps. Pure: no
// store, no clock — every time is passed in, in epoch seconds.
import { afterFailure, type Bookkeeping, RETRIED } from "./_relay_rules.ts";
import type { PlaceLetter } from "./_outbox_decide.ts";
import type { RelayFailure } from "./relay_types.ts";

/** One of a hold's two sets: its heads, or the entries held behind them. */
export type HoldSet = "heads" | "held";

/** One change of a target's hold: seqs (as stored) added to, or removed from, one of its sets. */
export interface HoldOp {
  set: HoldSet;
  verb: "add" | "remove";
  seqs: string[];
}

/**
 * What a transition does: the row's bookkeeping after it (`undefined`: unchanged), the place it
 * moves the row to (`null`: the row is deleted), the changes to its target's hold, and whether
 * its target is then released (what the hold set apart comes back: see {@linkcode release}).
 */
export interface Transition {
  bookkeeping?: Bookkeeping;
  to: PlaceLetter | null;
  hold: HoldOp[];
  release: boolean;
}

/** The hold change that makes `seq` a head of its target. */
export const addHead = (seq: string): HoldOp => ({ set: "heads", verb: "add", seqs: [seq] });

/** The hold change that lists `seqs` as held behind their target's heads. */
export const addHeld = (seqs: string[]): HoldOp => ({ set: "held", verb: "add", seqs });

/** The hold change that takes delivered (or gone) entries off the list of held entries. */
export const unlistHeld = (seqs: string[]): HoldOp => ({ set: "held", verb: "remove", seqs });

/** The hold change that takes heads no longer holding their target out of its heads. */
export const removeHeads = (seqs: string[]): HoldOp => ({ set: "heads", verb: "remove", seqs });

/**
 * fail, dead-letter: a row to waiting (until `failure.retryAt`) or, with `retryAt: null`, to dead
 * since `now`. An outbox entry that failed (`entry`: its seq as stored; not one set aside as
 * unreadable) becomes a head of its target, so that the target's later entries wait behind it.
 */
export function fail(failure: RelayFailure, now: number, entry?: string): Transition {
  const bookkeeping = afterFailure(failure, now);
  return {
    bookkeeping,
    to: bookkeeping.deadAt !== null ? "d" : "w",
    hold: entry !== undefined && !failure.unreadable ? [addHead(entry)] : [],
    release: false,
  };
}

/**
 * retry: a dead letter back to pending, as if it never failed. An outbox entry (`entry`: its seq
 * as stored) stays first in its target's line: its hold lists it as held, with the entries behind
 * it, until it is delivered; and its target is released.
 */
export function retry(entry?: string): Transition {
  return {
    bookkeeping: { ...RETRIED },
    to: "p",
    hold: entry !== undefined ? [addHeld([entry])] : [],
    release: entry !== undefined,
  };
}

/** drop: a dead letter deleted; an outbox entry's (`entry`: its seq) target is released. */
export function drop(entry?: string): Transition {
  return { to: null, hold: [], release: entry !== undefined };
}

/**
 * deliver and acknowledge: the row deleted; a head releases its target (one a pass handed out as
 * a head, or one handed out as none that a concurrent pass's failed delivery made a head since).
 */
export function acknowledge(head: boolean): Transition {
  return { to: null, hold: [], release: head };
}

/**
 * hold: pending outbox entries set apart behind their target's head, listed by key on its hold
 * (`list`: whether the hold has room for them).
 */
export function setApart(seqs: string[], list = true): Transition {
  return { to: "h", hold: list ? [addHeld(seqs)] : [], release: false };
}

/**
 * demote: a head behind a lower head of its target becomes one of the entries held behind it:
 * out of the heads, onto the list (`list`: whether the hold has room for it).
 */
export function demote(seq: string, list = true): Transition {
  return {
    to: "h",
    hold: [removeHeads([seq]), ...(list ? [addHeld([seq])] : [])],
    release: false,
  };
}

/** release (of one entry): a held entry back to pending; it stays listed until delivered. */
export function bringBack(): Transition {
  return { to: "p", hold: [], release: false };
}

/** A target's hold as a store keeps it in memory. */
export interface Hold {
  heads: Set<string>;
  held: Set<string>;
}

/** Applies hold changes to `hold`, in order. */
export function applyHold(hold: Hold, ops: readonly HoldOp[]): Hold {
  for (const { set, verb, seqs } of ops) {
    for (const seq of seqs) {
      if (verb === "add") hold[set].add(seq);
      else hold[set].delete(seq);
    }
  }
  return hold;
}

/** A row a target's hold names, as a release reads it (by key). */
export interface ReleaseRow {
  seq: number;
  /** Set apart behind its target's heads (its place is its target's held partition). */
  setApart: boolean;
  /** Still one of its target's heads ({@linkcode isHead}): waiting for a retry, or dead. */
  head: boolean;
}

/** What a release of a target does: see {@linkcode release}. */
export interface Release {
  /** The held entries that come back to pending, by seq as stored. */
  back: string[];
  /** The lowest head still holding the target (Infinity: none does). */
  lowest: number;
  /** The hold change taking the heads that no longer hold it out, once the entries are back. */
  gone: HoldOp | undefined;
}

/**
 * release (of a target): which entries its hold lists come back to pending — those set apart
 * below the lowest head still holding it (all of them when none does) — and which heads leave
 * the hold, gone or no longer failed (after the entries are back: until then the target stays
 * held). `headRow` and `heldRow` read the rows the hold names, by seq as stored (undefined: gone).
 */
export function release(
  hold: { heads: Iterable<string>; held: Iterable<string> },
  headRow: (seq: string) => ReleaseRow | undefined,
  heldRow: (seq: string) => ReleaseRow | undefined = headRow,
): Release {
  let lowest = Infinity;
  const gone: string[] = [];
  for (const id of hold.heads) {
    const row = headRow(id);
    if (row === undefined || !row.head) gone.push(id);
    else if (row.seq < lowest) lowest = row.seq;
  }
  const back: string[] = [];
  for (const id of hold.held) {
    const row = heldRow(id);
    if (row !== undefined && row.setApart && row.seq < lowest) back.push(id);
  }
  return { back, lowest, gone: gone.length ? removeHeads(gone) : undefined };
}
