// Operators' bulk actions on a queue: every dead letter retried or dropped, and its backlog,
// read through the relay index, so a read follows the dead letters (or the cap), never the table.
import { withSignal } from "../../dynamo/_abortable.ts";
import { GETS_IN_FLIGHT, ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { batchGet, chunks, eachConcurrently, type Item } from "../../dynamo/_dynamo.ts";
import {
  FAILURE,
  isRetryDue,
  OUTBOX,
  RELAY,
  SPAWN,
  TIMER,
  timerFromItem,
} from "../../core/_layout.ts";
import { LIMITS } from "../../core/_validate.ts";
import { numberOf } from "../../core/_attributes.ts";
import { createdTime } from "../../core/_event_time.ts";
import { deadRows, dropDeadLetter, isDeadRow, retryDeadLetter } from "./_dead_letters.ts";
import { candidateOf, type QueueContext } from "./_outbox_table.ts";
import { partition, rowKey } from "./_relay_index.ts";
import { MergedPartitions, mergePage, queryPartition } from "./_index_reads.ts";
import type { Backlog, BulkDeadLetterOptions, RelayKey, RelayKind } from "../../core/types.ts";

/**
 * Retries (or drops) every dead letter of `kind` (of one target with `targetId`), each with the
 * single-key action; how many. Run again, it goes on where a crash or an abort left it.
 */
export async function onDeadLetters(
  q: QueueContext,
  kind: RelayKind,
  action: "retry" | "drop",
  { targetId, onProgress, signal }: BulkDeadLetterOptions,
): Promise<number> {
  let done = 0;
  const act = action === "retry" ? retryDeadLetter : dropDeadLetter;
  for await (const rows of deadRows(q, kind, Infinity, targetId)) {
    signal?.throwIfAborted();
    await eachConcurrently(rows, ITEM_WRITES_IN_FLIGHT, async (row) => {
      if (!await act(q, kind, keyOf(kind, row))) return;
      done++; // counted whether or not anyone listens
      onProgress?.(done);
    }, () => signal?.aborted === true);
  }
  signal?.throwIfAborted();
  return done;
}

function keyOf(kind: RelayKind, row: Item): RelayKey<RelayKind> {
  return kind === "timers" ? timerFromItem(row) : Number(row[OUTBOX.seq]?.N);
}

/** When another writer's entry was made, from its event's `created_time` (it has no `created_at`). */
function eventTime(row: Item): number | undefined {
  const text = row[OUTBOX.event]?.S;
  if (text === undefined) return undefined;
  try {
    return createdTime((JSON.parse(text) as { created_time?: unknown }).created_time) ?? undefined;
  } catch {
    return undefined;
  }
}

/** How many targets' parked entries a backlog reads (one Query each). */
const PARKED_TARGETS = 25;

/** A queue's backlog (see {@linkcode Backlog}), each count read up to `limit` rows. */
export async function backlog(
  given: QueueContext,
  kind: RelayKind,
  limit: number,
  now: number,
  signal?: AbortSignal,
): Promise<Backlog> {
  // Every read of the counts through one client that sends nothing once `signal` aborted.
  const q = withSignal(given, signal);
  const counts = { pending: 0, waiting: 0, dead: 0 };
  const held = new Set<string>();
  let oldestAt: number | null = null;
  let cut = false;
  // What the index offers is counted once a read by key says it is there, in that state: an
  // index entry of a row gone or moved a moment ago (a ghost) counts for nothing.
  const offered: { state: keyof typeof counts; row: Item }[] = [];
  const tally = { pending: 0, waiting: 0, dead: 0 };
  const seen = (state: keyof typeof counts, row: Item) => {
    tally[state]++;
    offered.push({ state, row });
  };
  const count = (state: keyof typeof counts, row: Item) => {
    counts[state]++;
    if (kind === "outbox" && state !== "pending" && !row[FAILURE.unreadable]?.BOOL) {
      held.add(candidateOf(row).target);
    }
    if (state === "pending") {
      const at = kind === "timers"
        ? numberOf(row[TIMER.fireAt])
        : numberOf(row[kind === "outbox" ? OUTBOX.createdAt : SPAWN.createdAt]) ??
          (kind === "outbox" ? eventTime(row) : undefined);
      if (at !== undefined && (oldestAt === null || at < oldestAt)) oldestAt = at;
    }
  };
  const table = q.tables[kind].name;
  // Outbox: the seq each target is held from by a head that holds it (holdsAt), and the
  // targets whose head's retry has come (what a pass parked behind it is deliverable again).
  const heldFrom = new Map<string, number>();
  const dueTargets = new Set<string>();
  const head = (row: Item, holds: boolean) => {
    if (kind !== "outbox") return;
    const { target, id } = candidateOf(row);
    if (!holds) dueTargets.add(target);
    else heldFrom.set(target, Math.min(heldFrom.get(target) ?? Infinity, Number(id)));
  };
  const clear = (row: Item) => {
    const { target, id } = candidateOf(row);
    return !(Number(id) > (heldFrom.get(target) ?? Infinity));
  };
  const read = async (part: "p" | "d", state: keyof typeof counts, bound = {}) => {
    const stream = new MergedPartitions(q.client, table, part, mergePage(limit), bound);
    // Pending rows held behind a head are neither pending nor failed, as MemoryStore counts
    // them: read past them, a bounded way.
    const budget = kind === "outbox" && part === "p" ? 2 * limit : Infinity;
    for (let row, read = 0; tally[state] < limit;) {
      if (read >= budget) {
        cut = true; // more may be pending behind what was read: the count is a floor
        break;
      }
      if (!(row = await stream.next())) break;
      read++;
      if (part === "d" && !row[FAILURE.unreadable]?.BOOL) head(row, true);
      if (part === "p" && kind === "outbox" && !clear(row)) continue;
      seen(state, row);
    }
  };
  // A waiting partition is ordered by retry time: those due by now come first, and are
  // pending (a pass delivers them), as MemoryStore counts them; the rest wait.
  const readWaiting = async () => {
    const stream = new MergedPartitions(q.client, table, "w", mergePage(limit));
    for (let row, read = 0; tally.waiting < limit && read < 2 * limit;) {
      if (!(row = await stream.next())) break;
      read++;
      const due = Number(row[RELAY.order]?.N) <= now;
      head(row, !due);
      if (!due) seen("waiting", row);
      else if (tally.pending < limit) seen("pending", row);
    }
  };
  // What a pass parked behind a head whose retry has come is pending again: one Query per
  // such target, for the first PARKED_TARGETS of them (past those, the count is a floor).
  const readParked = async () => {
    if (dueTargets.size > PARKED_TARGETS) cut = true;
    for (const target of [...dueTargets].slice(0, PARKED_TARGETS)) {
      for (let start: Item | undefined; tally.pending < limit;) {
        const page = await queryPartition(
          q.client,
          table,
          { part: partition("h", target) },
          mergePage(limit),
          start,
        );
        for (const row of page.Items ?? []) {
          if (tally.pending < limit && clear(row)) seen("pending", row);
        }
        if (!(start = page.LastEvaluatedKey)) break;
      }
    }
  };
  // With other writers, a round of the table's feed first: the rows it adopted, not in the
  // index yet (timers: those due by now).
  const found = await q.round?.(kind) ?? [];
  const foreign = kind === "timers"
    ? found.filter((row) => Number(row[TIMER.fireAt]?.N) <= now)
    : found;
  if (kind === "outbox") {
    await Promise.all([readWaiting(), read("d", "dead")]);
    await Promise.all([read("p", "pending", { extra: foreign }), readParked()]);
  } else {
    await Promise.all([
      read("p", "pending", kind === "timers" ? { upTo: now, extra: foreign } : { extra: foreign }),
      readWaiting(),
      read("d", "dead"),
    ]);
  }
  const bodies = await readByKey(q, kind, offered.map(({ row }) => row));
  for (const { state, row } of offered) {
    const body = bodies.get(rowId(kind, row));
    if (body !== undefined && stateOf(kind, body, now) === state) count(state, body);
  }
  return {
    ...counts,
    heldTargets: held.size,
    capped: cut || Object.values(tally).some((n) => n >= limit),
    oldestAt,
  };
}

/** A row's key as text: the seq as stored, or a timer's execution, path and fire time. */
function rowId(kind: RelayKind, row: Item): string {
  return kind === "timers"
    ? `${row[TIMER.executionId]?.S}\u0000${row[TIMER.path]?.S}\u0000${row[TIMER.fireAt]?.N}`
    : row[OUTBOX.seq]?.N ?? "";
}

/** Where a stored row stands at `now`: dead, waiting for a retry still to come, or pending. */
function stateOf(kind: RelayKind, row: Item, now: number): "pending" | "waiting" | "dead" {
  if (isDeadRow(row)) return "dead";
  if (!isRetryDue(row, now)) return "waiting";
  if (kind === "timers" && !(Number(row[TIMER.fireAt]?.N) <= now)) return "waiting";
  return "pending";
}

/** The rows of these index entries, read by key (strongly), by {@linkcode rowId}. */
async function readByKey(
  q: QueueContext,
  kind: RelayKind,
  rows: Item[],
): Promise<Map<string, Item>> {
  const table = q.tables[kind].name;
  const found = new Map<string, Item>();
  const keys = [...new Map(rows.map((row) => [rowId(kind, row), rowKey(kind, row)])).values()];
  await eachConcurrently(
    chunks(keys, LIMITS.batchGetKeys),
    GETS_IN_FLIGHT,
    (chunk) =>
      batchGet(q.client, { [table]: { Keys: chunk, ConsistentRead: true } }, (responses) => {
        for (const item of responses[table] ?? []) found.set(rowId(kind, item), item);
      }),
  );
  return found;
}
