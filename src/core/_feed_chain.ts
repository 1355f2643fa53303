// Order across writers: the outbox feed chains the rows written with no `prev_seq` (another
// writer's, or ours after its commit dropped our chains) per target, among themselves: one
// source's entries stay in order, whatever entries of ours (chained by their own source) sit
// between them (docs/delivery.md, "Order across writers"). Pure.

/** How many unchained seqs a target's `recent` list keeps (the highest): the hold item stays small. */
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
 * Chains a round's unchained rows: each one's predecessor is the seq just below it among its
 * target's `recent` and this round's unchained rows (0 if none). Chained rows are passed over.
 */
export function chainRound(
  rows: Iterable<FedRow>,
  recent: ReadonlyMap<string, readonly number[]>,
): Chaining {
  const byTarget = new Map<string, FedRow[]>();
  const chaining: Chaining = { prev: new Map(), recent: new Map() };
  for (const row of rows) {
    if (!row.unchained) continue;
    if (!Number.isInteger(row.seq)) {
      chaining.prev.set(row.id, 0); // a seq no counter handed out orders nothing
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
      const at = seqs.indexOf(row.seq);
      chaining.prev.set(row.id, at > 0 ? seqs[at - 1]! : 0);
    }
    chaining.recent.set(target, seqs.slice(-RECENT_MAX));
  }
  return chaining;
}
