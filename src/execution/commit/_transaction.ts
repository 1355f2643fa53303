// The commit's transaction: checking the input, then laying out its items. Shared by
// DynamoDBStore and the memory twin, so both refuse exactly what DynamoDB would.
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { type Item, N, S } from "../../core/_attributes.ts";
import {
  EXECUTION,
  executionKey,
  outboxItem,
  processedItem,
  put,
  RELAY,
  spawnItem,
  timerItem,
  timerKey,
  TRACE,
  traceItem,
  traceKey,
} from "../../core/_layout.ts";
import {
  checkEventBody,
  checkExecution,
  checkInteger,
  checkItemSize,
  checkKey,
  checkObject,
  checkTime,
  describe,
  LIMITS,
} from "../../core/_validate.ts";
import { checkCommitLimits } from "./_commit_size.ts";
import { checkOptionNames } from "../../core/_option_names.ts";
import { toJson } from "../../core/_json.ts";
import { checkEventTimes } from "../../core/_event_time.ts";
import { statusKey, type StatusMove } from "../listing/_status_index.ts";
import { ringDrop } from "../../core/_relay_rules.ts";
import { type Execution, type Status, STATUSES } from "../../core/documents.ts";
import { expiryFor, secondsOf } from "./_retention.ts";
import {
  type Clause,
  commitClauses,
  conditionOf,
  type SeqRun,
  type TraceHead,
} from "./_commit_condition.ts";
import type { ExecutionTables } from "../../core/table_specs.ts";
import { pendingPlace } from "../queue/_relay_index.ts";
import { type Chains, chainsAttr, linkEmits } from "./_outbox_chain.ts";
import type { CommitChanges, Emit, SpawnIntent, TimerChange } from "../../core/types.ts";

/** What laying out a commit depends on besides the commit itself. */
export interface TxContext {
  tables: ExecutionTables;
  traceMax: number;
  processedTtl: number | null;
  /** Retention of finished executions in seconds, or null to keep them forever. */
  finishedTtl: number | null;
  /** The store's clock, epoch milliseconds: expiries are written and checked with it. */
  now: () => number;
}

export type Role = "execution" | "outbox" | "spawn" | "processed" | "timer" | "trace";

/** A commit checked and encoded, before seqs and the trace index are known. */
export interface CommitPlan {
  id: string;
  expected: number;
  next: number;
  data: string;
  definitionId: string;
  /** The status the commit leaves the execution in. */
  status: Status;
  /** The status index's partition (`status_shard`) the commit leaves the execution in. */
  statusKey: string;
  /** The commit's time, epoch seconds: what expiries are measured from and checked against. */
  now: number;
  /** The `ttl` the execution item gets (epoch seconds), or null: the commit removes it. */
  expiresAt: number | null;
  emits: { target: string | null; event: string }[];
  spawns: { childId: string; rootPath: string; context: string }[];
  processedEventId?: string;
  timers: ReadonlyMap<string, number | null>; // path → fireAt, or null to cancel
  trace?: string;
}

export type { SeqRun, TraceHead } from "./_commit_condition.ts";

/**
 * The execution item's attribute naming the index of the last trace step a writer of this
 * module appended (-1: unknown, after a step written at a caller's index). Commits that trust
 * a cached ring end check it; the seed neither writes nor reads it.
 */
export const TRACE_END = EXECUTION.traceEnd;

// Executions whose commit has not finished, in any store of this process: a second commit of
// the same object (a missing `await`) would carry the same version and lose a confusing race.
const committing = new WeakSet<object>();

/**
 * Marks `exe` as being committed until `release` is called; refuses it with a TypeError when
 * a commit of this very object is already in flight.
 */
export function claimCommit(exe: unknown): () => void {
  if (typeof exe !== "object" || exe === null) return () => {};
  if (committing.has(exe)) {
    throw new TypeError(
      `exe (execution ${
        JSON.stringify((exe as { id?: unknown }).id)
      }) is already being committed: await the first commit() before committing the same object again`,
    );
  }
  committing.add(exe);
  return () => committing.delete(exe);
}

/**
 * Refuses, before anything is sent, an execution whose `version` a successful commit could
 * not bump in place (a frozen object, as Immer makes): everything would be written, then the
 * bump would throw, and the caller's retry would meet a StoreConflict.
 */
function checkVersionWritable(exe: object): void {
  const slot = Object.getOwnPropertyDescriptor(exe, "version");
  const writable = slot === undefined
    ? Object.isExtensible(exe)
    : slot.writable === true || slot.set !== undefined;
  if (!writable) {
    throw new TypeError(
      `exe (execution ${
        JSON.stringify((exe as { id?: unknown }).id)
      }) is frozen or its version is read-only: commit() bumps exe.version in place, so commit a mutable copy (e.g. structuredClone(exe)) and use its version`,
    );
  }
}

/**
 * Checks an `appendTrace` step and encodes it: the index it carries (the seed's
 * `entry.get("index", ...)`), if any, and its JSON, sized as the largest item it can make.
 */
export function planTraceEntry(
  id: string,
  entry: Record<string, unknown>,
): { index: number | undefined; json: string } {
  checkKey("id", id, LIMITS.partitionKeyBytes);
  checkObject("entry", entry);
  const index = entry.index === undefined
    ? undefined
    : checkInteger("entry.index", entry.index, 0, Number.MAX_SAFE_INTEGER);
  const json = toJson("entry", entry, true);
  checkItemSize("entry", traceItem(id, Number.MAX_SAFE_INTEGER, json));
  return { index, json };
}

/** Checks a commit and encodes everything that does not depend on seqs or the trace index. */
export function planCommit(ctx: TxContext, exe: Execution, changes: CommitChanges): CommitPlan {
  const plan = encodeCommit(exe, changes) as CommitPlan;
  plan.now = secondsOf(ctx.now);
  plan.expiresAt = expiryFor(plan.status, ctx.finishedTtl, plan.now);
  checkCommitLimits(ctx, plan);
  return plan;
}

/** Checks the commit's input and encodes it, field by field in the order errors name them. */
function encodeCommit(
  exe: Execution,
  changes: CommitChanges,
): Omit<CommitPlan, "now" | "expiresAt"> {
  checkObject("exe", exe);
  const id = checkKey("exe.id", exe.id, LIMITS.partitionKeyBytes);
  const expected = checkInteger("exe.version", exe.version, 0, Number.MAX_SAFE_INTEGER - 1);
  checkVersionWritable(exe);
  const definitionId = checkKey("exe.definition_id", exe.definition_id, LIMITS.itemBytes);
  checkExecution(exe, STATUSES);
  exe.deferred.forEach((event, i) => checkEventTimes(`exe.deferred[${i}]`, event));
  checkObject("changes", changes);
  checkOptionNames("commit()'s changes", changes);
  const plan: Omit<CommitPlan, "now" | "expiresAt"> = {
    id,
    expected,
    next: expected + 1,
    data: toJson("exe", { ...exe, version: expected + 1 }, true),
    definitionId,
    status: exe.status,
    statusKey: statusKey(exe.status, id),
    emits: listOf("emits", changes.emits).map(encodeEmit),
    spawns: listOf("spawns", changes.spawns).map(encodeSpawn),
    timers: NO_TIMERS,
  };
  if (changes.processedEventId !== undefined) {
    plan.processedEventId = checkKey(
      "changes.processedEventId",
      changes.processedEventId,
      LIMITS.sortKeyBytes,
    );
  }
  const timers = listOf("timers", changes.timers);
  if (timers.length > 0) plan.timers = encodeTimers(timers);
  if (changes.trace !== undefined) {
    plan.trace = toJson("changes.trace", checkObject("changes.trace", changes.trace), true);
  }
  return plan;
}

/** The timer changes of a commit that changes none. */
const NO_TIMERS: ReadonlyMap<string, number | null> = new Map();

/** `changes[field]`: absent is empty, anything but an array is refused. */
function listOf<T>(field: string, value: T[] | undefined): T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new TypeError(`changes.${field} must be an array, got ${describe(value)}`);
  }
  return value;
}

function encodeEmit(emit: Emit, i: number): CommitPlan["emits"][number] {
  const field = `changes.emits[${i}]`;
  checkObject(field, emit);
  const target = emit.target === null
    ? null
    : checkKey(`${field}.target`, emit.target, LIMITS.itemBytes);
  const event = checkObject(`${field}.event`, emit.event);
  checkKey(`${field}.event.id`, event.id, LIMITS.sortKeyBytes); // a dedupe mark's range key
  checkEventBody(`${field}.event`, event);
  checkEventTimes(`${field}.event`, event);
  return { target, event: toJson(`${field}.event`, event, true) };
}

function encodeSpawn(spawn: SpawnIntent, i: number): CommitPlan["spawns"][number] {
  const field = `changes.spawns[${i}]`;
  checkObject(field, spawn);
  if (typeof spawn.rootPath !== "string") {
    throw new TypeError(`${field}.rootPath must be a string, got ${describe(spawn.rootPath)}`);
  }
  return {
    childId: checkKey(`${field}.childId`, spawn.childId, LIMITS.itemBytes),
    rootPath: spawn.rootPath,
    context: toJson(`${field}.context`, checkObject(`${field}.context`, spawn.context), true),
  };
}

/** Timer changes by path (the last mention of a path wins): fire time, or null to cancel. */
function encodeTimers(timers: TimerChange[]): Map<string, number | null> {
  const byPath = new Map<string, number | null>();
  timers.forEach((timer, i) => {
    const field = `changes.timers[${i}]`;
    checkObject(field, timer);
    const path = checkKey(`${field}.path`, timer.path, LIMITS.sortKeyBytes);
    byPath.delete(path); // keep the order of last mention
    if (timer.action === "schedule") {
      byPath.set(path, checkTime(`${field}.fireAt`, timer.fireAt));
    } else if (timer.action === "cancel") byPath.set(path, null);
    else {
      throw new TypeError(
        `${field}.action must be "schedule" or "cancel", got ${
          describe((timer as { action: unknown }).action)
        }`,
      );
    }
  });
  return byPath;
}

/**
 * Where a commit's entries go: their seqs, the trace ring's end (for a traced commit), and the
 * execution's outbox chains at the expected version (for a commit with emits; see
 * _outbox_chain.ts).
 */
export interface Placement {
  outbox: SeqRun;
  spawns: SeqRun;
  head: TraceHead | undefined;
  chains?: Chains;
  /** Whether the commit moves the execution's status index entry (see StatusMove). */
  status: StatusMove;
}

/** A commit's transaction, as {@linkcode buildTransaction} lays it out. */
export interface BuiltCommit {
  items: TransactWriteItem[];
  /** The role of each item (its index in CancellationReasons). */
  roles: Role[];
  /** The clauses of the execution Update's condition: a refusal is told by them. */
  clauses: Clause[];
  /** The outbox chains the commit leaves (a commit with emits, or an insert). */
  chains: Record<string, number> | undefined;
}

/** The transaction items of a commit, with the role of each and its condition's clauses. */
export function buildTransaction(
  ctx: TxContext,
  plan: CommitPlan,
  { outbox, spawns, head, chains, status }: Placement,
): BuiltCommit {
  const t = ctx.tables;
  const traced = plan.trace !== undefined && head !== undefined;
  const clauses = commitClauses({
    expected: plan.expected,
    now: plan.now,
    outbox,
    spawns,
    head: traced ? head : undefined,
    statusKept: status === "unknown" ? plan.statusKey : undefined,
  });
  const condition = conditionOf(clauses);
  const names = condition.names;
  const values = condition.values;
  names["#d"] = EXECUTION.data;
  names["#v"] = EXECUTION.version;
  names["#def"] = EXECUTION.definitionId;
  names["#ua"] = EXECUTION.updatedAt;
  names["#ttl"] = EXECUTION.ttl;
  values[":d"] = S(plan.data);
  values[":v"] = N(plan.next);
  values[":def"] = S(plan.definitionId);
  values[":now"] = N(plan.now);
  let sets = "#d = :d, #v = :v, #def = :def, #ua = :now";
  // The status index moves only with the status: a commit that keeps it writes no index entry.
  if (status !== "same") {
    names["#ss"] = EXECUTION.statusShard;
    names["#sa"] = EXECUTION.statusAt;
    values[":ss"] = S(plan.statusKey);
    sets += status === "changed"
      ? ", #ss = :ss, #sa = :now"
      : ", #ss = :ss, #sa = if_not_exists(#sa, :now)";
  }
  // Retention: the commit sets the ttl of a finished execution, else removes it.
  if (plan.expiresAt !== null) {
    values[":ttl"] = N(plan.expiresAt);
    sets += ", #ttl = :ttl";
  }
  // Each execution remembers its highest seqs (the clauses hold a commit to higher ones).
  const watermark = (attr: string, alias: string, { seqs }: SeqRun) => {
    if (seqs.length === 0 && plan.expected !== 0) return;
    names[`#${alias}`] = attr;
    values[`:${alias}`] = N(seqs.at(-1) ?? 0);
    sets += `, #${alias} = :${alias}`;
  };
  watermark(EXECUTION.outboxHwm, "oh", outbox);
  watermark(EXECUTION.spawnHwm, "sh", spawns);
  if (traced) {
    names["#te"] = EXECUTION.traceEnd;
    values[":te"] = N(head.last + 1);
    sets += ", #te = :te";
  }
  // Each entry names its source's previous seq to the same target (see _outbox_chain.ts).
  const links = chains === undefined
    ? undefined
    : linkEmits(chains, plan.emits.map((emit) => emit.target), outbox.seqs);
  if (links) {
    names["#ol"] = EXECUTION.outboxLast;
    values[":ol"] = chainsAttr(links.next);
    sets += ", #ol = :ol";
  }
  const items: TransactWriteItem[] = [{
    Update: {
      TableName: t.executions.name,
      Key: executionKey(plan.id),
      UpdateExpression: `SET ${sets}${plan.expiresAt === null ? " REMOVE #ttl" : ""}`,
      ConditionExpression: condition.expression,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    },
  }];
  const roles: Role[] = ["execution"];
  const add = (role: Role, item: TransactWriteItem) => {
    items.push(item);
    roles.push(role);
  };
  const createdAt = plan.now; // the store's clock, as every time a commit writes
  plan.emits.forEach((emit, i) => {
    const link = { sourceId: plan.id, prevSeq: links ? links.prevs[i]! : null };
    const item = outboxItem(outbox.seqs[i]!, emit.target, emit.event, link, createdAt);
    add("outbox", put(t.outbox.name, pending("outbox", item)));
  });
  plan.spawns.forEach((spawn, i) =>
    add(
      "spawn",
      put(t.spawns.name, pending("spawns", spawnItem(spawns.seqs[i]!, plan.id, spawn, createdAt))),
    )
  );
  if (plan.processedEventId !== undefined) {
    const mark = processedItem(plan.id, plan.processedEventId, ctx.processedTtl, plan.now);
    add("processed", put(t.processed.name, mark));
  }
  for (const [path, fireAt] of plan.timers) {
    add(
      "timer",
      fireAt === null
        ? { Delete: { TableName: t.timers.name, Key: timerKey(plan.id, path) } }
        : put(
          t.timers.name,
          pending("timers", timerItem(plan.id, path, fireAt)),
        ),
    );
  }
  if (traced) {
    for (const item of traceItems(ctx, plan.id, head, plan.trace!)) add("trace", item);
  }
  return { items, roles, clauses, chains: links?.next };
}

/** A row as a commit writes it: with the relay index's attributes of a pending row. */
function pending(kind: "outbox" | "spawns" | "timers", item: Item): Item {
  const place = pendingPlace(kind, item);
  item[RELAY.part] = S(place.part);
  item[RELAY.order] = place.order;
  return item;
}

/**
 * The items that append one trace step after `head.last` (index `head.last + 1`; 0 on an
 * empty ring, as the seed). Guarded so that a stale head fails the transaction instead of
 * leaving a gap or overwriting a step: the new index must be free and the previous step must
 * exist. The step that falls out of this store's window is deleted whether or not it still
 * exists: another writer with a smaller ring (another `traceMax`, the Python seed's
 * `trace_max`) may have deleted it already, and that must never block us.
 */
export function traceItems(
  ctx: TxContext,
  id: string,
  head: TraceHead,
  entry: string,
): TransactWriteItem[] {
  const table = ctx.tables.trace.name;
  const key = (idx: number) => traceKey(id, idx);
  const names = { "#i": TRACE.idx };
  const index = head.last + 1;
  const items: TransactWriteItem[] = [{
    Put: {
      TableName: table,
      Item: traceItem(id, index, entry),
      ConditionExpression: "attribute_not_exists(#i)",
      ExpressionAttributeNames: names,
    },
  }];
  const drop = ringDrop(index, ctx.traceMax);
  const previous = { ConditionExpression: "attribute_exists(#i)", ExpressionAttributeNames: names };
  if (head.last >= 0 && drop === head.last) {
    // traceMax 1: the step to drop is the previous one (one operation per item).
    items.push({ Delete: { TableName: table, Key: key(head.last), ...previous } });
  } else {
    if (head.last >= 0) {
      items.push({ ConditionCheck: { TableName: table, Key: key(head.last), ...previous } });
    }
    if (drop >= 0) items.push({ Delete: { TableName: table, Key: key(drop) } });
  }
  return items;
}

/**
 * The items that write one trace step at an index the caller chose (`entry.index`, as the
 * seed's `entry.get("index", ...)`): written as given, like the seed, and the step that falls
 * out of this store's window from there deleted.
 */
export function tracePutAt(
  ctx: TxContext,
  id: string,
  index: number,
  entry: string,
): TransactWriteItem[] {
  const table = ctx.tables.trace.name;
  const key = (idx: number) => traceKey(id, idx);
  const items: TransactWriteItem[] = [put(table, traceItem(id, index, entry))];
  const drop = ringDrop(index, ctx.traceMax);
  if (drop >= 0) items.push({ Delete: { TableName: table, Key: key(drop) } });
  return items;
}
