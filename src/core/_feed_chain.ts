// Order across writers: the outbox feed chains the rows written with no `prev_seq` (another
// writer's, or ours after its commit dropped our chains) per target, among themselves, and each
// also waits for the entries of ours (chained by their own source) between it and its
// predecessor: its source is unknown (docs/delivery.md, "Order across writers"). Pure.

/**
 * How many seqs of each kind a target's `recent` lists keep at least (the highest); a list is cut
 * back to this only past twice as many, so that most rounds write a target's lists once. The item
 * stays small.
 */
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

/** A target's highest seqs the feed saw: unchained ones, and ours chained by their source. */
export interface Recent {
  unchained: number[];
  ours: number[];
}

/** What a round's chaining decided. */
export interface Chaining {
  /** Each unchained row's predecessor (0: none), by its id. */
  prev: Map<string, number>;
  /** Each unchained row's chained entries of ours between its predecessor and it, if any. */
  after: Map<string, number[]>;
  /** Each target's new `recent` lists (lowest first), by target. */
  recent: Map<string, Recent>;
}

/**
 * Chains a round's unchained rows: each one's predecessor is the seq just below it among its
 * target's `recent` and this round's unchained rows (0 if none), and it waits for the chained
 * seqs of ours between the two.
 */
export function chainRound(
  rows: Iterable<FedRow>,
  recent: ReadonlyMap<string, Recent>,
): Chaining {
  const byTarget = new Map<string, FedRow[]>();
  const chaining: Chaining = { prev: new Map(), after: new Map(), recent: new Map() };
  for (const row of rows) {
    if (!Number.isInteger(row.seq)) {
      // A seq no counter handed out orders nothing.
      if (row.unchained) chaining.prev.set(row.id, 0);
      continue;
    }
    const lane = byTarget.get(row.target);
    if (lane) lane.push(row);
    else byTarget.set(row.target, [row]);
  }
  const sorted = (seqs: Iterable<number>) => [...new Set(seqs)].sort((a, b) => a - b);
  for (const [target, lane] of byTarget) {
    const before = recent.get(target);
    const free = sorted([
      ...before?.unchained ?? [],
      ...lane.filter((r) => r.unchained).map((r) => r.seq),
    ]);
    const ours = sorted([
      ...before?.ours ?? [],
      ...lane.filter((r) => !r.unchained).map((r) => r.seq),
    ]);
    for (const row of lane) {
      if (!row.unchained) continue;
      const at = free.indexOf(row.seq);
      const prev = at > 0 ? free[at - 1]! : 0;
      chaining.prev.set(row.id, prev);
      const between = ours.filter((seq) => seq > prev && seq < row.seq);
      if (between.length > 0) chaining.after.set(row.id, between);
    }
    chaining.recent.set(target, {
      unchained: free.slice(-RECENT_MAX),
      ours: ours.slice(-RECENT_MAX),
    });
  }
  return chaining;
}
