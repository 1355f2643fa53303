// MemoryStore's outbox, as DynamoDBStore's (#38): each row has a place (pending `p`, waiting `w`,
// dead `d`, set apart behind its target's head `h`) and names its predecessor of the same source
// and target (`prev`, recorded at commit); each target that failed has a hold (its heads, and the
// entries set apart behind them). A pass reads what DynamoDBStore's reads (the due waiting rows,
// the lowest pending, the holds of their targets, the rows those name, the predecessors), runs
// the same `decideOutbox`, then applies the same writes; every change of a row or a hold is a
// transition of core/_queue_transitions.ts. Nothing here scans the rows for held targets.
import type { QueueBatch } from "../../core/_queue_batch.ts";
import type { Event } from "../../core/documents.ts";
import { holdsAt, isHead } from "../../core/_relay_rules.ts";
import {
  decideOutbox,
  type EntryRow,
  type HoldRow,
  type OutboxDecision,
  type PlaceLetter,
} from "../../core/_outbox_decide.ts";
import * as transition from "../../core/_queue_transitions.ts";
import { applyHold, type Hold, type Transition } from "../../core/_queue_transitions.ts";
import { targetKey } from "../commit/_outbox_chain.ts";
import { entryState } from "../../core/_entry_states.ts";
import { Lru } from "../../core/_lru.ts";
import type {
  ExecutionOutbox,
  OutboxEntry,
  OutboxEntryState,
  RelayFailure,
  RelayItems,
} from "../../core/types.ts";

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

/** An outbox row of a MemoryStore. */
export interface OutboxRow extends Bookkeeping {
  targetId: string | null;
  event: string;
  sourceId: string;
  /** Its target's key, as DynamoDBStore's holds and chains name it (see _outbox_chain.ts). */
  target: string;
  /** The previous seq of the same source to the same target: 0 none, undefined unknown. */
  prev: number | undefined;
  /** Its place: pending, waiting, dead, or set apart behind its target's head. */
  part: PlaceLetter;
}

/** The outbox rows of a MemoryStore, the holds of their targets, and the relay's passes. */
export class MemoryOutbox {
  /** The rows by seq: in seq order, since seqs only rise and a row is never inserted again. */
  readonly rows = new Map<number, OutboxRow>();
  /** Each held target's hold, by target key (gone once it lists nothing). */
  readonly holds = new Map<string, Hold>();
  /** Heads whose retry had come that a batch handed out (seq → target): acking one releases it. */
  readonly #headsOut = new Lru<number, string>(10_000);
  /** The other entries a batch handed out (seq → target), as DynamoDBStore's `handedOut`. */
  readonly #handedOut = new Lru<number, string>(10_000);

  constructor(readonly now: () => number) {}

  /** A committed entry: pending, with its predecessor. */
  add(
    seq: number,
    entry: { targetId: string | null; event: string; sourceId: string; prev: number | undefined },
    fresh: Bookkeeping,
  ): void {
    this.rows.set(seq, { ...entry, ...fresh, target: targetKey(entry.targetId), part: "p" });
  }

  /** Records a failed delivery (fail, dead-letter); false when the entry is gone. */
  fail(seq: number, failure: RelayFailure): boolean {
    const row = this.rows.get(seq);
    if (row === undefined) return false;
    this.#apply(seq, row, transition.fail(failure, this.now() / 1000, String(seq)));
    return true;
  }

  /** Retries (`retry`) or drops a dead letter; false when there is no such dead letter. */
  onDeadLetter(seq: number, action: "retry" | "drop"): boolean {
    const row = this.rows.get(seq);
    if (row?.deadAt === null || row?.deadAt === undefined) return false;
    const change = action === "retry" ? transition.retry : transition.drop;
    this.#apply(seq, row, change(String(seq)));
    return true;
  }

  /**
   * Acknowledges delivered entries (DynamoDBStore's `acknowledgeOutbox`): once they are gone, the
   * target of each head a batch handed out is released, and that of each entry a batch handed
   * out that became a head since (a concurrent pass failed to deliver it).
   */
  ack(seqs: readonly number[]): void {
    const released = new Set<string>();
    for (const seq of new Set(seqs)) {
      const target = this.#headsOut.get(seq) ?? this.#becameHead(seq);
      this.#headsOut.delete(seq);
      this.#handedOut.delete(seq);
      const change = transition.acknowledge(target !== undefined);
      const row = this.rows.get(seq);
      if (row !== undefined) this.#apply(seq, row, { ...change, release: false });
      if (change.release) released.add(target!);
    }
    for (const target of released) this.release(target);
  }

  /** The target of an entry a batch handed out when it was no head, if its hold lists it now. */
  #becameHead(seq: number): string | undefined {
    const target = this.#handedOut.get(seq);
    if (target === undefined) return undefined;
    return this.holds.get(target)?.heads.has(String(seq)) ? target : undefined;
  }

  /** Applies a transition to a row: its bookkeeping, its place, its target's hold, a release. */
  #apply(seq: number, row: OutboxRow, change: Transition): void {
    if (change.to === null) this.rows.delete(seq);
    else {
      if (change.bookkeeping) Object.assign(row, change.bookkeeping);
      row.part = change.to;
    }
    if (change.hold.length) this.#changeHold(row.target, change.hold);
    if (change.release) this.release(row.target);
  }

  /**
   * Releases `target` (DynamoDBStore's `bringBackHeld`): the entries its hold set apart below its
   * lowest head still holding it (all of them when none does) back to pending, then the heads
   * that no longer hold it out of the hold.
   */
  release(target: string): void {
    const hold = this.holds.get(target);
    if (hold === undefined) return;
    const { back, gone } = transition.release(hold, (id) => {
      const row = this.rows.get(Number(id));
      return row && { seq: Number(id), setApart: row.part === "h", head: isHead(row) };
    });
    for (const id of back) {
      this.#apply(Number(id), this.rows.get(Number(id))!, transition.bringBack());
    }
    if (gone) this.#changeHold(target, [gone]);
  }

  /** Changes a target's hold (made when it had none), forgetting it once it lists nothing. */
  #changeHold(target: string, ops: transition.HoldOp[]): void {
    const hold = applyHold(this.holds.get(target) ?? { heads: new Set(), held: new Set() }, ops);
    if (hold.heads.size === 0 && hold.held.size === 0) this.holds.delete(target);
    else this.holds.set(target, hold);
  }

  /**
   * What a relay pass reads (as DynamoDBStore's `outboxFromIndex`): the waiting entries whose
   * retry is due, then the lowest pending ones a chunk at a time until `limit` can go out (at most
   * max(1000, 4 × limit) of them), decided by `decideOutbox`; a pass (`pass`) then writes what
   * was decided. With `seqs` (a commit's own): those entries, delivered within the request.
   */
  batch(limit: number, now: number, seqs?: number[], pass = false): QueueBatch<"outbox"> {
    const read = new Read(this);
    if (seqs !== undefined) {
      read.offer(seqs.filter((seq) => this.rows.has(seq)));
      return this.#handOut(read, read.decide(now, Infinity, true));
    }
    const due: [number, OutboxRow][] = [];
    for (const entry of this.rows) {
      if (entry[1].part === "w" && entry[1].retryAt! <= now) due.push(entry);
    }
    due.sort(([a, x], [b, y]) => x.retryAt! - y.retryAt! || a - b);
    read.offer(due.slice(0, limit).map(([seq]) => seq));
    let decision = read.decide(now, limit, false);
    const pending = this.#pending();
    const budget = limit === Infinity ? Infinity : Math.max(1000, 4 * limit);
    let examined = 0, exhausted = false;
    while (!exhausted && decision.deliver.length < limit && examined < budget) {
      const want = limit === Infinity ? 1000 : Math.max(25, limit - decision.deliver.length);
      const chunk: number[] = [];
      while (chunk.length < want) {
        const next = pending.next();
        if (next.done) {
          exhausted = true;
          break;
        }
        chunk.push(next.value);
      }
      examined += chunk.length;
      read.offer(chunk);
      decision = read.decide(now, limit, false);
    }
    if (pass) this.#write(decision);
    return this.#handOut(read, decision);
  }

  /** The pending entries, lowest seq first. */
  *#pending(): Generator<number, void, undefined> {
    for (const [seq, row] of this.rows) if (row.part === "p") yield seq;
  }

  /** The batch of a decision; the due heads it hands out are remembered for their release. */
  #handOut(read: Read, decision: OutboxDecision): QueueBatch<"outbox"> {
    for (const id of decision.dueHeads) this.#headsOut.set(Number(id), read.rows.get(id)!.target);
    for (const row of decision.deliver) {
      if (!decision.dueHeads.has(row.id)) this.#handedOut.set(row.seq, row.target);
    }
    const items: RelayItems<"outbox">["items"] = decision.deliver.map((row) => ({
      item: this.entry(row.seq),
      attempts: row.attempts,
    }));
    return { items, unreadable: [], oldestAt: decision.oldestAt, held: decision.held };
  }

  /**
   * Writes what a pass decided, as DynamoDBStore's `writeDecision`: entries set apart behind
   * their target's head, heads demoted behind a lower one, gone entries unlisted, releases.
   */
  #write(decision: OutboxDecision): void {
    for (const { rows } of decision.setApart.values()) {
      for (const row of rows) {
        this.#apply(row.seq, this.rows.get(row.seq)!, transition.setApart([row.id]));
      }
    }
    for (const { rows } of decision.demote.values()) {
      for (const row of rows) {
        this.#apply(row.seq, this.rows.get(row.seq)!, transition.demote(row.id));
      }
    }
    for (const [target, ids] of decision.unlist) {
      this.#changeHold(target, [transition.unlistHeld(ids)]);
    }
    for (const target of decision.release) this.release(target);
  }

  /** An outbox row as the pass's decision reads it. */
  entryRow(seq: number, row: OutboxRow): EntryRow {
    return {
      seq,
      id: String(seq),
      target: row.target,
      prev: row.prev,
      attempts: row.attempts,
      part: row.part,
      createdAt: row.createdAt,
      retryAt: row.retryAt,
      deadAt: row.deadAt,
      unreadable: row.unreadable,
    };
  }

  entry(seq: number): OutboxEntry {
    const row = this.rows.get(seq)!;
    return { seq, targetId: row.targetId, event: JSON.parse(row.event) as Event };
  }

  /**
   * The seq from which `target` is held at `now` (its lowest head that holds it, waiting for a
   * retry still to come or dead, where a pass reads such rows), and whether a head's retry has
   * come (what it set apart is deliverable again): from its hold, as DynamoDBStore's backlog.
   */
  heldFrom(target: string, now: number): { from: number; due: boolean } {
    let from = Infinity, due = false;
    for (const id of this.holds.get(target)?.heads ?? []) {
      const row = this.rows.get(Number(id));
      if (row === undefined || (row.part !== "w" && row.part !== "d") || !isHead(row)) continue;
      if (holdsAt(row, now)) from = Math.min(from, Number(id));
      else due = true;
    }
    return { from, due };
  }

  /**
   * Execution `id`'s outbox as operators read it (see DynamoDBStore's `executionOutbox`): what it
   * emitted (nothing known when its item is gone: `known` false), and what is to it and failed or
   * was set apart behind what failed, as its hold lists them — by the same rule,
   * {@linkcode entryState}, each entry's target's heads from its hold.
   */
  executionOutbox(id: string, limit: number, known: boolean): ExecutionOutbox {
    const stateOf = (seq: number): OutboxEntryState => {
      const row = this.rows.get(seq)!;
      const heads = [...this.holds.get(row.target)?.heads ?? []].map(Number);
      return {
        seq,
        sourceId: row.sourceId,
        targetId: row.targetId,
        event: JSON.parse(row.event) as Event,
        ...entryState(row, seq, row.part === "h", heads),
        attempts: row.attempts,
        retryAt: row.retryAt,
        deadAt: row.deadAt,
        lastError: row.lastError,
      };
    };
    const emitted = known
      ? [...this.rows].filter(([, row]) => row.sourceId === id).map(([seq]) => seq)
      : [];
    const hold = this.holds.get(targetKey(id));
    const listed = new Set([...hold?.heads ?? [], ...hold?.held ?? []].map(Number));
    const targeting = [...listed]
      .filter((seq) => this.rows.get(seq)?.targetId === id)
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

/**
 * What one pass read of the outbox, as DynamoDBStore's `OutboxRead` reads it by key: the offered
 * rows, the holds of their targets, the rows those name, and the predecessors of them all.
 */
class Read {
  readonly rows = new Map<string, EntryRow>();
  readonly holds = new Map<string, HoldRow>();
  readonly offered: string[] = [];
  /** The rows whose predecessor was read. */
  readonly #linked = new Set<string>();

  constructor(readonly outbox: MemoryOutbox) {}

  offer(seqs: number[]): void {
    for (const seq of seqs) {
      const row = this.#take(seq);
      if (row === undefined) continue;
      this.offered.push(row.id);
      if (this.holds.has(row.target)) continue;
      const hold = this.outbox.holds.get(row.target);
      const read = { heads: [...hold?.heads ?? []], held: [...hold?.held ?? []] };
      this.holds.set(row.target, read);
      for (const id of [...read.heads, ...read.held]) this.#take(Number(id));
    }
  }

  /** A row and its predecessor, as read by key (undefined: gone). */
  #take(seq: number): EntryRow | undefined {
    const entry = this.#read(seq);
    if (entry?.prev && !this.#linked.has(entry.id)) {
      this.#linked.add(entry.id);
      this.#read(entry.prev);
    }
    return entry;
  }

  /** A row, as read by key (undefined: gone). */
  #read(seq: number): EntryRow | undefined {
    const id = String(seq);
    const known = this.rows.get(id);
    if (known !== undefined) return known;
    const row = this.outbox.rows.get(seq);
    if (row === undefined) return undefined;
    const entry = this.outbox.entryRow(seq, row);
    this.rows.set(id, entry);
    return entry;
  }

  decide(now: number, limit: number, inline: boolean): OutboxDecision {
    return decideOutbox({
      now,
      limit,
      inline,
      offered: this.offered,
      rows: this.rows,
      holds: this.holds,
    });
  }
}
