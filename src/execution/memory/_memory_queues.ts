// MemoryStore's relay queues: the outbox (_memory_outbox.ts), spawn intents and timers with each
// item's relay bookkeeping (attempts, retry and dead-letter times), and what a relay pass reads of
// them, as DynamoDBStore's relay reads (queue/_relay_batch.ts, queue/_outbox_pass.ts,
// queue/_dead_letters.ts) do. Every failure, retry and drop is a transition of
// core/_queue_transitions.ts.
import type { QueueBatch } from "../../core/_queue_batch.ts";
import { isDue } from "../../core/_relay_rules.ts";
import * as transition from "../../core/_queue_transitions.ts";
import { byFireAt, bySeq, Lowest } from "../../core/_bounded.ts";
import { type Bookkeeping, MemoryOutbox } from "./_memory_outbox.ts";
export type { Bookkeeping };
import { linkEmits } from "../commit/_outbox_chain.ts";
import type {
  Backlog,
  DeadLetter,
  PendingSpawn,
  RelayFailure,
  RelayItem,
  RelayItems,
  RelayKey,
  RelayKind,
  Timer,
} from "../../core/types.ts";

/** The key of an execution's timer at `path` (or its dedupe mark of an event). */
export const keyOf = (a: string, b: string): string => `${a}\u0000${b}`;

/** The three queues of a MemoryStore, and the relay's reads and writes of them. */
export class MemoryQueues {
  readonly outbox: MemoryOutbox;
  readonly spawns = new Map<
    number,
    Omit<PendingSpawn, "context" | "seq"> & { context: string } & Bookkeeping
  >();
  readonly timers = new Map<string, Timer & Partial<Bookkeeping>>();

  /** Each execution's outbox chains: target key → its last seq (its item's `outbox_last`). */
  readonly #chains = new Map<string, Record<string, number>>();

  constructor(readonly now: () => number) {
    this.outbox = new MemoryOutbox(now);
  }

  /**
   * A commit's emits (`seqs`: theirs, ascending) as pending entries of execution `source`, each
   * naming its predecessor of the same target by the chains DynamoDBStore keeps (`linkEmits`): an
   * insert starts them empty.
   */
  emit(
    source: string,
    insert: boolean,
    emits: readonly { target: string | null; event: string }[],
    seqs: readonly number[],
  ): void {
    const from = insert ? {} : this.#chains.get(source) ?? {};
    const { prevs, next } = linkEmits(from, emits.map((emit) => emit.target), [...seqs]);
    if (insert || emits.length) this.#chains.set(source, next);
    emits.forEach(({ target, event }, i) => {
      const entry = { targetId: target, event, sourceId: source, prev: prevs[i] ?? undefined };
      this.outbox.add(seqs[i]!, entry, this.fresh());
    });
  }

  /** Forgets a deleted execution's chains (its item's, gone with it). */
  forget(source: string): void {
    this.#chains.delete(source);
  }

  /** What one relay pass reads of a queue at `now` (epoch seconds, the store's clock). */
  batch<K extends RelayKind>(kind: K, limit: number, now: number, seqs?: number[]): RelayItems<K> {
    const batch = kind === "timers"
      ? this.timerBatch(limit, now)
      : kind === "spawns"
      ? this.spawnBatch(limit, now)
      : this.outbox.batch(limit, now, seqs, true);
    return { ...batch, held: batch.held ?? 0, now } as RelayItems<K>;
  }

  /** Records a failed delivery; false when the item is gone. */
  recordFailure<K extends RelayKind>(kind: K, key: RelayKey<K>, failure: RelayFailure): boolean {
    if (kind === "outbox") return this.outbox.fail(key as number, failure);
    const row = this.row(kind, key);
    if (row === undefined) return false;
    // The same transition DynamoDBStore writes (queue/_transitions.ts builds it from this).
    Object.assign(row, transition.fail(failure, this.now() / 1000).bookkeeping);
    return true;
  }

  /** The `limit` lowest dead letters of a queue (outbox: of `target` when given). */
  deadLetters<K extends RelayKind>(
    kind: K,
    limit: number,
    target?: string | null,
  ): DeadLetter<K>[] {
    const letters: DeadLetter<K>[] = [];
    if (kind === "timers") {
      const dead = [...this.timers.values()].filter((t) => typeof t.deadAt === "number");
      for (const t of dead.sort(byFireAt).slice(0, limit)) {
        const timer = { executionId: t.executionId, path: t.path, fireAt: t.fireAt };
        letters.push(
          letter(timer as RelayKey<K>, timer as RelayItem<K>, t, {
            execution_id: t.executionId,
            path: t.path,
          }, t.executionId),
        );
      }
      return letters;
    }
    // The outbox's dead partition, as DynamoDBStore's: a dead head set apart behind a lower
    // head of its target is not in it.
    const dead = kind === "outbox"
      ? [...this.outbox.rows].filter(([, row]) =>
        row.part === "d" && row.deadAt !== null &&
        (target === undefined || row.targetId === target)
      )
      : [...this.spawns].filter(([, row]) => row.deadAt !== null);
    for (const [seq, row] of dead.sort(([a], [b]) => a - b).slice(0, limit)) {
      const item = kind === "outbox" ? this.outbox.entry(seq) : this.pendingSpawn(seq);
      const source = kind === "outbox"
        ? this.outbox.rows.get(seq)!.sourceId
        : this.spawns.get(seq)!.parentId;
      letters.push(letter(seq as RelayKey<K>, item as RelayItem<K>, row, { seq }, source));
    }
    return letters as DeadLetter<K>[];
  }

  /**
   * A queue's backlog, each count at most `limit` (see DynamoDBStore's `backlog`): pending
   * (timers: due at `now`), waiting, dead, the outbox targets held behind those, the oldest
   * pending.
   */
  backlog(kind: RelayKind, limit: number, now: number): Backlog {
    const counts = { pending: 0, waiting: 0, dead: 0 };
    const held = new Set<string>();
    let oldestAt: number | null = null;
    const count = (state: State, at: number | null, target?: string, unreadable?: boolean) => {
      if (counts[state] >= limit) return;
      counts[state]++;
      if (state !== "pending" && target !== undefined && !unreadable) held.add(target);
      if (state === "pending" && at !== null) oldestAt = Math.min(oldestAt ?? Infinity, at);
    };
    if (kind === "outbox") {
      // Where a pass finds each row (its place), counted when its bookkeeping agrees, as
      // DynamoDBStore's: pending behind a head that holds its target is neither deliverable nor
      // failed; set apart, it is pending again once a head's retry has come (and none holds it).
      const lanes = new Map<string, { from: number; due: boolean }>();
      for (const [seq, row] of this.outbox.rows) {
        let found: State | null = row.part === "d" ? "dead" : "pending";
        if (row.part === "w" && row.retryAt! > now) found = "waiting";
        if (row.part === "p" || row.part === "h") {
          const lane = lanes.get(row.target) ?? this.outbox.heldFrom(row.target, now);
          lanes.set(row.target, lane);
          if (seq > lane.from || (row.part === "h" && !lane.due)) found = null;
        }
        if (found !== null && found === stateOf(row, now)) {
          count(found, row.createdAt, row.target, row.unreadable);
        }
      }
    } else if (kind === "spawns") {
      for (const row of this.spawns.values()) count(stateOf(row, now), row.createdAt);
    } else {
      for (const timer of this.timers.values()) {
        const state = stateOf(timer, now);
        if (state !== "pending" || timer.fireAt <= now) count(state, timer.fireAt);
      }
    }
    return {
      ...counts,
      heldTargets: held.size,
      capped: Object.values(counts).some((n) => n >= limit),
      oldestAt,
    };
  }

  /** Makes a dead letter due again; false when there is no such dead letter. */
  retryDeadLetter<K extends RelayKind>(kind: K, key: RelayKey<K>): boolean {
    if (kind === "outbox") return this.outbox.onDeadLetter(key as number, "retry");
    const row = this.row(kind, key);
    if (row?.deadAt === null || row?.deadAt === undefined) return false;
    Object.assign(row, transition.retry().bookkeeping);
    return true;
  }

  /** Removes a dead letter; false when there is no such dead letter. */
  dropDeadLetter<K extends RelayKind>(kind: K, key: RelayKey<K>): boolean {
    if (kind === "outbox") return this.outbox.onDeadLetter(key as number, "drop");
    const row = this.row(kind, key);
    if (row?.deadAt === null || row?.deadAt === undefined) return false;
    if (kind === "timers") {
      const { executionId, path } = key as Timer;
      this.timers.delete(keyOf(executionId, path));
    } else this.spawns.delete(key as number);
    return true;
  }

  /** Bookkeeping of a new outbox entry or spawn. */
  fresh(): Bookkeeping {
    return {
      attempts: 0,
      retryAt: null,
      deadAt: null,
      lastError: null,
      createdAt: this.now() / 1000,
    };
  }

  /** The stored row of a queue item (a timer only while it still fires at `fireAt`). */
  row<K extends RelayKind>(kind: K, key: RelayKey<K>): Partial<Bookkeeping> | undefined {
    if (kind === "timers") {
      const { executionId, path, fireAt } = key as Timer;
      const timer = this.timers.get(keyOf(executionId, path));
      return timer?.fireAt === fireAt ? timer : undefined;
    }
    return (kind === "outbox" ? this.outbox.rows : this.spawns).get(key as number);
  }

  pendingSpawn(seq: number): PendingSpawn {
    const spawn = this.spawns.get(seq)!;
    return {
      seq,
      parentId: spawn.parentId,
      childId: spawn.childId,
      rootPath: spawn.rootPath,
      context: JSON.parse(spawn.context),
    };
  }

  spawnBatch(limit: number, now: number): QueueBatch<"spawns"> {
    let oldestAt: number | null = null;
    const ready: number[] = [];
    for (const [seq, row] of this.spawns) {
      if (row.deadAt !== null) continue;
      oldestAt = Math.min(oldestAt ?? Infinity, row.createdAt);
      if (due(row, now)) ready.push(seq);
    }
    const items = lowestSeqs(ready, limit).map((seq) => ({
      item: this.pendingSpawn(seq),
      attempts: this.spawns.get(seq)!.attempts,
    }));
    return { items, unreadable: [], oldestAt };
  }

  timerBatch(limit: number, now: number): QueueBatch<"timers"> {
    const ready = new Lowest<Timer & Partial<Bookkeeping>>(limit, byFireAt);
    for (const timer of this.timers.values()) {
      if (timer.fireAt <= now && typeof timer.deadAt !== "number" && due(timer, now)) {
        ready.offer(timer);
      }
    }
    const items = ready.sorted().map((t) => ({
      item: { executionId: t.executionId, path: t.path, fireAt: t.fireAt },
      attempts: t.attempts ?? 0,
    }));
    return { items, unreadable: [], oldestAt: items[0]?.item.fireAt ?? null };
  }
}

type State = "pending" | "waiting" | "dead";

/** Where a row stands at `now` by its bookkeeping: dead, waiting for a retry to come, or pending. */
function stateOf(row: Partial<Bookkeeping>, now: number): State {
  if (typeof row.deadAt === "number") return "dead";
  return typeof row.retryAt === "number" && row.retryAt > now ? "waiting" : "pending";
}

/** Whether a row may be attempted at `now` by its retry time (the relay's rule; dead apart). */
function due(row: { retryAt?: number | null }, now: number): boolean {
  return isDue({ retryAt: row.retryAt }, now);
}

function letter<K extends RelayKind>(
  key: RelayKey<K>,
  item: RelayItem<K>,
  row: Partial<Bookkeeping>,
  raw: Record<string, unknown>,
  sourceId: string | null,
): DeadLetter<K> {
  return {
    key,
    item,
    attempts: row.attempts ?? 0,
    lastError: row.lastError ?? null,
    deadAt: row.deadAt ?? 0,
    sourceId,
    raw: { ...raw, attempts: row.attempts, last_error: row.lastError, dead_at: row.deadAt },
  };
}

/** The `limit` lowest of `seqs`, ascending. */
function lowestSeqs(seqs: Iterable<number>, limit: number): number[] {
  const lowest = new Lowest(limit, bySeq);
  for (const seq of seqs) lowest.offer(seq);
  return lowest.sorted();
}
