// The outbox's batch that needs no index — a commit's own seqs (delivery within the request) —
// and what every batch shares: the candidates' bodies, read with the predecessors they wait for.
// Held targets come from their hold items (_holds.ts).
import { GETS_IN_FLIGHT } from "../../core/_lanes.ts";
import type { QueueBatch } from "../../core/_queue_batch.ts";
import { batchGet, chunks, eachConcurrently, type Item } from "../../dynamo/_dynamo.ts";
import { FAILURE, isRetryDue, OUTBOX, outboxFromItem, RELAY, seqKey } from "../../core/_layout.ts";
import { readHolds } from "./_holds.ts";
import { partOf } from "./_relay_index.ts";
import { targetKey } from "../commit/_outbox_chain.ts";
import { LIMITS } from "../../core/_validate.ts";
import { keepStoredText } from "../../core/_stored_event.ts";
import type { RelayItems, UnreadableRow } from "../../core/types.ts";
import {
  createdTime,
  earliest,
  numberOf,
  type QueueContext,
  unreadableRow,
} from "./_queue_items.ts";

/** An outbox or spawn row as an index read (or a commit's own read) sees it. */
export interface Candidate {
  seq: number;
  /** The seq as stored (DynamoDB's text of the number): what the bodies are found by. */
  id: string;
  key: Item;
  attempts: number;
  /** Outbox: the target's key in the chains (see _outbox_chain.ts). */
  target: string;
  /** Outbox: the previous seq of the same source to the same target (0: none; undefined: unknown). */
  prev: number | undefined;
  /** The relay index partition it was read from, if any. */
  part?: string;
}

/**
 * The entries of these seqs (a commit's own), read with their predecessors: what a worker
 * delivers within the request that committed them. An entry waiting for a retry, dead, behind
 * a head of its target, or whose predecessor is unknown is left to the next pass.
 */
export async function outboxOf(
  q: QueueContext,
  seqs: number[],
  now: number,
): Promise<QueueBatch<"outbox">> {
  const { client } = q.timers;
  const table = q.tables.outbox.name;
  const found = new Map<string, Item>();
  await eachConcurrently(
    chunks([...new Set(seqs)], LIMITS.batchGetKeys),
    GETS_IN_FLIGHT,
    (chunk) =>
      batchGet(
        client,
        { [table]: { Keys: chunk.map(seqKey), ConsistentRead: true } },
        (responses) => {
          for (const item of responses[table] ?? []) found.set(item.seq?.N ?? "", item);
        },
      ),
  );
  const rows = [...found.values()].map((item) => ({ item, candidate: candidateOf(item) }));
  const listed = new Map<string, string[]>();
  const holds = await readHolds(q, rows.map((row) => row.candidate.target), true, listed);
  const candidates: Candidate[] = [];
  // Entries a hold lists (held, or brought back and not yet delivered) go first, in a pass: an
  // entry of their target above the lowest of them waits for it.
  const firstListed = new Map<string, number>();
  for (const [target, seqs] of listed) {
    const left = seqs.filter((seq) => !found.has(seq)).map(Number);
    if (left.length) firstListed.set(target, Math.min(...left));
  }
  const held = new Set<string>();
  let behindHeld = 0; // entries left behind a held target (RelayItems.held)
  for (const { item, candidate } of rows.sort((a, b) => a.candidate.seq - b.candidate.seq)) {
    const seq = candidate.seq;
    const lowest = Math.min(
      holds.get(candidate.target)?.lowest ?? Infinity,
      firstListed.get(candidate.target) ?? Infinity,
    );
    if (item[FAILURE.unreadable]?.BOOL) continue;
    if (seq > lowest) behindHeld++;
    if (
      item[FAILURE.deadAt] !== undefined || !isRetryDue(item, now) || held.has(candidate.target) ||
      seq > lowest ||
      // Its predecessor is unknown (written after a Python commit, or past the chains' cap):
      // only a full pass, which sees the whole outbox, can order it.
      candidate.prev === undefined
    ) held.add(candidate.target);
    else {
      candidates.push(candidate);
      // A head whose retry is due: its acknowledgement releases its target, as after a pass.
      if (holds.get(candidate.target)?.seqs.includes(candidate.id)) {
        q.headsOut.set(seq, { target: candidate.target, id: candidate.id });
      }
    }
  }
  return { ...await readOutboxBodies(q, candidates, now, found), held: behindHeld };
}

/**
 * Reads the bodies of the candidates (seq order) together with every predecessor that is not a
 * candidate itself, then keeps the entries whose chain is clear: an entry whose predecessor (of
 * the same source to the same target) is still pending — fallen behind the scan, or waiting in
 * another pass — waits, and so does the rest of its target.
 */
export async function readOutboxBodies(
  q: QueueContext,
  candidates: Candidate[],
  now: number,
  known = new Map<string, Item>(),
): Promise<QueueBatch<"outbox">> {
  const { client } = q.timers;
  const table = q.tables.outbox.name;
  const bySeqs = new Map(candidates.map((c) => [c.seq, c]));
  const waitsFor = new Map<string, number>(); // candidate id → predecessor to look up
  for (const c of candidates) {
    let prev = c.prev;
    // Through candidates of other targets (a hash collision links their chains) to the first
    // predecessor that is not a candidate, or one of the same target (delivered before it).
    for (let link = prev && bySeqs.get(prev); link && link.target !== c.target;) {
      prev = link.prev;
      link = prev ? bySeqs.get(prev) : undefined;
    }
    if (prev && !bySeqs.has(prev)) waitsFor.set(c.id, prev);
  }
  // Predecessors are this module's seqs (safe integers): their text is the stored one.
  const wanted = new Map<string, Item>();
  for (const c of candidates) if (!known.has(c.id)) wanted.set(c.id, c.key);
  for (const prev of waitsFor.values()) {
    if (!known.has(String(prev))) wanted.set(String(prev), seqKey(prev));
  }
  const found = new Map(known);
  await eachConcurrently(
    chunks([...wanted.values()], LIMITS.batchGetKeys),
    GETS_IN_FLIGHT,
    (chunk) =>
      batchGet(
        client,
        { [table]: { Keys: chunk, ConsistentRead: true } },
        (responses) => {
          for (const item of responses[table] ?? []) found.set(item.seq?.N ?? "", item);
        },
      ),
  );
  const items: RelayItems<"outbox">["items"] = [];
  const unreadable: UnreadableRow<"outbox">[] = [];
  const blocked = new Set<string>();
  let oldestAt: number | null = null;
  for (const c of candidates) {
    const body = found.get(c.id);
    if (body === undefined) continue; // acknowledged since the scan
    if (
      (body[FAILURE.deadAt] !== undefined && !body[FAILURE.unreadable]?.BOOL) ||
      !isRetryDue(body, now) ||
      (partOf(body[RELAY.part]?.S) === "h" && body[RELAY.part]?.S !== c.part)
    ) {
      // Parked, dead-lettered or held since the read (an index lags the table): it holds its
      // target in this pass.
      blocked.add(c.target);
      continue;
    }
    const prev = waitsFor.get(c.id);
    const prevRow = prev === undefined ? undefined : found.get(String(prev));
    // A predecessor found is still pending (acknowledged ones are deleted): this entry waits;
    // one set aside as unreadable can never be delivered, so nothing waits for it.
    if (blocked.has(c.target) || (prevRow !== undefined && !prevRow[FAILURE.unreadable]?.BOOL)) {
      blocked.add(c.target);
      continue;
    }
    try {
      const entry = outboxFromItem(body);
      // Our rows are aged on the store's clock (created_at, read with the keys); another
      // writer's, which record no created_at, by their event's created_time.
      if (body[OUTBOX.createdAt] === undefined) {
        oldestAt = earliest(oldestAt, createdTime(entry.event.created_time));
        keepStoredText(entry.event, body[OUTBOX.event]?.S); // published as written (SQS relay)
      }
      items.push({ item: entry, attempts: c.attempts });
    } catch (error) {
      // Set aside by the relay; it cannot be delivered as it is, so it holds nothing back.
      unreadable.push(unreadableRow(c.seq, body, c.attempts, error));
    }
  }
  return { items, unreadable, oldestAt };
}

export function candidateOf(item: Item): Candidate {
  const target = item[OUTBOX.targetId];
  const prev = item[OUTBOX.prevSeq]?.N;
  return {
    seq: Number(item[OUTBOX.seq]?.N),
    id: item[OUTBOX.seq]?.N ?? "",
    key: { [OUTBOX.seq]: item[OUTBOX.seq]! },
    attempts: numberOf(item[FAILURE.attempts]) ?? 0,
    target: target?.S !== undefined
      ? targetKey(target.S)
      : target?.NULL
      ? targetKey(null)
      : `raw:${JSON.stringify(target ?? null)}`,
    prev: prev === undefined ? undefined : Number(prev),
    part: item[RELAY.part]?.S,
  };
}
