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
import type { ForeignRows, QueueContext } from "../queue/_queue_items.ts";
import {
  afterProbe,
  type CounterState,
  counterState,
  PROBES_PER_READ,
  probesOf,
} from "./_seq_rules.ts";

/** The relay tables whose rows have seqs from a shared counter, and that counter's id. */
export type SeqKind = "outbox" | "spawns";
export const COUNTER_OF: Record<SeqKind, string> = { outbox: "outbox", spawns: "spawn" };

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
