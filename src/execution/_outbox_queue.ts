// The outbox's batch for a relay pass: the lowest seqs of each source and target, read without
// the bodies first, and the held targets (outbox_holds) that keep a failed entry's successors
// waiting. Memory grows with the limit asked for (plus one number per held target).
import { GetItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { Lowest } from "../core/_bounded.ts";
import {
  batchGet,
  chunks,
  eachConcurrently,
  isNamed,
  type Item,
  N,
  pages,
  S,
} from "../dynamo/_dynamo.ts";
import {
  COUNTER,
  FAILURE,
  HOLDS,
  isRetryDue,
  OUTBOX,
  outboxFromItem,
  seqKey,
} from "../core/_layout.ts";
import { targetKey } from "./_outbox_chain.ts";
import { LIMITS } from "../core/_validate.ts";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import type { RelayItems, UnreadableRow } from "../core/types.ts";
import { createdTime, earliest, numberOf, type QueueReads, unreadableRow } from "./_queue_items.ts";

/** The most held targets the `outbox_holds` hint keeps (it must fit one item). */
export const MAX_HOLDS = 1000;

/** How many BatchGetItem calls a batch keeps in flight. */
export const GET_CONCURRENCY = 4;

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
}

/**
 * One scan of the outbox: the `limit` lowest deliverable seqs. A target is held from its lowest
 * entry that waits for a retry or is dead: nothing of it after that seq is deliverable. The held
 * targets of the last pass (`outbox_holds`) are skipped while scanning, so that `limit` fills with
 * deliverable work; this pass's own findings decide, and (for a relay pass, `recordHolds`) become
 * the next pass's hint.
 */
export async function outboxBatch(
  q: QueueReads,
  limit: number,
  now: number,
  recordHolds: boolean,
): Promise<RelayItems<"outbox">> {
  const { client, consistent } = q.timers;
  const table = q.tables.outbox.name;
  const hint = readHolds(q);
  const held = new Map<string, number>();
  const lowest = new Lowest<Candidate>(limit, (a, b) => a.seq - b.seq);
  // Entries the hint skipped: kept apart (as many as the limit), in case their target is no
  // longer held (its entry was delivered, retried or dropped since the hint was written).
  const skipped = new Lowest<Candidate>(limit, (a, b) => a.seq - b.seq);
  let oldestAt: number | null = null;
  // Everything (`Infinity`): the scan reads whole items, and no BatchGetItem is needed.
  const whole = limit === Infinity;
  const bodies = new Map<string, Item>();
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
    const holds = await hint;
    for (const item of page.Items ?? []) {
      const candidate = candidateOf(item);
      const dead = item[FAILURE.deadAt] !== undefined;
      if (!dead) oldestAt = earliest(oldestAt, numberOf(item[OUTBOX.createdAt]));
      if (dead && item[FAILURE.unreadable]?.BOOL) continue; // set aside: holds nothing back
      if (dead || !isRetryDue(item, now)) {
        held.set(candidate.target, Math.min(held.get(candidate.target) ?? Infinity, candidate.seq));
        continue;
      }
      const hinted = holds.get(candidate.target);
      (hinted !== undefined && candidate.seq > hinted ? skipped : lowest).offer(candidate);
      if (whole) bodies.set(candidate.id, item);
    }
  }
  const clear = (c: Candidate) => !(c.seq > (held.get(c.target) ?? Infinity));
  const candidates = [...lowest.sorted().filter(clear), ...skipped.sorted().filter(clear)]
    .sort((a, b) => a.seq - b.seq).slice(0, limit);
  const batch = await readOutboxBodies(q, candidates, bodies);
  oldestAt = earliest(oldestAt, batch.oldestAt);
  if (recordHolds) await writeHolds(q, await hint, held);
  return { ...batch, oldestAt };
}

/**
 * The entries of these seqs (a commit's own), read with their predecessors: what a worker
 * delivers within the request that committed them. An entry waiting for a retry, dead, or behind
 * a target the last pass found held is left to the next pass.
 */
export async function outboxOf(
  q: QueueReads,
  seqs: number[],
  now: number,
): Promise<RelayItems<"outbox">> {
  const { client, consistent } = q.timers;
  const table = q.tables.outbox.name;
  const found = new Map<string, Item>();
  const [holds] = await Promise.all([
    readHolds(q),
    eachConcurrently(
      chunks([...new Set(seqs)], LIMITS.batchGetKeys),
      GET_CONCURRENCY,
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
  const candidates: Candidate[] = [];
  const held = new Set<string>();
  const rows = [...found.values()].map((item) => ({ item, candidate: candidateOf(item) }));
  for (const { item, candidate } of rows.sort((a, b) => a.candidate.seq - b.candidate.seq)) {
    const seq = candidate.seq;
    const hinted = holds.get(candidate.target);
    if (item[FAILURE.unreadable]?.BOOL) continue;
    if (
      item[FAILURE.deadAt] !== undefined || !isRetryDue(item, now) || held.has(candidate.target) ||
      (hinted !== undefined && seq > hinted) ||
      // Its predecessor is unknown (written after a Python commit, or past the chains' cap):
      // only a full pass, which sees the whole outbox, can order it.
      candidate.prev === undefined
    ) held.add(candidate.target);
    else candidates.push(candidate);
  }
  return await readOutboxBodies(q, candidates, found);
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
  known = new Map<string, Item>(),
): Promise<RelayItems<"outbox">> {
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
    GET_CONCURRENCY,
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
      oldestAt = earliest(oldestAt, createdTime(entry.event.created_time));
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
  };
}

/** The held targets the last pass recorded (empty when none, or not readable). */
export async function readHolds(q: QueueReads): Promise<Map<string, number>> {
  const result = await q.timers.client.send(
    new GetItemCommand({
      TableName: q.tables.counters.name,
      Key: { [COUNTER.id]: S(HOLDS.id) },
      ConsistentRead: q.timers.consistent,
    }),
  );
  const holds = new Map<string, number>();
  for (const [target, seq] of Object.entries(result.Item?.[HOLDS.holds]?.M ?? {})) {
    if (seq.N !== undefined) holds.set(target, Number(seq.N));
  }
  return holds;
}

/** Records this pass's held targets for the next pass, when they differ from the last record. */
export async function writeHolds(
  q: QueueReads,
  before: Map<string, number>,
  held: Map<string, number>,
): Promise<void> {
  const kept = [...held].sort(([, a], [, b]) => a - b).slice(0, MAX_HOLDS);
  if (kept.length === before.size && kept.every(([target, seq]) => before.get(target) === seq)) {
    return;
  }
  await q.timers.client.send(
    new UpdateItemCommand({
      TableName: q.tables.counters.name,
      Key: { [COUNTER.id]: S(HOLDS.id) },
      UpdateExpression: "SET #h = :h",
      ExpressionAttributeNames: { "#h": HOLDS.holds },
      ExpressionAttributeValues: {
        ":h": { M: Object.fromEntries(kept.map(([target, seq]) => [target, N(seq)])) },
      },
    }),
  );
}

/** Adds a held target to the `outbox_holds` hint, keeping the lower seq of two. */
export async function holdTarget(q: QueueReads, target: string, seq: number): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await updateHint(q, "SET #h.#t = :s", "attribute_not_exists(#h.#t) OR #h.#t > :s", {
        names: { "#t": target },
        values: { ":s": N(seq) },
      });
      return;
    } catch (error) {
      if (isNamed(error, "ConditionalCheckFailedException")) return; // a lower seq holds it
      if (!isNamed(error, "ValidationException")) throw error;
    }
    // No hint item (or no map) yet: make one, unless another pass just did.
    try {
      await updateHint(q, "SET #h = :m", "attribute_not_exists(#h)", {
        values: { ":m": { M: { [target]: N(seq) } } },
      });
      return;
    } catch (error) {
      if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
    }
  }
}

/** Takes a target out of the hint when it is held at `seq` (its dead letter was retried or dropped). */
export async function releaseTarget(q: QueueReads, target: string, seq: number): Promise<void> {
  try {
    await updateHint(q, "REMOVE #h.#t", "#h.#t = :s", {
      names: { "#t": target },
      values: { ":s": N(seq) },
    });
  } catch (error) {
    if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
  }
}

/** One conditional update of the `outbox_holds` item (`#h` is its map of held targets). */
async function updateHint(
  q: QueueReads,
  update: string,
  condition: string,
  { names = {}, values }: { names?: Record<string, string>; values: Item },
): Promise<void> {
  await q.timers.client.send(
    new UpdateItemCommand({
      TableName: q.tables.counters.name,
      Key: { [COUNTER.id]: S(HOLDS.id) },
      UpdateExpression: update,
      ConditionExpression: condition,
      ExpressionAttributeNames: { "#h": HOLDS.holds, ...names },
      ExpressionAttributeValues: values,
    }),
  );
}
