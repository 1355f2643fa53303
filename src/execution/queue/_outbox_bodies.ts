// What an outbox pass reads by key, strongly: the rows an index (or a commit) offered, the holds of
// their targets with the heads and set-apart entries they list, and every predecessor — so that
// `decideOutbox` decides on the table, never on the index. And the batch a decision hands out.
import type { QueueBatch } from "../../core/_queue_batch.ts";
import type { Item } from "../../dynamo/_dynamo.ts";
import { FAILURE, OUTBOX, outboxFromItem, RELAY } from "../../core/_layout.ts";
import { bookkeepingOf, markHandedOut, readHolds, readOutboxRows } from "./_holds.ts";
import { targetKey } from "../commit/_outbox_chain.ts";
import { decideOutbox, type EntryRow, type HoldRow } from "../../core/_outbox_decide.ts";
import { keepStoredText } from "../../core/_stored_event.ts";
import type { RelayItems, UnreadableRow } from "../../core/types.ts";
import {
  createdTime,
  earliest,
  numberOf,
  type QueueContext,
  unreadableRow,
} from "./_queue_items.ts";

/** An outbox or spawn row's key facts, as an index entry (or a stored row) has them. */
export interface Candidate {
  seq: number;
  /** The seq as stored (DynamoDB's text of the number): what the row is found by. */
  id: string;
  key: Item;
  /** Outbox: the target's key in the chains (see _outbox_chain.ts). */
  target: string;
  /** Outbox: the previous seq of the same source to the same target (0: none; undefined: unknown). */
  prev: number | undefined;
}

export function candidateOf(item: Item): Candidate {
  const target = item[OUTBOX.targetId];
  const prev = item[OUTBOX.prevSeq]?.N;
  return {
    seq: Number(item[OUTBOX.seq]?.N),
    id: item[OUTBOX.seq]?.N ?? "",
    key: { [OUTBOX.seq]: item[OUTBOX.seq]! },
    target: target?.S !== undefined
      ? targetKey(target.S)
      : target?.NULL
      ? targetKey(null)
      : `raw:${JSON.stringify(target ?? null)}`,
    prev: prev === undefined ? undefined : Number(prev),
  };
}

/** A stored outbox row as the pass's decision reads it. */
export function entryRow(item: Item): EntryRow {
  const { seq, id, target, prev } = candidateOf(item);
  return {
    seq,
    id,
    target,
    prev,
    attempts: numberOf(item[FAILURE.attempts]) ?? 0,
    part: item[RELAY.part]?.S ?? null,
    createdAt: numberOf(item[OUTBOX.createdAt]) ?? null,
    ...bookkeepingOf(item),
  };
}

/**
 * What one pass read by key, growing as it is offered more: the rows (absent from `items`: gone),
 * the holds of their targets, and the predecessors of every row read.
 */
export class OutboxRead {
  /** Every row read, by its stored seq. */
  readonly items = new Map<string, Item>();
  readonly rows = new Map<string, EntryRow>();
  readonly holds = new Map<string, HoldRow>();
  readonly offered: string[] = [];
  readonly #asked = new Set<string>();

  constructor(readonly q: QueueContext) {}

  /** Rows already read by key (strongly), so that offering them reads them no more. */
  know(items: Map<string, Item>): void {
    for (const [id, item] of items) {
      this.#asked.add(id);
      this.items.set(id, item);
      this.rows.set(id, entryRow(item));
    }
  }

  /**
   * Reads, strongly, the rows of these offered keys (index entries, or a commit's seqs) that were
   * not read yet, their targets' holds, what those list, and every predecessor.
   */
  async offer(candidates: Candidate[]): Promise<void> {
    this.offered.push(...candidates.map((c) => c.id));
    const targets = [...new Set(candidates.map((c) => c.target))].filter((t) => !this.holds.has(t));
    const listed = new Map<string, string[]>();
    const spills = new Map<string, number>();
    const heads = await readHolds(this.q, targets, true, listed, spills);
    const ids = candidates.flatMap((c) => c.prev ? [c.id, String(c.prev)] : [c.id]);
    for (const target of targets) {
      const hold = {
        heads: heads.get(target)?.seqs ?? [],
        held: listed.get(target) ?? [],
        spill: spills.get(target),
      };
      this.holds.set(target, hold);
      ids.push(...hold.heads, ...hold.held);
    }
    // Twice: the rows, then the predecessors of rows only a hold named.
    for (let round = 0; round < 2; round++) {
      const wanted = ids.filter((id) => !this.#asked.has(id));
      if (wanted.length === 0) break;
      for (const id of wanted) this.#asked.add(id);
      const found = await readOutboxRows(this.q, wanted);
      ids.length = 0;
      for (const [id, item] of found) {
        this.items.set(id, item);
        const row = entryRow(item);
        this.rows.set(id, row);
        if (row.prev) ids.push(String(row.prev));
      }
    }
  }

  /** The pass's decision on what was read. */
  decide(now: number, limit: number, inline: boolean) {
    return decideOutbox({
      now,
      limit,
      inline,
      // With other writers, an entry the outbox feed has not chained yet waits (#39).
      unchainedWaits: this.q.otherWriters?.chaining() ?? false,
      offered: this.offered,
      rows: this.rows,
      holds: this.holds,
    });
  }

  /**
   * The batch of a decision: the entries it hands out, those no one can read (set aside by the
   * relay: they hold nothing back), and the oldest pending entry's time — another writer's, which
   * records no `created_at`, by its event's `created_time`.
   */
  async batch(
    decision: ReturnType<OutboxRead["decide"]>,
    write: boolean,
  ): Promise<QueueBatch<"outbox">> {
    const items: RelayItems<"outbox">["items"] = [];
    const unreadable: UnreadableRow<"outbox">[] = [];
    let oldestAt = decision.oldestAt;
    for (const row of decision.deliver) {
      const body = this.items.get(row.id)!;
      try {
        const entry = outboxFromItem(body);
        // Another writer's row (no created_at): aged by its event's created_time, and its event
        // published as stored (the SQS relay: _stored_event.ts).
        if (row.createdAt === null) {
          oldestAt = earliest(oldestAt, createdTime(entry.event.created_time));
          keepStoredText(entry.event, body[OUTBOX.event]?.S);
        }
        items.push({ item: entry, attempts: row.attempts });
      } catch (error) {
        unreadable.push(unreadableRow(row.seq, body, row.attempts, error));
      }
    }
    // A head handed out: its release is marked now (`write`: a pass, or a delivery within the
    // request), so that whoever acknowledges it, a later pass finishes the release.
    // Only a target with entries set apart behind it has anything to bring back.
    for (const row of decision.deliver) {
      if (!decision.dueHeads.has(row.id)) this.q.handedOut.set(row.seq, row.target);
    }
    const heads = [...decision.dueHeads].map((id) => ({ ...this.rows.get(id)!, id }));
    const behind = (target: string) => (this.holds.get(target)?.held.length ?? 0) > 0;
    await markHandedOut(this.q, heads, write, behind);
    return { items, unreadable, oldestAt, held: decision.held };
  }
}

/**
 * The entries of these seqs (a commit's own), read by key with their predecessors and their
 * targets' holds: what a worker delivers within the request that committed them. An entry
 * waiting for a retry, dead, behind a head of its target, or whose predecessor is unknown or
 * still there is left to the next pass. Nothing is written.
 */
export async function outboxOf(
  q: QueueContext,
  seqs: number[],
  now: number,
): Promise<QueueBatch<"outbox">> {
  const read = new OutboxRead(q);
  const found = await readOutboxRows(q, [...new Set(seqs)].map(String));
  read.know(found);
  await read.offer([...found.values()].map(candidateOf));
  return await read.batch(read.decide(now, Infinity, true), true);
}
