// The arithmetic that tells other writers' seqs from this module's blocks (see _foreign_seqs.ts
// and _recorded_blocks.ts): pure, no DynamoDB, no AWS SDK (tests/core/ runs it with no
// permissions).
import type { Item } from "../../core/_attributes.ts";
import { COUNTER } from "../../core/_layout.ts";

/** A recorded block, as the counter item's `blocks` holds it. */
export const blockText = (first: number, last: number): string => `${first}-${last}`;

/** A recorded block's range, or null for text that is not one. */
export function blockRange(text: string): [number, number] | null {
  const match = /^(\d+)-(\d+)$/.exec(text);
  return match ? [Number(match[1]), Number(match[2])] : null;
}

/**
 * How long a seq another writer took is probed for before it counts as never written (its
 * commit lost its race after adding to the counter): far longer than a commit's two calls.
 */
export const MISSING_GRACE_SECONDS = 600;

/** The most seqs one read probes (other writers' backlog beyond waits for the next pass). */
export const PROBES_PER_READ = 1000;

/** What the counter item says of other writers' seqs. */
export interface CounterState {
  /** The counter's value: the highest seq anyone took. */
  n: number;
  /** Every seq up to this one is accounted for. */
  seen: number;
  /** This module's blocks, lowest first, with their text as stored. */
  blocks: { first: number; last: number; text: string }[];
  /** Seqs probed and not found yet → when first probed (epoch seconds). */
  missing: Map<number, number>;
}

/** The counter item's state (no item: nothing taken yet). */
export function counterState(item: Item | undefined): CounterState {
  const blocks = [...item?.[COUNTER.blocks]?.SS ?? []].flatMap((text) => {
    const range = blockRange(text);
    return range ? [{ first: range[0], last: range[1], text }] : [];
  }).sort((a, b) => a.first - b.first);
  const missing = new Map<number, number>();
  for (const [seq, at] of Object.entries(item?.[COUNTER.missing]?.M ?? {})) {
    missing.set(Number(seq), Number(at.N));
  }
  return {
    n: Number(item?.[COUNTER.n]?.N ?? 0),
    seen: Number(item?.[COUNTER.seen]?.N ?? 0),
    blocks,
    missing,
  };
}

/**
 * The seqs a read probes, lowest first: those probed before and still missing, then those past
 * `seen` that no block of ours holds, at most `max` in all; `upTo`, the highest seq the walk
 * accounted for (every other writer's seq up to it is among `seqs` or was seen before).
 */
export function probesOf(state: CounterState, max: number): { seqs: number[]; upTo: number } {
  const seqs = [...state.missing.keys()].sort((a, b) => a - b).slice(0, max);
  let upTo = state.seen, b = 0;
  const blocks = state.blocks;
  while (upTo < state.n && seqs.length < max) {
    const next = upTo + 1;
    while (b < blocks.length && blocks[b]!.last < next) b++;
    const block = blocks[b];
    if (block && block.first <= next) {
      upTo = Math.min(block.last, state.n); // ours: nothing to probe
      continue;
    }
    seqs.push(next);
    upTo = next;
  }
  return { seqs, upTo };
}

/**
 * The counter's state after a probe of `probes` (found: the seqs whose row exists): `seen` moves
 * to `upTo`, found seqs leave `missing`, new ones join it at `now`, and those missing for longer
 * than the grace are given up; the blocks wholly at or below `seen` are no longer needed.
 */
export function afterProbe(
  state: CounterState,
  probes: { seqs: number[]; upTo: number },
  found: ReadonlySet<number>,
  now: number,
): { seen: number; missing: Map<number, number>; pruned: string[] } {
  const missing = new Map<number, number>();
  for (const seq of probes.seqs) {
    if (found.has(seq)) continue;
    const since = state.missing.get(seq) ?? now;
    if (now - since < MISSING_GRACE_SECONDS) missing.set(seq, since);
  }
  // Missing seqs this probe did not reach (more than `max`) stay as they were.
  for (const [seq, since] of state.missing) {
    if (!probes.seqs.includes(seq) && !found.has(seq)) missing.set(seq, since);
  }
  const seen = Math.max(state.seen, probes.upTo);
  const pruned = state.blocks.filter((block) => block.last <= seen).map((block) => block.text);
  return { seen, missing, pruned };
}
