// The stored layout of the execution store's seven tables: the wire format shared with the
// Python harel store and with every deploy of this module. Both directions of
// every item are here (document → item for writes, item → document for reads) so that it
// can be read against the seed in one sitting. NEVER change a name or an encoding here:
// another writer on the same table reads it.
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { type Item, N, S } from "./_attributes.ts";
import type { Event, Execution } from "./documents.ts";
import { parseDocument } from "./_json.ts";
import { UnreadableExecution } from "./errors.ts";
import { isDue, isLiveAt, LAST_ERROR_BYTES, markExpiry } from "./_relay_rules.ts";
import type { OutboxEntry, PendingSpawn, Timer } from "./types.ts";

/**
 * `{prefix}_executions`, key `id`: the document as JSON text in `data`, the version it is at,
 * its definition (for listing filters), and this module's watermarks: the highest outbox and
 * spawn seq it was written with, and where its trace ring ends (`trace_end`, -1: unknown);
 * the status index's keys (`status_shard`, `status_at`) and when it last committed (`updated_at`).
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
  outboxLast: "outbox_last",
  /** Retention: when a finished execution expires, epoch seconds (DynamoDB's TTL attribute). */
  ttl: "ttl",
  /** The status index's partition key: `"{status}#{shard}"`, shard 0..15 from the id. */
  statusShard: "status_shard",
  /** When the execution entered its status, epoch seconds: the status index's sort key. */
  statusAt: "status_at",
  /** When this module last committed the execution, epoch seconds (no index reads it). */
  updatedAt: "updated_at",
} as const;

/**
 * `{prefix}_outbox`, key `seq`: an event to deliver, `target_id` NULL for "the engine's". This
 * module also writes `source_id` (the emitting execution), `prev_seq` (the seq of that source's
 * previous entry to the same target, 0 for none; absent when unknown) and `created_at` (epoch
 * seconds); the seed writes none of them.
 */
export const OUTBOX = {
  seq: "seq",
  targetId: "target_id",
  event: "event",
  sourceId: "source_id",
  prevSeq: "prev_seq",
  /** With otherWriters: entries of ours an unchained entry also waits for (core/_feed_chain.ts). */
  after: "after_seqs",
  createdAt: "created_at",
} as const;

/**
 * A relay's bookkeeping on an outbox entry, spawn or timer whose delivery failed: attempts so
 * far, when the next may start (epoch seconds), the last error, when it was dead-lettered, and
 * whether it was set aside because no one can read it.
 * Relays of this module skip what is not due or dead; the seed reads none of them.
 */
export const FAILURE = {
  attempts: "attempts",
  retryAt: "retry_at",
  lastError: "last_error",
  deadAt: "dead_at",
  /** Set (true) on a row set aside because it cannot be read: it holds back nothing. */
  unreadable: "unreadable",
} as const;

/** A filter of the rows a relay may attempt at `:now`: not dead-lettered, not waiting for a retry. */
export const RELAY_DUE = {
  filter: "attribute_not_exists(#d) AND (attribute_not_exists(#r) OR #r <= :now)",
  names: { "#d": FAILURE.deadAt, "#r": FAILURE.retryAt },
} as const;

/**
 * Whether a row may be attempted at `now` by its retry time (dead rows are checked apart): the
 * relay's rule ({@linkcode isDue}) on a stored item; an unreadable `retry_at` counts as due.
 */
export function isRetryDue(item: Item, now: number): boolean {
  const retryAt = Number(item[FAILURE.retryAt]?.N);
  return isDue({ retryAt: Number.isFinite(retryAt) ? retryAt : null }, now);
}

export { LAST_ERROR_BYTES };

/** The largest bookkeeping a relay writes on an item, for size checks made at commit time. */
export const FAILURE_PLACEHOLDER: Item = {
  [FAILURE.attempts]: N(Number.MAX_SAFE_INTEGER),
  [FAILURE.retryAt]: N(Number.MAX_SAFE_INTEGER),
  [FAILURE.lastError]: S("x".repeat(LAST_ERROR_BYTES)),
  [FAILURE.deadAt]: N(Number.MAX_SAFE_INTEGER),
  [FAILURE.unreadable]: { BOOL: true },
};

/**
 * The relay index's two attributes on outbox entries, spawns and timers: the partition a
 * row is in (`relay_part`, S) and its place there (`relay_order`, N). A row is in exactly one
 * partition of the index, named by its state: `p{shard}` pending (order: seq, or a timer's
 * `fire_at`), `w{shard}` waiting for a retry (order: `retry_at`), `d{shard}` dead-lettered (order:
 * seq or `fire_at`), `h{target key}` an outbox entry held behind a waiting or dead entry of its
 * target (order: seq). Commits write `p`; relays move rows between partitions. Rows without
 * them (the seed, the Python store) are adopted by the feeds of a store built with
 * `otherWriters: true` (see execution/other_writers/_adoption_handlers.ts).
 */
export const RELAY = { part: "relay_part", order: "relay_order" } as const;

/**
 * `{prefix}_counters`, items `outbox_hold:{target key}`: the entries of one target that hold it
 * (`heads`, a number set of their seqs: waiting for a retry, or dead-lettered and readable). A
 * target is held from its lowest head; a head is added in the same transaction that parks or
 * dead-letters its entry, and removed when it is delivered, retried or dropped.
 */
export const HOLD = {
  prefix: "outbox_hold:",
  heads: "heads",
  /**
   * The seqs of the entries held behind the heads, by key: a release reaches every one whatever
   * the index shows, and they stay listed until delivered, so that passes deliver them first.
   */
  held: "held",
  /**
   * The highest seqs (at most 16) of the target's unchained entries the outbox feed saw
   * (`otherWriters: true` only): a new entry with no `prev_seq` is chained behind the highest
   * below it (core/_feed_chain.ts).
   */
  recent: "recent",
  /** The same for the target's entries of ours chained by their source. */
  recentOurs: "recent_ours",
  /**
   * When entries were last set apart behind the heads without room on the list (epoch seconds):
   * found through the index alone, so until a release has seen none left (and the index had time
   * to show them) the target's unlisted entries wait.
   */
  spill: "spill",
} as const;

/**
 * `{prefix}_counters`, item `outbox_releases`: targets being released (`targets`, a string set of
 * `{target key}@{epoch seconds}`), marked before the change that releases them and unmarked once
 * their held entries are back in the pending partitions, so that a crash in between loses
 * nothing: a pass finishes a mark older than a minute.
 */
export const RELEASES = { id: "outbox_releases", targets: "targets" } as const;

/**
 * `{prefix}_counters`, item `status_feed`: how far the stores have read the executions table's
 * stream (DynamoDB Streams) to put other writers' commits back into the status index
 * (execution/other_writers/_status_feed.ts, `otherWriters: true` only); the table feed
 * (_table_feed.ts) keeps the same attributes on an item of its own for each table it reads.
 * `stream`, the stream's ARN the rest is about; `shards`, a Map of shard id → the last sequence
 * number read (`"end"`: a closed shard read to its end), only the shards not read to their end and
 * closed ones whose children have not started, at most 40 (_feed_checkpoint.ts);
 * `backfill`, where the one-off scan for rows the stream never showed stands (JSON text of the
 * scan's position, `"{}"` at the start; absent once done); `lease_until` and `owner`, the store
 * reading it now (epoch seconds, a random id).
 */
export const FEED = {
  id: "status_feed",
  stream: "stream",
  shards: "shards",
  backfill: "backfill",
  leaseUntil: "lease_until",
  owner: "owner",
} as const;

/** `{prefix}_spawns`, key `seq`: a child execution to start. */
export const SPAWN = {
  seq: "seq",
  parentId: "parent_id",
  childId: "child_id",
  rootPath: "root_path",
  context: "context",
  createdAt: "created_at",
} as const;

/** `{prefix}_timers`, key `execution_id` + `path`: when it fires (epoch seconds). */
export const TIMER = { executionId: "execution_id", path: "path", fireAt: "fire_at" } as const;

/** `{prefix}_processed`, key `execution_id` + `event_id`: a dedupe mark, `ttl` optional. */
export const PROCESSED = { executionId: "execution_id", eventId: "event_id", ttl: "ttl" } as const;

/** `{prefix}_trace`, key `execution_id` + `idx`: one step of the ring, as JSON text. */
export const TRACE = { executionId: "execution_id", idx: "idx", entry: "entry" } as const;

/**
 * `{prefix}_counters`, key `id`: `n`, the highest seq handed out (outbox and spawns): a store
 * reserves a block of seqs with `ADD n :size`, as the Python store takes one commit's. The item
 * holds `n` alone, in both modes: it never grows.
 */
export const COUNTER = {
  id: "id",
  n: "n",
} as const;

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

/**
 * The document an execution item holds, or why it holds none: no `data` text, text that is not
 * JSON, or JSON that is not an object (another writer's, or a bug's). The fields are not judged.
 */
export function readExecutionDocument(
  item: Item,
): { document: Execution } | { error: string; cause?: unknown } {
  const text = item[EXECUTION.data]?.S;
  if (text === undefined) return { error: "it has no data (no string attribute data)" };
  let document: unknown;
  try {
    document = parseDocument(text);
  } catch (cause) {
    return { error: `its data is not JSON (${(cause as Error).message})`, cause };
  }
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    const what = document === null
      ? "null"
      : Array.isArray(document)
      ? "an array"
      : `a ${typeof document}`;
    return { error: `its data is ${what}, not a JSON object` };
  }
  return { document: document as Execution };
}

/**
 * The document an execution item holds; an {@linkcode UnreadableExecution} (naming `id`, the
 * item's key) when there is none to read.
 */
export function executionFromItem(item: Item, id = item[EXECUTION.id]?.S ?? ""): Execution {
  const read = readExecutionDocument(item);
  if ("document" in read) return read.document;
  throw new UnreadableExecution(id, read.error, item[EXECUTION.data]?.S ?? null, {
    cause: read.cause,
  });
}

// --- outbox and spawns ----------------------------------------------------------------

export const seqKey = (seq: number): Item => ({ seq: N(seq) });

/** Where an entry sits in its source's chain to its target: the source and the previous seq. */
export interface OutboxLink {
  sourceId: string;
  /** The source's previous seq to the same target, 0 for none, `null` when unknown. */
  prevSeq: number | null;
}

export function outboxItem(
  seq: number,
  target: string | null,
  event: string,
  link?: OutboxLink,
  createdAt?: number,
): Item {
  const item: Item = {
    [OUTBOX.seq]: N(seq),
    [OUTBOX.targetId]: target === null ? { NULL: true } : S(target),
    [OUTBOX.event]: S(event),
  };
  if (link) {
    item[OUTBOX.sourceId] = S(link.sourceId);
    if (link.prevSeq !== null) item[OUTBOX.prevSeq] = N(link.prevSeq);
  }
  if (createdAt !== undefined) item[OUTBOX.createdAt] = N(createdAt);
  return item;
}

export function outboxFromItem(item: Item): OutboxEntry {
  const what = `outbox entry ${item[OUTBOX.seq]?.N}`;
  const target = item[OUTBOX.targetId];
  if (target?.S === undefined && target?.NULL !== true) {
    // Delivering it to "nobody in particular" (null) would deliver it to the wrong place.
    throw new TypeError(`${what} has no target_id (a string, or NULL for none)`);
  }
  return {
    seq: Number(item[OUTBOX.seq]?.N),
    targetId: target.S ?? null,
    event: objectOf<Event>(parseJson(item[OUTBOX.event]?.S, what), `${what}'s event`),
  };
}

/** A parsed document that must be a JSON object (an Event, a context). */
function objectOf<T>(value: unknown, what: string): T {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`${what} is not a JSON object`);
  }
  return value as T;
}

export function spawnItem(
  seq: number,
  parentId: string,
  spawn: { childId: string; rootPath: string; context: string },
  createdAt?: number,
): Item {
  const item: Item = {
    [SPAWN.seq]: N(seq),
    [SPAWN.parentId]: S(parentId),
    [SPAWN.childId]: S(spawn.childId),
    [SPAWN.rootPath]: S(spawn.rootPath),
    [SPAWN.context]: S(spawn.context),
  };
  if (createdAt !== undefined) item[SPAWN.createdAt] = N(createdAt);
  return item;
}

export function spawnFromItem(item: Item): PendingSpawn {
  return {
    seq: Number(item[SPAWN.seq]?.N),
    parentId: item[SPAWN.parentId]?.S ?? "",
    childId: item[SPAWN.childId]?.S ?? "",
    rootPath: item[SPAWN.rootPath]?.S ?? "",
    context: objectOf<Record<string, unknown>>(
      parseJson(item[SPAWN.context]?.S, `spawn ${item[SPAWN.seq]?.N}`),
      `spawn ${item[SPAWN.seq]?.N}'s context`,
    ),
  };
}

// --- timers ---------------------------------------------------------------------------

export const timerKey = (executionId: string, path: string): Item => ({
  [TIMER.executionId]: S(executionId),
  [TIMER.path]: S(path),
});

export function timerItem(executionId: string, path: string, fireAt: number): Item {
  return { ...timerKey(executionId, path), [TIMER.fireAt]: N(fireAt) };
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

/** A mark, expiring `ttlSeconds` after `nowSeconds` (`null`: never). */
export function processedItem(
  executionId: string,
  eventId: string,
  ttlSeconds: number | null,
  nowSeconds: number,
): Item {
  const item = processedKey(executionId, eventId);
  const expiresAt = markExpiry(ttlSeconds, nowSeconds);
  if (expiresAt !== null) item[PROCESSED.ttl] = N(expiresAt);
  return item;
}

/** A dedupe mark counts unless its `ttl` has passed (DynamoDB deletes expired items late). */
export function isLiveMark(item: Item, nowSeconds: number): boolean {
  const ttl = item[PROCESSED.ttl]?.N;
  return isLiveAt(ttl === undefined ? null : Number(ttl), nowSeconds);
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
