// Operators' bulk actions on a queue (#25): every dead letter of a kind (or of one target)
// retried or dropped, and a summary of a queue's backlog — through the relay index, so that
// what they read follows the dead letters (or the summary's cap), never the table.
import { ITEM_WRITES_IN_FLIGHT } from "../core/_lanes.ts";
import { eachConcurrently, type Item } from "../dynamo/_dynamo.ts";
import { FAILURE, OUTBOX, SPAWN, TIMER, timerFromItem } from "../core/_layout.ts";
import { numberOf, type QueueReads } from "./_queue_items.ts";
import { deadRows, dropDeadLetter, retryDeadLetter } from "./_dead_letters.ts";
import { MergedPartitions, mergePage } from "./_index_reads.ts";
import { candidateOf } from "./_outbox_queue.ts";
import { placeOf } from "./_relay_index.ts";
import type { Backlog, BulkDeadLetterOptions, RelayKey, RelayKind } from "../core/types.ts";
import { scanAll } from "../dynamo/_dynamo.ts";

/**
 * Retries (or drops) every dead letter of `kind` — of one target when `targetId` is given — and
 * resolves to how many it retried (dropped). Each is the single-key action (a transaction with
 * an idempotency token, exact under lost answers); running it again goes on where a crash or an
 * abort left it. `signal` stops it between dead letters: it rejects with the signal's reason once
 * those started have finished (`onProgress` has seen the count so far).
 */
export async function onDeadLetters(
  q: QueueReads,
  kind: RelayKind,
  action: "retry" | "drop",
  { targetId, onProgress, signal }: BulkDeadLetterOptions,
): Promise<number> {
  let done = 0;
  const act = action === "retry" ? retryDeadLetter : dropDeadLetter;
  for await (const rows of deadRows(q, kind, Infinity, targetId)) {
    signal?.throwIfAborted();
    await eachConcurrently(rows, ITEM_WRITES_IN_FLIGHT, async (row) => {
      if (await act(q, kind, keyOf(kind, row))) onProgress?.(++done);
    }, () => signal?.aborted === true);
  }
  signal?.throwIfAborted();
  return done;
}

function keyOf(kind: RelayKind, row: Item): RelayKey<RelayKind> {
  return kind === "timers" ? timerFromItem(row) : Number(row[OUTBOX.seq]?.N);
}

/**
 * A queue's backlog, each count read up to `limit` rows: pending (timers: due by `now`), waiting
 * for a retry, dead, the outbox targets held behind those, and when the oldest pending item was
 * written (timers: due).
 */
export async function backlog(
  q: QueueReads,
  kind: RelayKind,
  limit: number,
  now: number,
): Promise<Backlog> {
  const counts = { pending: 0, waiting: 0, dead: 0 };
  const held = new Set<string>();
  let oldestAt: number | null = null;
  const seen = (state: keyof typeof counts, row: Item) => {
    counts[state]++;
    if (kind === "outbox" && state !== "pending" && !row[FAILURE.unreadable]?.BOOL) {
      held.add(candidateOf(row).target);
    }
    if (state === "pending") {
      const at = kind === "timers"
        ? numberOf(row[TIMER.fireAt])
        : numberOf(row[kind === "outbox" ? OUTBOX.createdAt : SPAWN.createdAt]);
      if (at !== undefined && (oldestAt === null || at < oldestAt)) oldestAt = at;
    }
  };
  if (q.relayIndex) {
    const table = q.tables[kind].name;
    const read = async (part: "p" | "w" | "d", state: keyof typeof counts, bound = {}) => {
      const stream = new MergedPartitions(q.timers.client, table, part, mergePage(limit), bound);
      for (let row; counts[state] < limit && (row = await stream.next());) seen(state, row);
    };
    await Promise.all([
      read("p", "pending", kind === "timers" ? { upTo: now } : {}),
      read("w", "waiting"),
      read("d", "dead"),
    ]);
  } else {
    await scanAll(q.timers.client, { TableName: q.tables[kind].name }, (rows) => {
      for (const row of rows) {
        const part = placeOf(kind, row, now)?.part[0];
        const state = part === "d" ? "dead" : part === "w" ? "waiting" : "pending";
        if (state === "pending" && kind === "timers" && !(numberOf(row[TIMER.fireAt])! <= now)) {
          continue;
        }
        if (counts[state] < limit) seen(state, row);
      }
    });
  }
  return {
    ...counts,
    heldTargets: held.size,
    capped: Object.values(counts).some((n) => n >= limit),
    oldestAt,
  };
}
