// Order across writers: the outbox feed's chaining of rows per target (docs/delivery.md,
// "Order across writers"). Pure, so tests/core/ runs it with no permissions.

/** How many seqs a target's `recent` list keeps (the highest): the hold item stays small. */
export const RECENT_MAX = 16;

/** An outbox row a feed round saw (its NEW image). */
export interface FedRow {
  /** The seq as stored (the row's key). */
  id: string;
  seq: number;
  /** Its target's key (see _outbox_chain.ts). */
  target: string;
  /** Whether the row has no `prev_seq` yet (another writer's, or ours whose chain it dropped). */
  unchained: boolean;
}

/** What a round's chaining decided. */
export interface Chaining {
  /** Each unchained row's predecessor (0: none), by its id. */
  prev: Map<string, number>;
  /** Each target's new `recent` list (the highest RECENT_MAX seqs, lowest first), by target. */
  recent: Map<string, number[]>;
}

/**
 * Chains a round's rows: an unchained row's predecessor is the seq just below it among its
 * target's `recent` and this round's (0 if none). Only this round's targets are in the answer.
 */
export function chainRound(
  rows: Iterable<FedRow>,
  recent: ReadonlyMap<string, readonly number[]>,
): Chaining {
  const byTarget = new Map<string, FedRow[]>();
  const chaining: Chaining = { prev: new Map(), recent: new Map() };
  for (const row of rows) {
    if (!Number.isInteger(row.seq)) {
      // A seq no counter handed out (another tool's) orders nothing: chained to nothing.
      if (row.unchained) chaining.prev.set(row.id, 0);
      continue;
    }
    const lane = byTarget.get(row.target);
    if (lane) lane.push(row);
    else byTarget.set(row.target, [row]);
  }
  for (const [target, lane] of byTarget) {
    const seen = new Set<number>(recent.get(target) ?? []);
    for (const row of lane) seen.add(row.seq);
    const seqs = [...seen].sort((a, b) => a - b);
    for (const row of lane) {
      if (!row.unchained) continue;
      const at = seqs.indexOf(row.seq);
      chaining.prev.set(row.id, at > 0 ? seqs[at - 1]! : 0);
    }
    chaining.recent.set(target, seqs.slice(-RECENT_MAX));
  }
  return chaining;
}
