// MemoryStore's outbox queue: DynamoDBStore's places and holds on its own rows. It only reads
// (candidates, rows, holds) and writes (a plan); the pipeline that decides is the relay's.
import type { Event } from "../../core/documents.ts";
import { secondsOf } from "../../core/_clock.ts";
import { afterFailure, isHead } from "../../core/_relay_rules.ts";
import { entryState } from "../../core/_entry_states.ts";
import { targetKey } from "../commit/_outbox_chain.ts";
import type {
  CandidateCursor,
  OutboxApplied,
  OutboxHold,
  OutboxQueue,
  OutboxRow,
  OutboxWrites,
  RelayLease,
} from "../../core/relay_queues.ts";
import type { ExecutionOutbox, OutboxEntryState } from "../../core/types.ts";

/** A relay's bookkeeping on a queue item. */
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

/** An outbox row of a MemoryStore. */
export interface MemoryRow extends Bookkeeping {
  targetId: string | null;
  event: string;
  sourceId: string;
  /** Its target's key, as DynamoDBStore's holds and chains name it. */
  target: string;
  /** The previous seq of the same source to the same target: 0 none, undefined unknown. */
  prev: number | undefined;
  /** Its place: pending, waiting, dead, or set apart behind its target's head. */
  part: "p" | "w" | "d" | "h";
}

/** The outbox rows of a MemoryStore and the holds of their targets. */
export class MemoryOutbox implements OutboxQueue {
  /** The rows by seq, in seq order (seqs only rise). */
  readonly stored = new Map<number, MemoryRow>();
  /** Each held target's hold, by target key (gone once it lists nothing). */
  readonly #holds = new Map<string, { heads: Set<string>; held: Set<string> }>();

  /** The queues' relay leases, held in this process. */
  readonly leases: MemoryLeases;

  constructor(readonly clock: () => number, readonly open: (method: string) => void) {
    this.leases = new MemoryLeases(() => this.now());
  }

  now(): number {
    return secondsOf(this.clock);
  }

  /** A committed entry: pending, with its predecessor. */
  add(
    seq: number,
    entry: { targetId: string | null; event: string; sourceId: string; prev: number | undefined },
    fresh: Bookkeeping,
  ): void {
    this.stored.set(seq, { ...entry, ...fresh, target: targetKey(entry.targetId), part: "p" });
  }

  lease(seconds: number): Promise<RelayLease | null> {
    this.open("outboxQueue.lease");
    return Promise.resolve(this.leases.take("outbox", seconds));
  }

  candidates(now: number): CandidateCursor {
    this.open("outboxQueue.candidates");
    const waiting = [...this.stored].filter(([, row]) => row.part === "w" && row.retryAt! <= now)
      .sort(([a, x], [b, y]) => x.retryAt! - y.retryAt! || a - b).map(([seq]) => seq);
    const pending = this.#pending();
    return {
      next: (count) => {
        const found: OutboxRow[] = [];
        while (found.length < count) {
          const seq = waiting.shift() ?? pending.next().value;
          if (seq === undefined) break;
          const row = this.stored.get(seq);
          if (row !== undefined) found.push(this.#row(seq, row));
        }
        return Promise.resolve(found);
      },
    };
  }

  *#pending(): Generator<number, undefined, undefined> {
    for (const [seq, row] of this.stored) if (row.part === "p") yield seq;
  }

  rows(ids: readonly string[]): Promise<Map<string, OutboxRow>> {
    return Promise.try(() => {
      this.open("outboxQueue.rows");
      const rows = new Map<string, OutboxRow>();
      for (const id of ids) {
        const row = this.stored.get(Number(id));
        if (row !== undefined) rows.set(id, this.#row(Number(id), row));
      }
      return rows;
    });
  }

  holds(targets: readonly string[]): Promise<Map<string, OutboxHold>> {
    return Promise.try(() => {
      this.open("outboxQueue.holds");
      const holds = new Map<string, OutboxHold>();
      for (const target of targets) {
        const hold = this.#holds.get(target);
        if (hold === undefined) continue;
        const sorted = (ids: Set<string>) => [...ids].sort((a, b) => Number(a) - Number(b));
        holds.set(target, { heads: sorted(hold.heads), held: sorted(hold.held), spill: null });
      }
      return holds;
    });
  }

  apply(writes: OutboxWrites): Promise<OutboxApplied> {
    return Promise.try(() => {
      this.open("outboxQueue.apply");
      const applied: OutboxApplied = { failed: [], recheck: [] };
      for (const [moves, demote] of [[writes.setApart, false], [writes.demote, true]] as const) {
        for (const { target, head, rows } of moves ?? []) {
          applied.recheck.push(target);
          const at = this.stored.get(Number(head));
          if (at === undefined || !isHead(at)) continue;
          for (const { id, part } of rows) {
            const row = this.stored.get(Number(id));
            if (row?.part !== part) continue;
            row.part = "h";
            if (demote) this.#hold(target).heads.delete(id);
            this.#hold(target).held.add(id);
          }
        }
      }
      for (const { target, ids } of writes.unlist ?? []) {
        for (const id of ids) this.#holds.get(target)?.held.delete(id);
        this.#forget(target);
      }
      for (const { target, acks, back, gone } of writes.release ?? []) {
        for (const id of acks) this.stored.delete(Number(id));
        for (const { id } of back) {
          const row = this.stored.get(Number(id));
          if (row?.part === "h") row.part = "p";
        }
        for (const id of gone) {
          const row = this.stored.get(Number(id));
          if (row === undefined || !isHead(row)) this.#holds.get(target)?.heads.delete(id);
        }
        this.#forget(target);
      }
      for (const { row: { id }, failure } of writes.fail ?? []) {
        const row = this.stored.get(Number(id));
        applied.failed.push(row !== undefined);
        if (row === undefined) continue;
        Object.assign(row, afterFailure(failure, this.now()));
        row.part = row.deadAt !== null ? "d" : "w";
        if (!failure.unreadable) this.#hold(row.target).heads.add(id);
      }
      for (const id of writes.ack ?? []) this.stored.delete(Number(id));
      return applied;
    });
  }

  /** retry (`true`) or drop a dead letter, listed first in its target's line: false when none. */
  onDeadLetter(seq: number, retry: boolean): string | null {
    const row = this.stored.get(seq);
    if (row?.deadAt === null || row?.deadAt === undefined) return null;
    if (!retry) this.stored.delete(seq);
    else {
      Object.assign(row, { attempts: 0, retryAt: null, deadAt: null, lastError: null });
      row.unreadable = false;
      row.part = "p";
      this.#hold(row.target).held.add(String(seq));
    }
    return row.target;
  }

  /** A target's hold (made when it had none). */
  #hold(target: string): { heads: Set<string>; held: Set<string> } {
    let hold = this.#holds.get(target);
    if (hold === undefined) this.#holds.set(target, hold = { heads: new Set(), held: new Set() });
    return hold;
  }

  /** Forgets a hold that lists nothing. */
  #forget(target: string): void {
    const hold = this.#holds.get(target);
    if (hold?.heads.size === 0 && hold.held.size === 0) this.#holds.delete(target);
  }

  #row(seq: number, row: MemoryRow): OutboxRow {
    return {
      id: String(seq),
      seq,
      target: row.target,
      ...(row.prev === undefined ? {} : { prev: row.prev }),
      attempts: row.attempts,
      retryAt: row.retryAt,
      deadAt: row.deadAt,
      unreadable: row.unreadable === true,
      part: row.part,
      createdAt: row.createdAt,
      sourceId: row.sourceId,
      entry: { seq, targetId: row.targetId, event: JSON.parse(row.event) as Event },
    };
  }

  /** The heads of a target, as numbers. */
  heads(target: string): number[] {
    return [...this.#holds.get(target)?.heads ?? []].map(Number);
  }

  /**
   * Execution `id`'s outbox, as DynamoDBStore's `executionOutbox`: what it emitted (`known`
   * false: its item is gone), and what failed to it or waits behind that, as its hold lists.
   */
  executionOutbox(id: string, limit: number, known: boolean): ExecutionOutbox {
    const stateOf = (seq: number): OutboxEntryState => {
      const row = this.stored.get(seq)!;
      return {
        seq,
        sourceId: row.sourceId,
        targetId: row.targetId,
        event: JSON.parse(row.event) as Event,
        ...entryState(row, seq, row.part === "h", this.heads(row.target)),
        attempts: row.attempts,
        retryAt: row.retryAt,
        deadAt: row.deadAt,
        lastError: row.lastError,
      };
    };
    const emitted = known
      ? [...this.stored].filter(([, row]) => row.sourceId === id).map(([seq]) => seq)
      : [];
    const hold = this.#holds.get(targetKey(id));
    const listed = new Set([...hold?.heads ?? [], ...hold?.held ?? []].map(Number));
    const targeting = [...listed]
      .filter((seq) => this.stored.get(seq)?.targetId === id)
      .map(stateOf)
      .filter((entry) => entry.state !== "pending");
    const lowest = (seqs: number[]) => seqs.sort((a, b) => a - b).slice(0, limit).map(stateOf);
    return {
      emitted: lowest(emitted),
      emittedPartial: !known || emitted.length > limit,
      targeting: targeting.sort((a, b) => a.seq - b.seq).slice(0, limit),
      targetingPartial: targeting.length > limit,
    };
  }
}

/** Relay leases of one process's queues, as DynamoDBStore's on its counters items. */
export class MemoryLeases {
  readonly #until = new Map<string, number>();

  constructor(readonly now: () => number) {}

  take(kind: string, seconds: number): RelayLease | null {
    if ((this.#until.get(kind) ?? 0) > this.now()) return null;
    const mine = { until: this.now() + seconds };
    this.#until.set(kind, mine.until);
    const now = this.now;
    return {
      get lapsed() {
        return mine.until <= now();
      },
      keep: () => {
        if (this.#until.get(kind) !== mine.until) return Promise.resolve(false);
        this.#until.set(kind, mine.until = this.now() + seconds);
        return Promise.resolve(true);
      },
      release: () => {
        if (this.#until.get(kind) === mine.until) this.#until.delete(kind);
        return Promise.resolve();
      },
    };
  }
}
