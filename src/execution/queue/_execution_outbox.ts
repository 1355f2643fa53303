// executionOutbox (#34): one execution's outbox entries, found by key — never by reading the
// outbox table or a partition of the relay index. What it emitted: its item's chains
// (`outbox_last`: target → its last seq) name the newest entry of each target, and each entry
// names the one before it (`prev_seq`), so a walk back reads only entries still there (an
// acknowledged one is gone, and so is every earlier one of its chain: a pass never delivers an
// entry before its predecessor). What is to it and failed, or waits behind what failed: its hold
// (`outbox_hold:{target key}`) lists those by key (`heads`, `held`). Every read is strong.
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import type { Item } from "../../dynamo/_dynamo.ts";
import {
  EXECUTION,
  executionKey,
  FAILURE,
  OUTBOX,
  outboxFromItem,
  RELAY,
} from "../../core/_layout.ts";
import { chainsFromItem, PARTIAL, targetKey } from "../commit/_outbox_chain.ts";
import { bookkeepingOf, type Heads, readHolds, readOutboxRows } from "./_holds.ts";
import { partOf } from "./_relay_index.ts";
import { candidateOf } from "./_outbox_bodies.ts";
import { numberOf, type QueueContext } from "./_queue_items.ts";
import type { Reads } from "./_seq_deletes.ts";
import { entryState } from "../../core/_entry_states.ts";
import type { Event } from "../../core/documents.ts";
import type { ExecutionOutbox, OutboxEntryState } from "../../core/types.ts";

/**
 * Execution `id`'s outbox (see `ExecutionStore.executionOutbox`): reads its item's chains and its
 * hold, the rows they name (the lowest `limit` of each list of the hold), then, a round per step
 * back, the entries before the ones found until `limit` are, and the holds of their targets.
 */
export async function executionOutbox(
  q: QueueContext & Reads,
  id: string,
  limit: number,
): Promise<ExecutionOutbox> {
  const own = targetKey(id);
  const listed = new Map<string, string[]>();
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
    readHolds(q, [own], true, listed),
  ]);
  const chains = chainsFromItem(found.Item);
  const lasts = Object.entries(chains ?? {})
    .filter(([key, seq]) => key !== PARTIAL && seq > 0).map(([, seq]) => String(seq));
  const ownHeads = holds.get(own)?.seqs ?? [];
  const ownHeld = [...listed.get(own) ?? []].sort((a, b) => Number(a) - Number(b));
  const first = await readOutboxRows(q, [
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
    rows = before.length ? await readOutboxRows(q, before) : rows;
  }

  const targets = new Set([...emitted.values()].map((row) => candidateOf(row).target));
  targets.delete(own);
  const targetHolds = targets.size ? await readHolds(q, targets) : new Map<string, Heads>();
  targetHolds.set(own, holds.get(own) ?? { seqs: [], lowest: Infinity });
  const stateOf = (row: Item) => entryOf(row, targetHolds.get(candidateOf(row).target));

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

/** A stored outbox row as an operator sees it, its target's hold deciding whether it is held. */
function entryOf(row: Item, heads: Heads | undefined): OutboxEntryState {
  const seq = Number(row[OUTBOX.seq]?.N);
  let event: Event | null = null;
  try {
    event = outboxFromItem(row).event;
  } catch { /* unreadable: null */ }
  const setApart = partOf(row[RELAY.part]?.S) === "h";
  return {
    seq,
    sourceId: row[OUTBOX.sourceId]?.S ?? null,
    targetId: row[OUTBOX.targetId]?.S ?? null,
    event,
    ...entryState(bookkeepingOf(row), seq, setApart, (heads?.seqs ?? []).map(Number)),
    attempts: numberOf(row[FAILURE.attempts]) ?? 0,
    retryAt: numberOf(row[FAILURE.retryAt]) ?? null,
    deadAt: numberOf(row[FAILURE.deadAt]) ?? null,
    lastError: row[FAILURE.lastError]?.S ?? null,
  };
}
