// MemoryStore's relay queues: the outbox, spawn intents and timers with each item's relay
// bookkeeping (attempts, retry and dead-letter times), and what a relay pass reads of them,
// as DynamoDBStore's relay reads (queue/_relay_batch.ts, queue/_outbox_bodies.ts, queue/_dead_letters.ts) do.
import type { QueueBatch } from "../../core/_queue_batch.ts";
import type { Event } from "../../core/documents.ts";
import { afterFailure, holdsAt, isDue, isHead, RETRIED } from "../../core/_relay_rules.ts";
import { byFireAt, bySeq, Lowest } from "../../core/_bounded.ts";
import { entryState } from "../../core/_entry_states.ts";
import type {
  Backlog,
  DeadLetter,
  ExecutionOutbox,
  OutboxEntry,
  OutboxEntryState,
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
  readonly outbox = new Map<
    number,
    { targetId: string | null; event: string; sourceId: string } & Bookkeeping
  >();
  readonly spawns = new Map<
    number,
    Omit<PendingSpawn, "context" | "seq"> & { context: string } & Bookkeeping
  >();
  readonly timers = new Map<string, Timer & Partial<Bookkeeping>>();
  /**
   * Outbox entries a pass met behind a held target, as DynamoDBStore's pass sets them apart (to
   * their target's partition): later passes do not count them as held again until released.
   */
  readonly #setApart = new Set<number>();

  constructor(readonly now: () => number) {}

  /** What one relay pass reads of a queue at `now` (epoch seconds, the store's clock). */
  batch<K extends RelayKind>(kind: K, limit: number, now: number, seqs?: number[]): RelayItems<K> {
    const batch = kind === "timers"
      ? this.timerBatch(limit, now)
      : kind === "spawns"
      ? this.spawnBatch(limit, now)
      : this.outboxBatch(limit, now, seqs, true);
    return { ...batch, held: batch.held ?? 0, now } as RelayItems<K>;
  }

  /** Records a failed delivery; false when the item is gone. */
  recordFailure<K extends RelayKind>(kind: K, key: RelayKey<K>, failure: RelayFailure): boolean {
    const row = this.row(kind, key);
    if (row === undefined) return false;
    // The same transition DynamoDBStore writes (queue/_transitions.ts builds it from this).
    Object.assign(row, afterFailure(failure, this.now() / 1000));
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
    const table: Map<number, Bookkeeping> = kind === "outbox" ? this.outbox : this.spawns;
    const dead = [...table]
      .filter(([seq, row]) =>
        row.deadAt !== null && (target === undefined || this.outbox.get(seq)?.targetId === target)
      )
      .sort(([a], [b]) => a - b);
    for (const [seq, row] of dead.slice(0, limit)) {
      const item = kind === "outbox" ? this.outboxEntry(seq) : this.pendingSpawn(seq);
      const source = kind === "outbox"
        ? this.outbox.get(seq)!.sourceId
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
    const held = new Set<string | null>();
    let oldestAt: number | null = null;
    const rows: [Partial<Bookkeeping>, number | null, string | null | undefined, number][] =
      kind === "timers"
        ? [...this.timers.values()].map((t) => [t, t.fireAt <= now ? t.fireAt : null, undefined, 0])
        : [...(kind === "outbox" ? this.outbox : this.spawns)].map(([seq, row]) => [
          row,
          row.createdAt,
          "targetId" in row ? row.targetId as string | null : undefined,
          seq,
        ]);
    const heads = kind === "outbox" ? this.heads(now) : new Map<string | null, number>();
    for (const [row, at, target, seq] of rows) {
      const state = typeof row.deadAt === "number"
        ? "dead"
        : typeof row.retryAt === "number" && row.retryAt > now
        ? "waiting"
        : "pending";
      if (state === "pending" && kind === "timers" && at === null) continue;
      // Held behind a head of its target: neither deliverable nor failed (a pass sets it apart).
      if (state === "pending" && seq > (heads.get(target ?? null) ?? Infinity)) continue;
      if (counts[state] >= limit) continue;
      counts[state]++;
      if (state !== "pending" && kind === "outbox" && !row.unreadable) held.add(target ?? null);
      if (state === "pending" && at !== null) oldestAt = Math.min(oldestAt ?? Infinity, at);
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
    const row = this.row(kind, key);
    if (row?.deadAt === null || row?.deadAt === undefined) return false;
    Object.assign(row, RETRIED);
    return true;
  }

  /** Removes a dead letter; false when there is no such dead letter. */
  dropDeadLetter<K extends RelayKind>(kind: K, key: RelayKey<K>): boolean {
    const row = this.row(kind, key);
    if (row?.deadAt === null || row?.deadAt === undefined) return false;
    if (kind === "timers") {
      const { executionId, path } = key as Timer;
      this.timers.delete(keyOf(executionId, path));
    } else (kind === "outbox" ? this.outbox : this.spawns).delete(key as number);
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
    return (kind === "outbox" ? this.outbox : this.spawns).get(key as number);
  }

  outboxEntry(seq: number): OutboxEntry {
    const entry = this.outbox.get(seq)!;
    return { seq, targetId: entry.targetId, event: JSON.parse(entry.event) as Event };
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

  /** Each held target's lowest head at `now` (the relay's rule, {@linkcode holdsAt}). */
  heads(now: number): Map<string | null, number> {
    const held = new Map<string | null, number>();
    for (const [seq, row] of this.outbox) {
      if (holdsAt(row, now)) {
        held.set(row.targetId, Math.min(held.get(row.targetId) ?? Infinity, seq));
      }
    }
    return held;
  }

  /**
   * The outbox as a relay pass reads it: a target is held from its lowest entry that waits or is
   * dead; with `seqs`, just those entries, each also held behind a pending earlier entry of its
   * source and target that is not among them.
   */
  outboxBatch(limit: number, now: number, seqs?: number[], pass = false): QueueBatch<"outbox"> {
    const held = this.heads(now);
    let behindHeld = 0; // RelayItems.held
    // Lag as DynamoDBStore's pass sees it: the entries it reads (pending, or their retry due),
    // not those waiting for a retry still to come or held behind one.
    let oldestAt: number | null = null;
    for (const [seq, row] of this.outbox) {
      if (row.deadAt !== null || !due(row, now) || seq > (held.get(row.targetId) ?? Infinity)) {
        continue;
      }
      oldestAt = Math.min(oldestAt ?? Infinity, row.createdAt);
    }
    const clear = (seq: number) => {
      const row = this.outbox.get(seq)!;
      return row.deadAt === null && due(row, now) && !(seq > (held.get(row.targetId) ?? Infinity));
    };
    let chosen: number[];
    if (seqs === undefined) {
      chosen = [...this.outbox.keys()].filter(clear).sort(bySeq).slice(0, limit);
      if (pass) behindHeld = this.#setApartHeld(held, now);
    } else {
      const given = new Set(seqs.filter((seq) => this.outbox.has(seq)));
      const blocked = new Set<string>();
      // As DynamoDBStore's: an entry above a head of its target (a failed entry, its retry due or
      // not) waits for a pass, which delivers the head first; the head itself may go.
      const lowestHead = new Map<string | null, number>();
      for (const [seq, row] of this.outbox) {
        if (isHead(row)) {
          lowestHead.set(row.targetId, Math.min(lowestHead.get(row.targetId) ?? Infinity, seq));
        }
      }
      chosen = [];
      for (const seq of [...given].sort(bySeq)) {
        const row = this.outbox.get(seq)!;
        const chain = `${row.sourceId}\u0000${JSON.stringify(row.targetId)}`;
        const behind = [...this.outbox].some(([other, o]) =>
          other < seq && !given.has(other) && o.sourceId === row.sourceId &&
          o.targetId === row.targetId
        );
        const aboveHead = seq > (lowestHead.get(row.targetId) ?? Infinity);
        if (aboveHead && !row.unreadable) behindHeld++;
        if (blocked.has(chain) || behind || aboveHead || !clear(seq)) blocked.add(chain);
        else chosen.push(seq);
      }
    }
    const items = chosen.map((seq) => ({
      item: this.outboxEntry(seq),
      attempts: this.outbox.get(seq)!.attempts,
    }));
    return { items, unreadable: [], oldestAt, held: behindHeld };
  }

  /**
   * Sets apart the entries a pass meets behind a held target (`held`: each target's lowest head
   * holding it at `now`), as DynamoDBStore's pass moves them out of later passes' reads; those
   * released (no longer behind a head) or gone are forgotten. How many it set apart now.
   */
  #setApartHeld(held: Map<string | null, number>, now: number): number {
    const behind = (seq: number) => {
      const row = this.outbox.get(seq);
      return row !== undefined && row.deadAt === null && due(row, now) &&
        seq > (held.get(row.targetId) ?? Infinity);
    };
    // Released once no head (failed, its retry due or not) comes before it: a head whose retry
    // is due and fails again keeps what it held set apart, as DynamoDBStore's hold does.
    const heads = new Map<string | null, number>();
    for (const [seq, row] of this.outbox) {
      if (isHead(row)) heads.set(row.targetId, Math.min(heads.get(row.targetId) ?? Infinity, seq));
    }
    for (const seq of this.#setApart) {
      const row = this.outbox.get(seq);
      if (row === undefined || !(seq > (heads.get(row.targetId) ?? Infinity))) {
        this.#setApart.delete(seq);
      }
    }
    let count = 0;
    for (const seq of this.outbox.keys()) {
      if (!behind(seq) || this.#setApart.has(seq)) continue;
      this.#setApart.add(seq);
      count++;
    }
    return count;
  }

  /**
   * Execution `id`'s outbox as operators read it (see DynamoDBStore's `executionOutbox`): what it
   * emitted (nothing known when its item is gone: `known` false), and what is to it and failed or
   * was set apart behind what failed — by the same rule, {@linkcode entryState}.
   */
  executionOutbox(id: string, limit: number, known: boolean): ExecutionOutbox {
    const heads = new Map<string | null, number[]>();
    for (const [seq, row] of this.outbox) {
      if (isHead(row)) heads.set(row.targetId, [...heads.get(row.targetId) ?? [], seq]);
    }
    const stateOf = (seq: number): OutboxEntryState => {
      const row = this.outbox.get(seq)!;
      return {
        seq,
        sourceId: row.sourceId,
        targetId: row.targetId,
        event: JSON.parse(row.event) as Event,
        ...entryState(row, seq, false, heads.get(row.targetId) ?? []),
        attempts: row.attempts,
        retryAt: row.retryAt,
        deadAt: row.deadAt,
        lastError: row.lastError,
      };
    };
    const emitted = known
      ? [...this.outbox].filter(([, row]) => row.sourceId === id).map(([seq]) => seq)
      : [];
    const targeting = [...this.outbox].filter(([seq, row]) =>
      row.targetId === id && (isHead(row) || this.#setApart.has(seq))
    ).map(([seq]) => stateOf(seq)).filter((e) => e.state !== "pending");
    const lowest = (seqs: number[]) => seqs.sort(bySeq).slice(0, limit).map(stateOf);
    return {
      emitted: lowest(emitted),
      emittedPartial: !known || emitted.length > limit,
      targeting: targeting.sort((a, b) => a.seq - b.seq).slice(0, limit),
      targetingPartial: targeting.length > limit,
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

/** A relay's bookkeeping on a queue item (see _layout.ts FAILURE). */
export interface Bookkeeping {
  attempts: number;
  retryAt: number | null;
  deadAt: number | null;
  lastError: string | null;
  /** When it was written, in epoch seconds (lag). */
  createdAt: number;
  /** Set aside as unreadable: holds nothing back. */
  unreadable?: boolean;
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
