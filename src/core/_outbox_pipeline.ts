// The outbox pipeline, once, for both stores and the relay: read (an index's candidates, then rows
// and holds by key, strongly), decide (pure: _outbox_decide.ts), apply (the queue's writes). A store
// implements only the reads and the writes (OutboxQueue); nothing here keeps anything between calls.
import { chainedBelow, decideOutbox, type OutboxPlan, releaseOf } from "./_outbox_decide.ts";
import { isHead } from "./_relay_rules.ts";
import type {
  OutboxCandidate,
  OutboxHold,
  OutboxQueue,
  OutboxRow,
  RowQueue,
} from "./relay_queues.ts";
import type { OutboxEntry, RelayFailure, RelayKey, RelayKind } from "./relay_types.ts";
import type { ExecutionStore } from "./types.ts";

/** What a pass reads: `limit` entries deliverable at `now`, or a commit's own `seqs`. */
export interface OutboxReadOptions {
  now: number;
  limit: number;
  seqs?: readonly number[];
  /** Stops reading more candidates: the pass decides on what it read. */
  signal?: AbortSignal;
}

/**
 * Reads and decides a pass: the due waiting entries and the lowest pending ones, a chunk at a time
 * until `limit` can go out (at most max(1000, 4 × limit) examined); with `seqs`, just those.
 */
export async function readOutbox(
  queue: OutboxQueue,
  { now, limit, seqs, signal }: OutboxReadOptions,
): Promise<OutboxPlan> {
  const read = new PassRead(queue, now, limit, seqs !== undefined);
  if (seqs !== undefined) {
    const rows = await queue.rows([...new Set(seqs)].map(String));
    await read.offer([...rows.values()], rows);
    return read.decide();
  }
  const cursor = queue.candidates(now, signal);
  const budget = limit === Infinity ? Infinity : Math.max(1000, 4 * limit);
  let plan = read.decide();
  for (let examined = 0; plan.deliver.length < limit && examined < budget && !signal?.aborted;) {
    const want = limit === Infinity ? 1000 : Math.max(25, limit - plan.deliver.length);
    const chunk = await cursor.next(Math.min(want, budget - examined));
    if (chunk.length === 0) break;
    examined += chunk.length;
    await read.offer(chunk);
    plan = read.decide();
  }
  return plan;
}

/** Writes a pass's plan, then releases the targets the writes found no longer held. */
export async function applyPlan(queue: OutboxQueue, plan: OutboxPlan): Promise<void> {
  const { recheck } = await queue.apply(plan.writes);
  if (recheck.length) await release(queue, recheck);
}

/**
 * Acknowledges delivered rows: those that were no head are deleted; then every target they went
 * to is read by key, and released where a head is gone, whoever acknowledged it (a concurrent pass
 * may have made one of them a head). A head delivered is deleted with its release.
 */
export async function acknowledge(queue: OutboxQueue, rows: readonly OutboxRow[]): Promise<void> {
  const plain = rows.filter((row) => !isHead(row)).map((row) => row.id);
  if (plain.length) await queue.apply({ ack: plain });
  const heads = rows.filter((row) => isHead(row));
  await release(queue, rows.map((row) => row.target), heads);
}

/** `ackOutbox`: the rows of these seqs read by key, then acknowledged. */
export async function acknowledgeSeqs(queue: OutboxQueue, seqs: readonly number[]): Promise<void> {
  const rows = await queue.rows([...new Set(seqs)].map(String));
  await acknowledge(queue, [...rows.values()]);
}

/** `recordFailure` of an outbox entry: false when it is gone. */
export async function failSeq(
  queue: OutboxQueue,
  seq: number,
  failure: RelayFailure,
): Promise<boolean> {
  const row = (await queue.rows([String(seq)])).get(String(seq));
  if (row === undefined) return false;
  return (await queue.apply({ fail: [{ row, failure }] })).failed[0] === true;
}

/**
 * Releases `targets` where their hold says so, read by key: what was set apart below the lowest
 * head still failing comes back, and heads gone or no longer failed leave the hold. `acked`: heads
 * delivered, deleted as their target's release starts.
 */
export async function release(
  queue: OutboxQueue,
  targets: readonly string[],
  acked: readonly OutboxRow[] = [],
): Promise<void> {
  const unique = [...new Set(targets)];
  if (unique.length === 0) return;
  const holds = await queue.holds(unique);
  const heads = [...holds.values()].flatMap((hold) => hold.heads);
  const rows = heads.length ? await queue.rows(heads) : new Map<string, OutboxRow>();
  // Only the targets with something to release read what their holds list.
  const due: { target: string; hold: OutboxHold; acks: string[] }[] = [];
  for (const target of unique) {
    const hold = holds.get(target) ?? { heads: [], held: [], spill: null };
    const acks = acked.filter((row) => row.target === target).map((row) => row.id);
    const failing = hold.heads.filter((id) => {
      const row = rows.get(id);
      return row !== undefined && !acks.includes(id) && isHead(row);
    });
    const lowest = Math.min(...failing.map(Number));
    if (acks.length || failing.length < hold.heads.length || hold.held.some((id) => +id < lowest)) {
      due.push({ target, hold, acks });
    }
  }
  const held = due.flatMap(({ hold }) => hold.held);
  if (held.length) { for (const [id, row] of await queue.rows(held)) rows.set(id, row); }
  const releases = due.map(({ target, hold, acks }) => releaseOf(target, hold, rows, acks))
    .filter((made) => made.acks.length || made.back.length || made.gone.length);
  if (releases.length) await queue.apply({ release: releases });
}

/**
 * What one pass read by key, growing as it is offered more: the rows (absent: gone), the holds of
 * the offered rows' targets, and the predecessors and listed entries of every row read.
 */
class PassRead {
  readonly rows = new Map<string, OutboxRow>();
  readonly holds = new Map<string, OutboxHold>();
  readonly offered: string[] = [];
  readonly #asked = new Set<string>();

  constructor(
    readonly queue: OutboxQueue,
    readonly now: number,
    readonly limit: number,
    readonly inline: boolean,
  ) {}

  /** Reads, strongly, what decides these candidates: their rows, holds, listed entries, chains. */
  async offer(
    candidates: OutboxCandidate[],
    known?: ReadonlyMap<string, OutboxRow>,
  ): Promise<void> {
    const given = new Map(known);
    for (const { id, row } of candidates) if (row !== undefined) given.set(id, row);
    for (const [id, row] of given) {
      this.#asked.add(id);
      this.rows.set(id, row);
    }
    this.offered.push(...candidates.map((c) => c.id));
    const targets = [...new Set(candidates.map((c) => c.target))].filter((t) => !this.holds.has(t));
    const first = candidates.flatMap((c) => c.prev ? [c.id, String(c.prev)] : [c.id]);
    const [holds, read] = await Promise.all([
      targets.length ? this.queue.holds(targets) : new Map<string, OutboxHold>(),
      this.#read(first),
    ]);
    let want = [...read, ...given.values()].flatMap(prevOf);
    for (const target of targets) {
      const hold = holds.get(target) ?? { heads: [], held: [], spill: null };
      this.holds.set(target, hold);
      want.push(...hold.heads, ...hold.held);
    }
    // The feed's chained entry just below each one, which it waits for while it is there.
    const listed = [...this.holds.entries()].flatMap(([target, hold]) =>
      hold.held.map((id) => ({ id, target }))
    );
    for (const { id, target } of [...candidates, ...listed]) {
      const below = chainedBelow(this.holds.get(target), Number(id));
      if (below !== undefined) want.push(below);
    }
    for (let round = 0; round < 2 && want.length; round++) {
      want = (await this.#read(want)).flatMap(prevOf);
    }
  }

  decide(): OutboxPlan {
    return decideOutbox({
      now: this.now,
      limit: this.limit,
      inline: this.inline,
      offered: this.offered,
      rows: this.rows,
      holds: this.holds,
    });
  }

  /** The rows of the ids not read yet. */
  async #read(ids: readonly string[]): Promise<OutboxRow[]> {
    const wanted = [...new Set(ids)].filter((id) => !this.#asked.has(id));
    if (wanted.length === 0) return [];
    for (const id of wanted) this.#asked.add(id);
    const found = await this.queue.rows(wanted);
    for (const [id, row] of found) this.rows.set(id, row);
    return [...found.values()];
  }
}

const prevOf = (row: OutboxRow): string[] => [
  ...row.prev ? [String(row.prev)] : [],
  ...(row.after ?? []).map(String),
];

/** `pendingOutbox`: the `limit` lowest entries deliverable now, as a pass reads them (no write). */
export async function pendingEntries(queue: OutboxQueue, limit: number): Promise<OutboxEntry[]> {
  const plan = await readOutbox(queue, { now: queue.now(), limit });
  return plan.deliver.flatMap((row) => "error" in row.entry ? [] : [row.entry]);
}

/** `recordFailure` of any queue's item: false when it is gone (a timer: re-scheduled). */
export function recordFailure<K extends RelayKind>(
  store: Pick<ExecutionStore, "outboxQueue" | "spawnQueue" | "timerQueue">,
  kind: K,
  key: RelayKey<K>,
  failure: RelayFailure,
): Promise<boolean> {
  if (kind === "outbox") return failSeq(store.outboxQueue, key as number, failure);
  const queue = kind === "spawns" ? store.spawnQueue : store.timerQueue;
  return (queue as RowQueue<"spawns" | "timers">).fail(key as RelayKey<"spawns">, failure);
}
