// Other writers' outbox entries and spawns, found by their seqs. Every seq comes from a shared
// counter (`n`); this module records the blocks it reserves (`blocks`, see _seq_blocks.ts), so
// each seq up to `n` outside them is another writer's (the Python store adds to the counter once
// per commit, then writes its rows without any attribute of ours). The counter item also says up
// to where those seqs are accounted for (`seen`) and which were probed but not found yet
// (`missing`: a commit adds to the counter before its transaction lands, or loses its race and
// never lands). A read probes the seqs past `seen` by key, strongly: what it costs follows the
// rows other writers added since, never the table; a pass also adopts the rows it finds into the
// relay index and moves `seen` on.
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { batchGet, chunks, isNamed, type Item, N, S } from "../../dynamo/_dynamo.ts";
import { COUNTER, OUTBOX, RELAY } from "../../core/_layout.ts";
import { blockRange } from "../commit/_seq_blocks.ts";
import type { QueueContext } from "./_queue_items.ts";

/** The relay tables whose rows have seqs from a shared counter, and that counter's id. */
export type SeqKind = "outbox" | "spawns";
export const COUNTER_OF: Record<SeqKind, string> = { outbox: "outbox", spawns: "spawn" };

/**
 * How long a seq another writer took is probed for before it counts as never written (its
 * commit lost its race after adding to the counter): far longer than a commit's two calls.
 */
export const MISSING_GRACE_SECONDS = 600;

/** The most seqs one read probes (other writers' backlog beyond waits for the next pass). */
export const PROBES_PER_READ = 1000;

/** What the counter item says of other writers' seqs. */
export interface CounterState {
  /** The counter's value: the highest seq anyone took. */
  n: number;
  /** Every seq up to this one is accounted for. */
  seen: number;
  /** This module's blocks, lowest first, with their text as stored. */
  blocks: { first: number; last: number; text: string }[];
  /** Seqs probed and not found yet → when first probed (epoch seconds). */
  missing: Map<number, number>;
}

/** The counter item's state (no item: nothing taken yet). */
export function counterState(item: Item | undefined): CounterState {
  const blocks = [...item?.[COUNTER.blocks]?.SS ?? []].flatMap((text) => {
    const range = blockRange(text);
    return range ? [{ first: range[0], last: range[1], text }] : [];
  }).sort((a, b) => a.first - b.first);
  const missing = new Map<number, number>();
  for (const [seq, at] of Object.entries(item?.[COUNTER.missing]?.M ?? {})) {
    missing.set(Number(seq), Number(at.N));
  }
  return {
    n: Number(item?.[COUNTER.n]?.N ?? 0),
    seen: Number(item?.[COUNTER.seen]?.N ?? 0),
    blocks,
    missing,
  };
}

/**
 * The seqs a read probes, lowest first: those probed before and still missing, then those past
 * `seen` that no block of ours holds, at most `max` in all; `upTo`, the highest seq the walk
 * accounted for (every other writer's seq up to it is among `seqs` or was seen before).
 */
export function probesOf(state: CounterState, max: number): { seqs: number[]; upTo: number } {
  const seqs = [...state.missing.keys()].sort((a, b) => a - b).slice(0, max);
  let upTo = state.seen, b = 0;
  const blocks = state.blocks;
  while (upTo < state.n && seqs.length < max) {
    const next = upTo + 1;
    while (b < blocks.length && blocks[b]!.last < next) b++;
    const block = blocks[b];
    if (block && block.first <= next) {
      upTo = Math.min(block.last, state.n); // ours: nothing to probe
      continue;
    }
    seqs.push(next);
    upTo = next;
  }
  return { seqs, upTo };
}

/**
 * The counter's state after a probe of `probes` (found: the seqs whose row exists): `seen` moves
 * to `upTo`, found seqs leave `missing`, new ones join it at `now`, and those missing for longer
 * than the grace are given up; the blocks wholly at or below `seen` are no longer needed.
 */
export function afterProbe(
  state: CounterState,
  probes: { seqs: number[]; upTo: number },
  found: ReadonlySet<number>,
  now: number,
): { seen: number; missing: Map<number, number>; pruned: string[] } {
  const missing = new Map<number, number>();
  for (const seq of probes.seqs) {
    if (found.has(seq)) continue;
    const since = state.missing.get(seq) ?? now;
    if (now - since < MISSING_GRACE_SECONDS) missing.set(seq, since);
  }
  // Missing seqs this probe did not reach (more than `max`) stay as they were.
  for (const [seq, since] of state.missing) {
    if (!probes.seqs.includes(seq) && !found.has(seq)) missing.set(seq, since);
  }
  const seen = Math.max(state.seen, probes.upTo);
  const pruned = state.blocks.filter((block) => block.last <= seen).map((block) => block.text);
  return { seen, missing, pruned };
}

/** What a read found of other writers' rows. */
export interface ForeignRows {
  /** Their rows not in the relay index yet (a pass adopts them), lowest seq first. */
  rows: Item[];
  /**
   * Every seq up to this one is accounted for: a pass delivers nothing above it that the
   * counter handed out, so that no entry of ours goes out ahead of an earlier one another
   * writer wrote to the same target.
   */
  frontier: number;
  /** The counter's value when it was read. */
  counter: number;
}

/**
 * Whether a pass holds back a row of this seq: the counter handed it out, and seqs below it are
 * not all accounted for yet. A seq no counter handed out (above it, or not a whole number: a
 * writer that keeps none) is ordered by nothing and held back by nothing.
 */
export function beyondFrontier(found: ForeignRows | undefined, seq: number): boolean {
  return found !== undefined && seq > found.frontier && seq <= found.counter &&
    Number.isInteger(seq);
}

/** Reads the counter of `kind` strongly (one GetItem's worth, in a BatchGetItem). */
export async function readCounter(q: QueueContext, kind: SeqKind): Promise<Item | undefined> {
  const table = q.tables.counters.name;
  let item: Item | undefined;
  await batchGet(q.timers.client, {
    [table]: { Keys: [{ [COUNTER.id]: S(COUNTER_OF[kind]) }], ConsistentRead: true },
  }, (responses) => {
    item ??= responses[table]?.[0];
  });
  return item;
}

/**
 * The rows other writers added to `kind`'s table past what a pass accounted for, read by key.
 * `record` (a relay pass) saves how far it got; a plain read (pendingOutbox, backlog) saves
 * nothing. Adopting the rows is the caller's (see _adoption.ts).
 */
export async function findForeign(
  q: QueueContext,
  kind: SeqKind,
  now: number,
  { record, max = PROBES_PER_READ }: { record: boolean; max?: number },
): Promise<ForeignRows> {
  const item = await readCounter(q, kind);
  const state = counterState(item);
  const probes = probesOf(state, max);
  const table = q.tables[kind].name;
  const rows: Item[] = [];
  const found = new Set<number>();
  for (const run of chunks(probes.seqs, 100)) {
    await batchGet(q.timers.client, {
      [table]: { Keys: run.map((seq) => ({ [OUTBOX.seq]: N(seq) })), ConsistentRead: true },
    }, (responses) => {
      for (const row of responses[table] ?? []) {
        const seq = Number(row[OUTBOX.seq]?.N);
        found.add(seq);
        if (row[RELAY.part] === undefined) rows.push(row);
      }
    });
  }
  rows.sort((a, b) => Number(a[OUTBOX.seq]!.N) - Number(b[OUTBOX.seq]!.N));
  const next = afterProbe(state, probes, found, now);
  if (record) await saveProbe(q, kind, state, next);
  return { rows, frontier: next.seen, counter: state.n };
}

/**
 * Saves how far a probe got, only if no other pass moved `seen` meanwhile (then its own save
 * stands, and this one's finds are adopted all the same).
 */
async function saveProbe(
  q: QueueContext,
  kind: SeqKind,
  before: CounterState,
  after: { seen: number; missing: Map<number, number>; pruned: string[] },
): Promise<void> {
  const sameMissing = after.missing.size === before.missing.size &&
    [...after.missing].every(([seq, at]) => before.missing.get(seq) === at);
  if (after.seen === before.seen && sameMissing && after.pruned.length === 0) return;
  const names: Record<string, string> = { "#s": COUNTER.seen, "#m": COUNTER.missing };
  const values: Item = { ":s": N(after.seen) };
  let update = "SET #s = :s";
  if (after.missing.size > 0) {
    const map: Item = {};
    for (const [seq, at] of after.missing) map[String(seq)] = N(at);
    values[":m"] = { M: map };
    update += ", #m = :m";
  } else update += " REMOVE #m";
  if (after.pruned.length > 0) {
    names["#b"] = COUNTER.blocks;
    values[":b"] = { SS: after.pruned };
    update += " DELETE #b :b";
  }
  let condition = "#s = :old";
  if (before.seen === 0) condition = "attribute_not_exists(#s) OR #s = :old";
  values[":old"] = N(before.seen);
  try {
    await q.timers.client.send(
      new UpdateItemCommand({
        TableName: q.tables.counters.name,
        Key: { [COUNTER.id]: S(COUNTER_OF[kind]) },
        UpdateExpression: update,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  } catch (error) {
    if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
  }
}
