// Order across writers (#39): the Python store's outbox rows name no source, so a store built
// with `otherWriters: true` chains every entry its outbox feed sees per target, by seq. A row's
// predecessor is the highest seq below it among the rows to the same target the feed has seen:
// this round's rows (every writer's) and the target's `recent` list (the highest seqs the feed
// saw before, kept on the target's hold item). A pass then delivers a row only once its
// predecessor is gone: read by key, so index lag cannot invert two entries of one target.
// Pure: no DynamoDB, no AWS SDK (tests/core/ runs it with no permissions).

/** How many seqs a target's `recent` list keeps (the highest): the hold item stays small. */
export const RECENT_MAX = 16;

/** An outbox row a feed round saw (its NEW image). */
export interface FedRow {
  /** The seq as stored (the row's key). */
  id: string;
  seq: number;
  /** Its target's key (see _outbox_chain.ts). */
  target: string;
  /** Whether the row needs a predecessor: it has no `prev_seq` (another writer's, or ours
   * committed after another writer's commit of the same execution dropped our chains). */
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
 * Chains a round's rows: per target, every seq seen (`recent` and this round's), in order; an
 * unchained row's predecessor is the one just below it (0 if none). A target's new `recent` is
 * the highest RECENT_MAX of them. Only targets of this round's rows are in the answer.
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
