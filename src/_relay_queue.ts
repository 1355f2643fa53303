// What relays read and write on DynamoDB: one pass's batch of each queue (outbox, spawns, due
// timers) with what is not deliverable left out, the failures they record, and the dead letters
// operators retry or drop. Memory grows with the `limit` asked for (plus one number per held
// target), never with the backlog.
import { type AttributeValue, GetItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { Lowest } from "./_bounded.ts";
import {
  batchGet,
  chunks,
  eachConcurrently,
  isNamed,
  type Item,
  N,
  pages,
  S,
  scanAll,
} from "./_dynamo.ts";
import { fireAtGuard } from "./_fire_at.ts";
import {
  COUNTER,
  FAILURE,
  HOLDS,
  LAST_ERROR_BYTES,
  OUTBOX,
  outboxFromItem,
  seqKey,
  SPAWN,
  spawnFromItem,
  TIMER,
  timerKey,
} from "./_layout.ts";
import { targetKey } from "./_outbox_chain.ts";
import {
  DEAD_SHARD,
  dueByScan,
  dueFromIndex,
  PARKED_SHARD,
  type TimerReads,
} from "./_table_reads.ts";
import { timerShard } from "./_timer_index.ts";
import { LIMITS } from "./_validate.ts";
import { ScanCommand, type TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { type Resends, transactOne } from "./_lost_answers.ts";
import type { ExecutionTables } from "./table_specs.ts";
import type {
  DeadLetter,
  RelayFailure,
  RelayItem,
  RelayItems,
  RelayKey,
  RelayKind,
  Timer,
  UnreadableRow,
} from "./types.ts";

/** What the relay reads need of a store. */
export interface QueueReads {
  timers: TimerReads;
  tables: ExecutionTables;
  /** Whether due timers come from the timer index. */
  timerIndex: boolean;
  /** How an operator's one-item transaction is re-sent (lost answers, conflicts). */
  resends: Resends;
}

/** The most held targets the `outbox_holds` hint keeps (it must fit one item). */
const MAX_HOLDS = 1000;
/** How many BatchGetItem calls a batch keeps in flight. */
const GET_CONCURRENCY = 4;

/** An outbox or spawn row as the keys-and-bookkeeping scan sees it. */
interface Candidate {
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

/** The items of a relay pass over one queue (see `ExecutionStore.relayBatch`). */
export async function relayBatch<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  { limit, now, seqs, pass }: { limit: number; now: number; seqs?: number[]; pass: boolean },
): Promise<RelayItems<K>> {
  if (kind === "timers") return await timerBatch(q, limit, now) as RelayItems<K>;
  if (kind === "spawns") return await spawnBatch(q, limit, now) as RelayItems<K>;
  const batch = seqs === undefined ? outboxBatch(q, limit, now, pass) : outboxOf(q, seqs, now);
  return await batch as RelayItems<K>;
}

// --- outbox ----------------------------------------------------------------------------

/**
 * One scan of the outbox: the `limit` lowest deliverable seqs. A target is held from its lowest
 * entry that waits for a retry or is dead: nothing of it after that seq is deliverable. The held
 * targets of the last pass (`outbox_holds`) are skipped while scanning, so that `limit` fills with
 * deliverable work; this pass's own findings decide, and (for a relay pass, `recordHolds`) become
 * the next pass's hint.
 */
async function outboxBatch(
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
      if (dead || !isDue(item, now)) {
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
async function outboxOf(
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
      item[FAILURE.deadAt] !== undefined || !isDue(item, now) || held.has(candidate.target) ||
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
async function readOutboxBodies(
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

function candidateOf(item: Item): Candidate {
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
async function readHolds(q: QueueReads): Promise<Map<string, number>> {
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
async function writeHolds(
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

// --- spawns ----------------------------------------------------------------------------

/** One scan of the spawn intents: the `limit` lowest seqs that are neither waiting nor dead. */
async function spawnBatch(
  q: QueueReads,
  limit: number,
  now: number,
): Promise<RelayItems<"spawns">> {
  const { client, consistent } = q.timers;
  const table = q.tables.spawns.name;
  const lowest = new Lowest<Candidate>(limit, (a, b) => a.seq - b.seq);
  let oldestAt: number | null = null;
  await scanAll(client, {
    TableName: table,
    ProjectionExpression: "#s, #c, #a, #r, #d",
    ExpressionAttributeNames: {
      "#s": SPAWN.seq,
      "#c": SPAWN.createdAt,
      "#a": FAILURE.attempts,
      "#r": FAILURE.retryAt,
      "#d": FAILURE.deadAt,
    },
    ConsistentRead: consistent,
  }, (page) => {
    for (const item of page) {
      if (item[FAILURE.deadAt] !== undefined) continue;
      oldestAt = earliest(oldestAt, numberOf(item[SPAWN.createdAt]));
      if (isDue(item, now)) lowest.offer(candidateOf(item));
    }
  });
  const candidates = lowest.sorted();
  const found = new Map<string, Item>();
  await eachConcurrently(
    chunks(candidates, LIMITS.batchGetKeys),
    GET_CONCURRENCY,
    (chunk) =>
      batchGet(
        client,
        { [table]: { Keys: chunk.map((c) => c.key), ConsistentRead: consistent } },
        (responses) => {
          for (const item of responses[table] ?? []) found.set(item.seq?.N ?? "", item);
        },
      ),
  );
  const items: RelayItems<"spawns">["items"] = [];
  const unreadable: UnreadableRow<"spawns">[] = [];
  for (const c of candidates) {
    const body = found.get(c.id);
    if (body === undefined) continue;
    try {
      items.push({ item: spawnFromItem(body), attempts: c.attempts });
    } catch (error) {
      unreadable.push(unreadableRow(c.seq, body, c.attempts, error));
    }
  }
  return { items, unreadable, oldestAt };
}

// --- timers ----------------------------------------------------------------------------

/** The `limit` earliest due timers that are neither waiting for a retry nor dead. */
async function timerBatch(
  q: QueueReads,
  limit: number,
  now: number,
): Promise<RelayItems<"timers">> {
  const due = q.timerIndex
    ? await dueFromIndex(q.timers, now, limit, true)
    : await dueByScan(q.timers, now, limit, true);
  return {
    items: due.map(({ attempts, ...timer }) => ({ item: timer, attempts })),
    unreadable: [],
    oldestAt: due[0]?.fireAt ?? null,
  };
}

// --- failures and dead letters ---------------------------------------------------------

/** The table and key of one queue item, and the condition that it is still that item. */
function locate<K extends RelayKind>(
  tables: ExecutionTables,
  kind: K,
  key: RelayKey<K>,
): { table: string; key: Item; names: Record<string, string>; values: Item; condition: string } {
  if (kind === "timers") {
    const timer = key as Timer;
    const guard = fireAtGuard(timer.fireAt);
    return {
      table: tables.timers.name,
      key: timerKey(timer.executionId, timer.path),
      names: { "#f": TIMER.fireAt },
      values: guard.values,
      condition: guard.condition,
    };
  }
  return {
    table: kind === "outbox" ? tables.outbox.name : tables.spawns.name,
    key: seqKey(key as number),
    names: { "#k": OUTBOX.seq },
    values: {},
    condition: "attribute_exists(#k)",
  };
}

/**
 * Records a failed delivery on the item (attempts, the next attempt's time or the dead letter,
 * the error): `false` when the item is gone (acknowledged) or, for a timer, re-scheduled. A
 * re-send after a lost answer sets the same values again, so the answer is exact.
 */
export async function recordFailure<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  key: RelayKey<K>,
  failure: RelayFailure,
): Promise<boolean> {
  const at = locate(q.tables, kind, key);
  const names = {
    ...at.names,
    "#a": FAILURE.attempts,
    "#e": FAILURE.lastError,
    "#r": FAILURE.retryAt,
    "#d": FAILURE.deadAt,
  };
  const values: Item = {
    ...at.values,
    ":a": N(failure.attempts),
    ":e": S(utf8Prefix(failure.error, LAST_ERROR_BYTES) || "(no message)"),
  };
  const sets = ["#a = :a", "#e = :e"];
  if (failure.retryAt === null) {
    values[":d"] = N(Date.now() / 1000);
    sets.push("#d = :d");
    if (failure.unreadable) {
      Object.assign(names, { "#u": FAILURE.unreadable });
      values[":u"] = { BOOL: true };
      sets.push("#u = :u");
    }
  } else {
    values[":r"] = N(failure.retryAt);
    sets.push("#r = :r");
  }
  if (kind === "timers") {
    // Out of the index's sweep shards, so that failing timers never fill a sweep's limit.
    Object.assign(names, { "#s": TIMER.shard });
    values[":s"] = N(failure.retryAt === null ? DEAD_SHARD : PARKED_SHARD);
    sets.push("#s = :s");
  }
  const update = `SET ${sets.join(", ")} REMOVE ${failure.retryAt === null ? "#r" : "#d"}`;
  const input = {
    TableName: at.table,
    Key: at.key,
    UpdateExpression: update,
    ConditionExpression: at.condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValues: kind === "outbox" ? "ALL_NEW" as const : "NONE" as const,
  };
  let stored: Item | undefined;
  try {
    stored = await conditional(q, input);
  } catch (error) {
    // A row another writer left near 400 KB has no room for the error text: record the rest.
    if (!isNamed(error, "ValidationException") || !/size/i.test(String(error))) throw error;
    values[":e"] = S("(error not recorded: the item is at DynamoDB's 400 KB limit)");
    stored = await conditional(q, input);
  }
  if (stored && kind === "outbox" && !failure.unreadable) {
    // The next pass skips this target's later entries while it scans (see outboxBatch).
    await holdTarget(q, candidateOf(stored).target, key as number);
  }
  return stored !== undefined;
}

/** Adds a held target to the `outbox_holds` hint, keeping the lower seq of two. */
async function holdTarget(q: QueueReads, target: string, seq: number): Promise<void> {
  const key = { [COUNTER.id]: S(HOLDS.id) };
  const names = { "#h": HOLDS.holds, "#t": target };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await q.timers.client.send(
        new UpdateItemCommand({
          TableName: q.tables.counters.name,
          Key: key,
          UpdateExpression: "SET #h.#t = :s",
          ConditionExpression: "attribute_not_exists(#h.#t) OR #h.#t > :s",
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ":s": N(seq) },
        }),
      );
      return;
    } catch (error) {
      if (isNamed(error, "ConditionalCheckFailedException")) return; // a lower seq holds it
      if (!isNamed(error, "ValidationException")) throw error;
    }
    // No hint item (or no map) yet: make one, unless another pass just did.
    try {
      await q.timers.client.send(
        new UpdateItemCommand({
          TableName: q.tables.counters.name,
          Key: key,
          UpdateExpression: "SET #h = :m",
          ConditionExpression: "attribute_not_exists(#h)",
          ExpressionAttributeNames: { "#h": HOLDS.holds },
          ExpressionAttributeValues: { ":m": { M: { [target]: N(seq) } } },
        }),
      );
      return;
    } catch (error) {
      if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
    }
  }
}

/** Takes a target out of the hint when it is held at `seq` (its dead letter was retried or dropped). */
async function releaseTarget(q: QueueReads, target: string, seq: number): Promise<void> {
  try {
    await q.timers.client.send(
      new UpdateItemCommand({
        TableName: q.tables.counters.name,
        Key: { [COUNTER.id]: S(HOLDS.id) },
        UpdateExpression: "REMOVE #h.#t",
        ConditionExpression: "#h.#t = :s",
        ExpressionAttributeNames: { "#h": HOLDS.holds, "#t": target },
        ExpressionAttributeValues: { ":s": N(seq) },
      }),
    );
  } catch (error) {
    if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
  }
}

/**
 * Makes a dead letter due again, its attempts forgotten. `false` when there is no such dead
 * letter: the item is gone, pending (not dead-lettered), or (timers) fires at another time.
 */
export function retryDeadLetter<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  const names: Record<string, string> = {
    "#a": FAILURE.attempts,
    "#e": FAILURE.lastError,
    "#r": FAILURE.retryAt,
    "#u": FAILURE.unreadable,
  };
  const values: Item = {};
  let update = "REMOVE #a, #e, #r, #d, #u";
  if (kind === "timers") {
    // Back to the timer's own shard of the index.
    const { executionId, path } = key as Timer;
    names["#s"] = TIMER.shard;
    values[":s"] = N(timerShard(executionId, path, q.timers.shards));
    update = `SET #s = :s ${update}`;
  }
  return onDeadLetter(q, kind, key, "retryDeadLetter", (at) => ({
    Update: {
      TableName: at.table,
      Key: at.key,
      UpdateExpression: update,
      ConditionExpression: at.condition,
      ExpressionAttributeNames: { ...at.names, ...names },
      ...(Object.keys({ ...at.values, ...values }).length
        ? { ExpressionAttributeValues: { ...at.values, ...values } }
        : {}),
    },
  }));
}

/**
 * Deletes a dead letter. `false` when there is no such dead letter: the item is gone (or never
 * was: a mistyped key), pending (a pending item is acknowledged, not dropped), or (timers) fires
 * at another time.
 */
export function dropDeadLetter<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  key: RelayKey<K>,
): Promise<boolean> {
  return onDeadLetter(q, kind, key, "dropDeadLetter", (at) => ({
    Delete: {
      TableName: at.table,
      Key: at.key,
      ConditionExpression: at.condition,
      ExpressionAttributeNames: at.names,
      ...(Object.keys(at.values).length ? { ExpressionAttributeValues: at.values } : {}),
    },
  }));
}

/**
 * One operator action on a dead letter: a one-item transaction with an idempotency token,
 * conditioned on the item being that dead letter, so the answer is exact also when it is
 * re-sent after a lost answer. An outbox entry's target is then released from the held-target
 * hint (read first: a transaction returns no old item), so inline delivery goes on at once.
 */
async function onDeadLetter<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  key: RelayKey<K>,
  operation: string,
  write: (at: ReturnType<typeof locate>) => TransactWriteItem,
): Promise<boolean> {
  const at = locate(q.tables, kind, key);
  const dead = {
    ...at,
    names: { ...at.names, "#d": FAILURE.deadAt },
    condition: `attribute_exists(#d) AND ${at.condition}`,
  };
  // A BatchGetItem (the relay's read), not a GetItem: no other action for the operator's role.
  let before: Item | undefined;
  if (kind === "outbox") {
    await batchGet(
      q.timers.client,
      { [at.table]: { Keys: [at.key], ConsistentRead: true } },
      (responses) => void (before ??= responses[at.table]?.[0]),
    );
  }
  const done = await transactOne(
    q.timers.client,
    write(dead),
    { operation, key: kind === "timers" ? timerName(key as Timer) : String(key) },
    q.resends,
    `the ${kind} dead letter is ${operation === "dropDeadLetter" ? "gone" : "due again"} if it was`,
  );
  if (done.applied && before !== undefined) {
    await releaseTarget(q, candidateOf(before).target, key as number);
  }
  return done.applied;
}

function timerName(timer: Timer): string {
  return `${timer.executionId}/${timer.path}@${timer.fireAt}`;
}

/** The `limit` lowest dead letters of a queue (timers: earliest first). */
export async function deadLetters<K extends RelayKind>(
  q: QueueReads,
  kind: K,
  limit: number,
): Promise<DeadLetter<K>[]> {
  const table = kind === "timers"
    ? q.tables.timers.name
    : kind === "outbox"
    ? q.tables.outbox.name
    : q.tables.spawns.name;
  const order = (a: Item, b: Item) =>
    kind === "timers"
      ? numberOf(a[TIMER.fireAt])! - numberOf(b[TIMER.fireAt])!
      : numberOf(a.seq)! - numberOf(b.seq)!;
  const lowest = new Lowest<Item>(limit, order);
  await scanAll(q.timers.client, {
    TableName: table,
    FilterExpression: "attribute_exists(#d)",
    ExpressionAttributeNames: { "#d": FAILURE.deadAt },
    ConsistentRead: q.timers.consistent,
  }, (page) => {
    for (const item of page) lowest.offer(item);
  });
  return lowest.sorted().map((row) => {
    let item: RelayItem<K> | null = null;
    try {
      item = (kind === "timers"
        ? { ...timerOf(row) }
        : kind === "outbox"
        ? outboxFromItem(row)
        : spawnFromItem(row)) as RelayItem<K>;
    } catch { /* unreadable: raw shows it */ }
    return {
      key: (kind === "timers" ? timerOf(row) : numberOf(row.seq)!) as RelayKey<K>,
      item,
      attempts: numberOf(row[FAILURE.attempts]) ?? 0,
      lastError: row[FAILURE.lastError]?.S ?? null,
      deadAt: numberOf(row[FAILURE.deadAt]) ?? 0,
      raw: plain(row),
    };
  });
}

/** An update whose condition may fail: the item after it (empty without ReturnValues), or undefined. */
async function conditional(
  q: QueueReads,
  input: ConstructorParameters<typeof UpdateItemCommand>[0],
): Promise<Item | undefined> {
  try {
    const result = await q.timers.client.send(new UpdateItemCommand(input));
    return result.Attributes ?? {};
  } catch (error) {
    if (isNamed(error, "ConditionalCheckFailedException")) return undefined;
    throw error;
  }
}

// --- helpers ---------------------------------------------------------------------------

/** The longest prefix of `text` of at most `bytes` UTF-8 bytes, cut between characters. */
function utf8Prefix(text: string, bytes: number): string {
  const whole = text.toWellFormed(); // a lone surrogate would not survive the trip
  const encoded = new TextEncoder().encode(whole);
  if (encoded.length <= bytes) return whole;
  let end = bytes;
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--; // not inside a character
  return new TextDecoder().decode(encoded.subarray(0, end));
}

function timerOf(item: Item): Timer {
  return {
    executionId: item[TIMER.executionId]?.S ?? "",
    path: item[TIMER.path]?.S ?? "",
    fireAt: Number(item[TIMER.fireAt]?.N),
  };
}

/** Whether a row may be attempted at `now`: not waiting for a retry (dead rows are checked apart). */
export function isDue(item: Item, now: number): boolean {
  const retryAt = numberOf(item[FAILURE.retryAt]);
  return retryAt === undefined || retryAt <= now;
}

function numberOf(value: AttributeValue | undefined): number | undefined {
  if (value?.N === undefined) return undefined;
  const n = Number(value.N);
  return Number.isFinite(n) ? n : undefined;
}

function earliest(a: number | null, b: number | null | undefined): number | null {
  if (b === undefined || b === null) return a;
  return a === null || b < a ? b : a;
}

/**
 * An event's `created_time` in epoch seconds: ISO 8601 as Python's `isoformat()` or JS's
 * `toISOString()` writes it; without an offset it is UTC (what harel engines write). Anything
 * else is null.
 */
export function createdTime(text: unknown): number | null {
  if (typeof text !== "string") return null;
  const match = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d(?:\.\d+)?)?)(Z|[+-]\d\d:?\d\d)?$/i
    .exec(text.trim());
  if (!match) return null;
  const [, date, time, offset] = match;
  const ms = Date.parse(`${date}T${time}${offset ?? "Z"}`);
  return Number.isFinite(ms) ? ms / 1000 : null;
}

function unreadableRow<K extends RelayKind>(
  seq: number,
  item: Item,
  attempts: number,
  error: unknown,
): UnreadableRow<K> {
  return {
    key: seq as RelayKey<K>,
    attempts,
    error: error instanceof Error ? error.message : String(error),
    raw: plain(item),
  };
}

/** A stored item as plain values (numbers that a double cannot hold stay strings). */
export function plain(item: Item): Record<string, unknown> {
  return Object.fromEntries(Object.entries(item).map(([name, value]) => [name, plainValue(value)]));
}

function plainValue(value: AttributeValue): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) {
    const n = Number(value.N);
    return Number.isFinite(n) && String(n) === value.N ? n : value.N;
  }
  if (value.NULL) return null;
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.M !== undefined) return plain(value.M);
  if (value.L !== undefined) return value.L.map(plainValue);
  if (value.SS !== undefined) return value.SS;
  if (value.NS !== undefined) return value.NS;
  return "(binary)";
}
