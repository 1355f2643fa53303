// The stored layout of the execution store's seven tables: the wire format shared with the
// Python harel store and with older and newer deploys of this module. Both directions of
// every item are here (document → item for writes, item → document for reads) so that it
// can be read against the seed in one sitting. NEVER change a name or an encoding here:
// another writer on the same table reads it.
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { type Item, N, S } from "./_attributes.ts";
import type { Event, Execution } from "./documents.ts";
import { parseDocument } from "./_state_values.ts";
import type { OutboxEntry, PendingSpawn, Timer } from "./types.ts";

/**
 * `{prefix}_executions`, key `id`: the document as JSON text in `data`, the version it is at,
 * its definition (for listing filters), and this module's watermarks: the highest outbox and
 * spawn seq it was written with, and where its trace ring ends (`trace_end`, -1: unknown).
 * The seed writes `id`, `data`, `version`, `definition_id` only.
 */
export const EXECUTION = {
  id: "id",
  data: "data",
  version: "version",
  definitionId: "definition_id",
  outboxHwm: "outbox_hwm",
  spawnHwm: "spawn_hwm",
  traceEnd: "trace_end",
} as const;

/** `{prefix}_outbox`, key `seq`: an event to deliver, `target_id` NULL for "the engine's". */
export const OUTBOX = { seq: "seq", targetId: "target_id", event: "event" } as const;

/** `{prefix}_spawns`, key `seq`: a child execution to start. */
export const SPAWN = {
  seq: "seq",
  parentId: "parent_id",
  childId: "child_id",
  rootPath: "root_path",
  context: "context",
} as const;

/**
 * `{prefix}_timers`, key `execution_id` + `path`: when it fires (epoch seconds), and the
 * timer index's shard (`timer_shard`, written even with the index off, so that a rolling
 * deploy turning it on finds every timer this module armed; the seed writes none).
 */
export const TIMER = {
  executionId: "execution_id",
  path: "path",
  fireAt: "fire_at",
  shard: "timer_shard",
} as const;

/** `{prefix}_processed`, key `execution_id` + `event_id`: a dedupe mark, `ttl` optional. */
export const PROCESSED = { executionId: "execution_id", eventId: "event_id", ttl: "ttl" } as const;

/** `{prefix}_trace`, key `execution_id` + `idx`: one step of the ring, as JSON text. */
export const TRACE = { executionId: "execution_id", idx: "idx", entry: "entry" } as const;

/** `{prefix}_counters`, key `id`: `n`, the highest seq handed out (outbox and spawns). */
export const COUNTER = { id: "id", n: "n" } as const;

/**
 * The state store's table (`harel_state` unless named), key `pk`: a plain value as JSON text
 * in `value` (a legacy hash too: a JSON object there), a hash as a native Map in `hash`, the
 * expiry in epoch seconds in `ttl` (DynamoDB's TTL attribute), and `updated_at` (epoch
 * seconds, written on every write, never read). The seed writes the same names. Added by this
 * module (other writers ignore them): `write_id`, a random id each hash write leaves, and
 * `write_id_1`, `write_id_2`, the two before it (`""` for none), so that a re-sent copy of a
 * write whose first answer was lost recognises its own work.
 */
export const STATE = {
  key: "pk",
  value: "value",
  hash: "hash",
  ttl: "ttl",
  updatedAt: "updated_at",
  writeId: "write_id",
  writeId1: "write_id_1",
  writeId2: "write_id_2",
} as const;

/** The key of a state-store item. */
export const stateKey = (key: string): Item => ({ [STATE.key]: S(key) });

/** The largest seq's encoding, for size checks made before seqs are known. */
export const SEQ_PLACEHOLDER = N(Number.MAX_SAFE_INTEGER);

/**
 * Stored JSON text back to a document; a missing text is a TypeError naming the item. Reads
 * Python's `json.dumps` dialect too: its `NaN`, `Infinity` and `-Infinity` read as `null`.
 */
export function parseJson<T>(text: string | undefined, what: string): T {
  if (text === undefined) throw new TypeError(`${what} has no JSON text`);
  return parseDocument(text) as T;
}

// --- executions -----------------------------------------------------------------------

export const executionKey = (id: string): Item => ({ [EXECUTION.id]: S(id) });

/** The document an execution item holds. */
export function executionFromItem(item: Item, what = "execution"): Execution {
  return parseJson<Execution>(item[EXECUTION.data]?.S, what);
}

// --- outbox and spawns ----------------------------------------------------------------

export const seqKey = (seq: number): Item => ({ seq: N(seq) });

export function outboxItem(seq: number, target: string | null, event: string): Item {
  return {
    [OUTBOX.seq]: N(seq),
    [OUTBOX.targetId]: target === null ? { NULL: true } : S(target),
    [OUTBOX.event]: S(event),
  };
}

export function outboxFromItem(item: Item): OutboxEntry {
  return {
    seq: Number(item[OUTBOX.seq]?.N),
    targetId: item[OUTBOX.targetId]?.S ?? null,
    event: parseJson<Event>(item[OUTBOX.event]?.S, `outbox entry ${item[OUTBOX.seq]?.N}`),
  };
}

export function spawnItem(
  seq: number,
  parentId: string,
  spawn: { childId: string; rootPath: string; context: string },
): Item {
  return {
    [SPAWN.seq]: N(seq),
    [SPAWN.parentId]: S(parentId),
    [SPAWN.childId]: S(spawn.childId),
    [SPAWN.rootPath]: S(spawn.rootPath),
    [SPAWN.context]: S(spawn.context),
  };
}

export function spawnFromItem(item: Item): PendingSpawn {
  return {
    seq: Number(item[SPAWN.seq]?.N),
    parentId: item[SPAWN.parentId]?.S ?? "",
    childId: item[SPAWN.childId]?.S ?? "",
    rootPath: item[SPAWN.rootPath]?.S ?? "",
    context: parseJson<Record<string, unknown>>(
      item[SPAWN.context]?.S,
      `spawn ${item[SPAWN.seq]?.N}`,
    ),
  };
}

// --- timers ---------------------------------------------------------------------------

export const timerKey = (executionId: string, path: string): Item => ({
  [TIMER.executionId]: S(executionId),
  [TIMER.path]: S(path),
});

export function timerItem(executionId: string, path: string, fireAt: number, shard: number): Item {
  return { ...timerKey(executionId, path), [TIMER.fireAt]: N(fireAt), [TIMER.shard]: N(shard) };
}

export function timerFromItem(item: Item): Timer {
  return {
    executionId: item[TIMER.executionId]?.S ?? "",
    path: item[TIMER.path]?.S ?? "",
    fireAt: Number(item[TIMER.fireAt]?.N),
  };
}

// --- dedupe marks ---------------------------------------------------------------------

export const processedKey = (executionId: string, eventId: string): Item => ({
  [PROCESSED.executionId]: S(executionId),
  [PROCESSED.eventId]: S(eventId),
});

/** A mark, expiring `ttlSeconds` from now (`null`: never). */
export function processedItem(
  executionId: string,
  eventId: string,
  ttlSeconds: number | null,
): Item {
  const item = processedKey(executionId, eventId);
  if (ttlSeconds !== null) item[PROCESSED.ttl] = N(Math.floor(Date.now() / 1000) + ttlSeconds);
  return item;
}

/** A dedupe mark counts unless its `ttl` has passed (DynamoDB deletes expired items late). */
export function isLiveMark(item: Item): boolean {
  const ttl = item[PROCESSED.ttl]?.N;
  return ttl === undefined || Number(ttl) > Date.now() / 1000;
}

// --- trace ----------------------------------------------------------------------------

export const traceKey = (executionId: string, idx: number): Item => ({
  [TRACE.executionId]: S(executionId),
  [TRACE.idx]: N(idx),
});

export function traceItem(executionId: string, idx: number, entry: string): Item {
  return { ...traceKey(executionId, idx), [TRACE.entry]: S(entry) };
}

/** A stored step as the engine reads it: its JSON, with `index` from the key. */
export function traceStepFromItem(item: Item, executionId: string): Record<string, unknown> {
  return {
    ...parseJson<object>(item[TRACE.entry]?.S, `trace step of ${executionId}`),
    index: Number(item[TRACE.idx]?.N),
  };
}

/** A Put of `item` into `table`, unconditional. */
export const put = (table: string, item: Item): TransactWriteItem => ({
  Put: { TableName: table, Item: item },
});
