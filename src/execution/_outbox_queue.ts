// The outbox's batches that need no index: a scan (with `relayIndex: false`), a commit's own seqs
// (delivery within the request), and what every batch shares — the candidates' bodies, read
// with the predecessors they wait for. Held targets come from their hold items (_holds.ts).
import { GETS_IN_FLIGHT, ITEM_WRITES_IN_FLIGHT } from "../core/_lanes.ts";
import type { QueueBatch } from "../core/_queue_batch.ts";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { Lowest } from "../core/_bounded.ts";
import { batchGet, chunks, eachConcurrently, type Item, pages, S } from "../dynamo/_dynamo.ts";
import {
  COUNTER,
  FAILURE,
  HOLDS,
  isRetryDue,
  OUTBOX,
  outboxFromItem,
  RELAY,
  seqKey,
} from "../core/_layout.ts";
import {
  bookkeepingOf,
  holdsNow,
  holdsTarget,
  readHolds,
  readOutboxRows,
  replace,
} from "./_holds.ts";
import { holdsAt, isDead } from "../core/_relay_rules.ts";
import { partOf } from "./_relay_index.ts";
import { targetKey } from "./_outbox_chain.ts";
import { LIMITS } from "../core/_validate.ts";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import type { RelayItems, UnreadableRow } from "../core/types.ts";
import { createdTime, earliest, numberOf, type QueueReads, unreadableRow } from "./_queue_items.ts";

/** An outbox or spawn row as the keys-and-bookkeeping scan sees it. */
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
 * One scan of the outbox (with `relayIndex: false`): the `limit` lowest deliverable seqs. A target
 * is held from its lowest head that holds it by the relay's rule: an entry its hold item lists
 * ({@linkcode holdsNow}), or one the scan finds waiting for a retry or dead (written by a writer
 * that keeps no holds). The holds of the targets a page shows are read with it, so held entries
 * never fill the `limit`. A listed head whose retry has come goes first, with what it held
 * behind it, and its delivery releases its target; a pass (`pass`) takes out of the holds the
 * heads that are gone. Reads the whole table.
 */
export async function outboxBatch(
  q: QueueReads,
  limit: number,
  now: number,
  pass: boolean,
): Promise<QueueBatch<"outbox">> {
  const { client, consistent } = q.timers;
  const table = q.tables.outbox.name;
  const held = new Map<string, number>();
  const known = new Set<string>();
  const lowest = new Lowest<Candidate>(limit, (a, b) => a.seq - b.seq);
  let oldestAt: number | null = null;
  // Everything (`Infinity`): the scan reads whole items, and no BatchGetItem is needed.
  const whole = limit === Infinity;
  const bodies = new Map<string, Item>();
  const hold = (target: string, seq: number) =>
    held.set(target, Math.min(held.get(target) ?? Infinity, seq));
  const dueHeads = new Set<string>(); // listed heads due for their retry
  const stale: string[] = []; // targets whose hold lists a head that is gone or no longer failed
  const scan = (start: Item | undefined) =>
    client.send(
      new ScanCommand({
        TableName: table,
        ...(whole ? {} : {
          ProjectionExpression: "#s, #t, #p, #c, #a, #r, #d, #u",
          ExpressionAttributeNames: {
            "#s": OUTBOX.seq,
            "#t": OUTBOX.targetId,
            "#p": OUTBOX.prevSeq,
            "#c": OUTBOX.createdAt,
            "#a": FAILURE.attempts,
            "#r": FAILURE.retryAt,
            "#d": FAILURE.deadAt,
            "#u": FAILURE.unreadable,
          },
        }),
        ConsistentRead: consistent,
        ExclusiveStartKey: start,
      }),
    );
  for await (const page of pages(scan)) {
    const items = page.Items ?? [];
    const targets = items.map((item) => candidateOf(item).target).filter((t) => !known.has(t));
    for (const [target, found] of await holdsNow(q, targets, now)) {
      if (found.from !== undefined) hold(target, found.from);
      for (const seq of found.due) dueHeads.add(seq);
      if (found.stale) stale.push(target);
    }
    for (const target of targets) known.add(target);
    for (const item of items) {
      const candidate = candidateOf(item);
      const kept = bookkeepingOf(item);
      if (!isDead(kept)) oldestAt = earliest(oldestAt, numberOf(item[OUTBOX.createdAt]));
      if (holdsAt(kept, now)) {
        hold(candidate.target, candidate.seq);
        continue;
      }
      if (isDead(kept)) continue; // set aside (unreadable): holds nothing back
      if (candidate.seq > (held.get(candidate.target) ?? Infinity)) continue;
      lowest.offer(candidate);
      if (whole) bodies.set(candidate.id, item);
    }
  }
  const clear = (c: Candidate) => !(c.seq > (held.get(c.target) ?? Infinity));
  const chosen = lowest.sorted().filter(clear);
  if (pass) {
    for (const c of chosen) {
      if (dueHeads.has(c.id)) q.headsOut.set(c.seq, { target: c.target, id: c.id });
    }
    await eachConcurrently(stale, ITEM_WRITES_IN_FLIGHT, (target) => replace(q, target));
  }
  const batch = await readOutboxBodies(q, chosen, now, bodies);
  return { ...batch, oldestAt: earliest(oldestAt, batch.oldestAt) };
}

/**
 * The entries of these seqs (a commit's own), read with their predecessors: what a worker
 * delivers within the request that committed them. An entry waiting for a retry, dead, behind
 * a head of its target, or whose predecessor is unknown is left to the next pass.
 */
export async function outboxOf(
  q: QueueReads,
  seqs: number[],
  now: number,
): Promise<QueueBatch<"outbox">> {
  const { client, consistent } = q.timers;
  const table = q.tables.outbox.name;
  const found = new Map<string, Item>();
  const [legacy] = await Promise.all([
    readLegacyHint(q),
    eachConcurrently(
      chunks([...new Set(seqs)], LIMITS.batchGetKeys),
      GETS_IN_FLIGHT,
      (chunk) =>
        batchGet(
          client,
          { [table]: { Keys: chunk.map(seqKey), ConsistentRead: consistent } },
          (responses) => {
            for (const item of responses[table] ?? []) found.set(item.seq?.N ?? "", item);
          },
        ),
    ),
  ]);
  const rows = [...found.values()].map((item) => ({ item, candidate: candidateOf(item) }));
  const holds = await readHolds(q, rows.map((row) => row.candidate.target));
  const hinted = await stillHeld(q, legacy, rows.map((row) => row.candidate));
  const candidates: Candidate[] = [];
  const held = new Set<string>();
  for (const { item, candidate } of rows.sort((a, b) => a.candidate.seq - b.candidate.seq)) {
    const seq = candidate.seq;
    const lowest = Math.min(
      holds.get(candidate.target)?.lowest ?? Infinity,
      hinted.get(candidate.target) ?? Infinity,
    );
    if (item[FAILURE.unreadable]?.BOOL) continue;
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
  return await readOutboxBodies(q, candidates, now, found);
}

/**
 * Reads the bodies of the candidates (seq order) together with every predecessor that is not a
 * candidate itself, then keeps the entries whose chain is clear: an entry whose predecessor (of
 * the same source to the same target) is still pending — fallen behind the scan, or waiting in
 * another pass — waits, and so does the rest of its target.
 */
export async function readOutboxBodies(
  q: QueueReads,
  candidates: Candidate[],
  now: number,
  known = new Map<string, Item>(),
): Promise<QueueBatch<"outbox">> {
  const { client, consistent } = q.timers;
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
        { [table]: { Keys: chunk, ConsistentRead: consistent } },
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

/**
 * The targets the `outbox_holds` hint of an older deploy names (target key → seq), for inline
 * delivery while such a deploy may still run; empty when there is none.
 */
export async function readLegacyHint(q: QueueReads): Promise<Map<string, number>> {
  const result = await q.timers.client.send(
    new GetItemCommand({
      TableName: q.tables.counters.name,
      Key: { [COUNTER.id]: S(HOLDS.id) },
      ConsistentRead: q.timers.consistent,
    }),
  );
  const hint = new Map<string, number>();
  for (const [target, seq] of Object.entries(result.Item?.[HOLDS.holds]?.M ?? {})) {
    if (seq.N !== undefined) hint.set(target, Number(seq.N));
  }
  return hint;
}

/**
 * Of the targets an older deploy's hint names, those whose named entry still holds them (read
 * from the table), among the targets of `candidates` with a later entry: target key → seq.
 */
async function stillHeld(
  q: QueueReads,
  hint: Map<string, number>,
  candidates: Candidate[],
): Promise<Map<string, number>> {
  const named = new Map<string, number>();
  for (const c of candidates) {
    const seq = hint.get(c.target);
    if (seq !== undefined && seq < c.seq) named.set(c.target, seq);
  }
  if (named.size === 0) return named;
  const heads = new Map<number, Item>();
  const rows = await readOutboxRows(q, [...named.values()].map(String));
  for (const [seq, row] of rows) heads.set(Number(seq), row);
  for (const [target, seq] of named) if (!holdsTarget(heads.get(seq))) named.delete(target);
  return named;
}
