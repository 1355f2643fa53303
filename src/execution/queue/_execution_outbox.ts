// executionOutbox: one execution's outbox entries, found by key, never by a scan. What it
// emitted: its chains (`outbox_last`) name each target's newest entry and each entry its
// predecessor (`prev_seq`), so a walk back reads only entries still there. What failed to it, or
// waits behind that: its hold lists them (`heads`, `held`). Every read is strong.
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { batchGet, chunks, eachConcurrently, type Item } from "../../dynamo/_dynamo.ts";
import { GETS_IN_FLIGHT } from "../../core/_lanes.ts";
import { LIMITS } from "../../core/_validate.ts";
import { EXECUTION, executionKey, FAILURE, OUTBOX } from "../../core/_layout.ts";
import { chainsFromItem, PARTIAL, targetKey } from "../commit/_outbox_chain.ts";
import { candidateOf, type QueueContext, rowOf } from "./_outbox_table.ts";
import { numberOf } from "../../core/_attributes.ts";
import { entryState } from "../../core/_entry_states.ts";
import type { Event } from "../../core/documents.ts";
import type { ExecutionOutbox, OutboxEntryState } from "../../core/types.ts";

/**
 * Execution `id`'s outbox (see `ExecutionStore.executionOutbox`): reads its item's chains and its
 * hold, the rows they name (the lowest `limit` of each list of the hold), then, a round per step
 * back, the entries before the ones found until `limit` are, and the holds of their targets.
 */
export async function executionOutbox(
  q: QueueContext & { consistent: boolean },
  id: string,
  limit: number,
): Promise<ExecutionOutbox> {
  const own = targetKey(id);
  const [found, holds] = await Promise.all([
    q.client.send(
      new GetItemCommand({
        TableName: q.tables.executions.name,
        Key: executionKey(id),
        ProjectionExpression: "#id, #ol",
        ExpressionAttributeNames: { "#id": EXECUTION.id, "#ol": EXECUTION.outboxLast },
        ConsistentRead: q.consistent,
      }),
    ),
    q.outbox.holds([own]),
  ]);
  const chains = chainsFromItem(found.Item);
  const lasts = Object.entries(chains ?? {})
    .filter(([key, seq]) => key !== PARTIAL && seq > 0).map(([, seq]) => String(seq));
  const ownHeads = holds.get(own)?.heads ?? [];
  const ownHeld = holds.get(own)?.held ?? [];
  const first = await readRows(q, [
    ...lasts,
    ...ownHeads.slice(0, limit),
    ...ownHeld.slice(0, limit),
  ]);

  // Back along each chain, a round of reads per step, until `limit` (and one more) are found.
  const emitted = new Map<string, Item>();
  const asked = new Set(lasts);
  let emittedPartial = chains === null || PARTIAL in chains;
  for (let step = lasts, rows = first; step.length > 0;) {
    const before: string[] = [];
    for (const seq of step) {
      const row = rows.get(seq);
      if (row === undefined || row[OUTBOX.sourceId]?.S !== id) continue;
      emitted.set(seq, row);
      const prev = row[OUTBOX.prevSeq]?.N;
      if (prev !== undefined && Number(prev) > 0 && !asked.has(prev)) {
        asked.add(prev);
        before.push(prev);
      }
    }
    if (emitted.size > limit) {
      emittedPartial = true;
      break;
    }
    step = before;
    rows = before.length ? await readRows(q, before) : rows;
  }

  const targets = new Set([...emitted.values()].map((row) => candidateOf(row).target));
  targets.delete(own);
  const targetHolds = targets.size ? await q.outbox.holds([...targets]) : new Map();
  targetHolds.set(own, holds.get(own) ?? { heads: [], held: [], spill: null });
  const stateOf = (row: Item) => entryOf(row, targetHolds.get(candidateOf(row).target)?.heads);

  const targeting = [...new Set([...ownHeads, ...ownHeld])]
    .map((seq) => first.get(seq))
    .filter((row): row is Item => row !== undefined && row[OUTBOX.targetId]?.S === id);
  return {
    emitted: lowest([...emitted.values()].map(stateOf), limit),
    emittedPartial,
    targeting: lowest(targeting.map(stateOf), limit),
    targetingPartial: targeting.length > limit || ownHeads.length > limit ||
      ownHeld.length > limit,
  };
}

/** The `limit` lowest-seq entries, lowest first. */
function lowest(entries: OutboxEntryState[], limit: number): OutboxEntryState[] {
  return entries.sort((a, b) => a.seq - b.seq).slice(0, limit);
}

/** Outbox rows by their stored seqs, strongly consistent. */
async function readRows(q: QueueContext, seqs: readonly string[]): Promise<Map<string, Item>> {
  const rows = new Map<string, Item>();
  const table = q.tables.outbox.name;
  const keys = [...new Set(seqs)].map((n) => ({ [OUTBOX.seq]: { N: n } }));
  await eachConcurrently(
    chunks(keys, LIMITS.batchGetKeys),
    GETS_IN_FLIGHT,
    (chunk) =>
      batchGet(q.client, { [table]: { Keys: chunk, ConsistentRead: true } }, (responses) => {
        for (const row of responses[table] ?? []) rows.set(row[OUTBOX.seq]?.N ?? "", row);
      }),
  );
  return rows;
}

/** A stored outbox row as an operator sees it, its target's hold deciding whether it is held. */
function entryOf(row: Item, heads: string[] | undefined): OutboxEntryState {
  const seq = Number(row[OUTBOX.seq]?.N);
  const read = rowOf(row);
  const event: Event | null = "error" in read.entry ? null : read.entry.event;
  return {
    seq,
    sourceId: row[OUTBOX.sourceId]?.S ?? null,
    targetId: row[OUTBOX.targetId]?.S ?? null,
    event,
    ...entryState(read, seq, read.part.startsWith("h"), (heads ?? []).map(Number)),
    attempts: numberOf(row[FAILURE.attempts]) ?? 0,
    retryAt: numberOf(row[FAILURE.retryAt]) ?? null,
    deadAt: numberOf(row[FAILURE.deadAt]) ?? null,
    lastError: row[FAILURE.lastError]?.S ?? null,
  };
}
