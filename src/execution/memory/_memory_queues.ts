// MemoryStore's relay queues: the outbox, spawn intents and timers with each item's relay
// bookkeeping, as DynamoDBStore keeps them.
import { afterFailure, holdsAt, isHead, RETRIED } from "../../core/_relay_rules.ts";
import { byFireAt } from "../../core/_bounded.ts";
import { secondsOf } from "../../core/_clock.ts";
import { type Bookkeeping, MemoryOutbox } from "./_memory_outbox.ts";
import type { QueueRow, RowQueue } from "../../core/relay_queues.ts";
export type { Bookkeeping };
import { linkEmits } from "../commit/_outbox_chain.ts";
import type {
  Backlog,
  DeadLetter,
  PendingSpawn,
  RelayFailure,
  RelayItem,
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

  /** The spawn intents as the relay reads and writes them. */
  readonly spawnQueue: RowQueue<"spawns">;
  /** The timers as the relay reads and writes them. */
  readonly timerQueue: RowQueue<"timers">;

  constructor(readonly now: () => number, open: (method: string) => void) {
    this.outbox = new MemoryOutbox(now, open);
    const queue = <K extends "spawns" | "timers">(
      kind: K,
      rows: () => QueueRow<K>[],
    ): RowQueue<K> => {
      const name = kind === "spawns" ? "spawnQueue" : "timerQueue";
      return {
        now: () => secondsOf(now),
        lease: (time) => {
          open(`${name}.lease`);
          return Promise.resolve(this.outbox.leases.take(kind, time));
        },
        due: () => {
          open(`${name}.due`);
          return Promise.resolve(rows());
        },
        fail: (key, failure) => {
          open(`${name}.fail`);
          return Promise.resolve(this.#fail(this.row(kind, key), failure));
        },
      };
    };
    this.spawnQueue = queue("spawns", () => [...this.spawns.keys()].map((s) => this.#spawnRow(s)));
    this.timerQueue = queue("timers", () =>
      [...this.timers.values()].map((timer) => ({
        key: { executionId: timer.executionId, path: timer.path, fireAt: timer.fireAt },
        attempts: timer.attempts ?? 0,
        retryAt: timer.retryAt ?? null,
        deadAt: timer.deadAt ?? null,
        at: timer.fireAt,
        item: { executionId: timer.executionId, path: timer.path, fireAt: timer.fireAt },
      })));
  }

  #spawnRow(seq: number): QueueRow<"spawns"> {
    const row = this.spawns.get(seq)!;
    return { key: seq, ...row, at: row.createdAt, item: this.pendingSpawn(seq) };
  }

  /** Records a failed attempt on a row: false when it is gone. */
  #fail(row: Partial<Bookkeeping> | undefined, failure: RelayFailure): boolean {
    if (row === undefined) return false;
    Object.assign(row, afterFailure(failure, this.now() / 1000));
    return true;
  }

  /**
   * A commit's emits (`seqs` ascending) as pending entries of `source`, each naming its
   * predecessor of the same target by the chains DynamoDBStore keeps (an insert starts empty).
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
      ? [...this.outbox.stored].filter(([, row]) =>
        row.part === "d" && row.deadAt !== null &&
        (target === undefined || row.targetId === target)
      )
      : [...this.spawns].filter(([, row]) => row.deadAt !== null);
    for (const [seq, row] of dead.sort(([a], [b]) => a - b).slice(0, limit)) {
      const item = kind === "outbox" ? this.#entry(seq) : this.pendingSpawn(seq);
      const source = kind === "outbox"
        ? this.outbox.stored.get(seq)!.sourceId
        : this.spawns.get(seq)!.parentId;
      letters.push(letter(seq as RelayKey<K>, item as RelayItem<K>, row, { seq }, source));
    }
    return letters as DeadLetter<K>[];
  }

  /** A queue's backlog, each count at most `limit`, as DynamoDBStore's `backlog`. */
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
      for (const [seq, row] of this.outbox.stored) {
        let found: State | null = row.part === "d" ? "dead" : "pending";
        if (row.part === "w" && row.retryAt! > now) found = "waiting";
        if (row.part === "p" || row.part === "h") {
          const lane = lanes.get(row.target) ?? this.#heldFrom(row.target, now);
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

  /**
   * Makes a dead letter due again (`retry`) or removes it: false when there is no such dead
   * letter. An outbox entry's target: what the caller releases (a string), or none.
   */
  onDeadLetter<K extends RelayKind>(kind: K, key: RelayKey<K>, retry: boolean): string | boolean {
    if (kind === "outbox") return this.outbox.onDeadLetter(key as number, retry) ?? false;
    const row = this.row(kind, key);
    if (row?.deadAt === null || row?.deadAt === undefined) return false;
    if (retry) Object.assign(row, RETRIED);
    else if (kind === "timers") {
      const { executionId, path } = key as Timer;
      this.timers.delete(keyOf(executionId, path));
    } else this.spawns.delete(key as number);
    return true;
  }

  /** An outbox row's entry. */
  #entry(seq: number) {
    const row = this.outbox.stored.get(seq)!;
    return { seq, targetId: row.targetId, event: JSON.parse(row.event) };
  }

  /**
   * The seq from which `target` is held at `now` (its lowest head that holds it), and whether a
   * head's retry has come (what it set apart is deliverable again).
   */
  #heldFrom(target: string, now: number): { from: number; due: boolean } {
    let from = Infinity, due = false;
    for (const seq of this.outbox.heads(target)) {
      const row = this.outbox.stored.get(seq);
      if (row === undefined || (row.part !== "w" && row.part !== "d") || !isHead(row)) continue;
      if (holdsAt(row, now)) from = Math.min(from, seq);
      else due = true;
    }
    return { from, due };
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
    return (kind === "outbox" ? this.outbox.stored : this.spawns).get(key as number);
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
}

type State = "pending" | "waiting" | "dead";

/** Where a row stands at `now` by its bookkeeping: dead, waiting for a retry to come, or pending. */
function stateOf(row: Partial<Bookkeeping>, now: number): State {
  if (typeof row.deadAt === "number") return "dead";
  return typeof row.retryAt === "number" && row.retryAt > now ? "waiting" : "pending";
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
