// The condition of a commit's execution Update as one list of clauses: each clause is its own
// expression text, the names and values it reads, and a pure test that tells, from the item
// DynamoDB found (`ALL_OLD`), whether this clause is what failed. The Update's
// ConditionExpression is built from the list and a refusal is decoded from the same list, so
// the two cannot drift apart. Shared by DynamoDBStore and the memory twin's tests.
import { type Item, N } from "../../core/_attributes.ts";
import { EXECUTION } from "../../core/_layout.ts";
import { ABSENT, ALIVE, isExpired, livenessValues } from "./_retention.ts";

/**
 * Seqs for one kind of entry (outbox or spawn), ascending. `fresh` when they come from a block
 * reserved after this commit saw the execution's watermark: then they need not exceed it.
 */
export interface SeqRun {
  seqs: number[];
  fresh: boolean;
}

/**
 * Where the trace ring ends: its highest index, -1 when the ring is empty. `cached` when it
 * comes from this store's memory rather than a read: the commit then also requires the
 * execution's `trace_end` to still say so (an append outside a commit changes it).
 */
export interface TraceHead {
  last: number;
  cached?: boolean;
}

/** What a failed clause means for the commit. */
export type ClauseKind =
  /** Another writer's commit won (a version moved on, an item in the way of an insert, or gone). */
  | "version"
  /** A trace step was appended outside a commit since this store cached the ring's end. */
  | "traceEnd"
  /** The execution was last written with later outbox seqs (another process's block, the seed). */
  | "outboxWatermark"
  /** The same for spawn seqs. */
  | "spawnWatermark"
  /** The execution is in another status than this store assumed (it did not know the item). */
  | "status";

/** One clause of the execution Update's condition. */
export interface Clause {
  kind: ClauseKind;
  /** The clause's text in DynamoDB's condition syntax. */
  expression: string;
  /** The attribute names it reads (`#alias` → name). */
  names: Readonly<Record<string, string>>;
  /** The values it reads (`:alias` → value). */
  values: Item;
  /** Whether this clause is false on `old`, the item DynamoDB found (`undefined`: no item). */
  fails(old: Item | undefined): boolean;
}

/** What the condition of a commit depends on. */
export interface ConditionInput {
  /** The version the commit expects (0: an insert). */
  expected: number;
  /** The commit's time, epoch seconds. */
  now: number;
  outbox: SeqRun;
  spawns: SeqRun;
  /** Where the trace ring ends, for a traced commit. */
  head: TraceHead | undefined;
  /**
   * The status index partition the commit leaves the execution in, when the store does not
   * know the stored one: the commit requires it (or none) to be stored already.
   */
  statusKept?: string;
}

/** An attribute's number, or NaN when it holds none (absent, or another type). */
const numberOf = (item: Item | undefined, name: string): number => {
  const text = item?.[name]?.N;
  return text === undefined ? NaN : Number(text);
};

/**
 * The clauses of a commit's condition, in the order a refusal is told by: the version (or, for
 * an insert, that nothing live is in the way) and retention first, then the trace ring's end,
 * the status the commit assumed, then the seq watermarks.
 */
export function commitClauses(
  { expected, now, outbox, spawns, head, statusKept }: ConditionInput,
): Clause[] {
  const clauses: Clause[] = [];
  if (expected === 0) {
    // An insert: no item, or an expired one (absent to every read) it may replace.
    clauses.push({
      kind: "version",
      expression: ABSENT,
      names: NAMES.absent,
      values: { ":now": N(now) },
      fails: (old) => old !== undefined && !isExpired(old, now),
    });
  } else {
    clauses.push({
      kind: "version",
      expression: "#v = :ov",
      names: NAMES.version,
      values: { ":ov": N(expected) },
      fails: (old) => numberOf(old, EXECUTION.version) !== expected,
    }, {
      // The same rule as every read's (isExpired): an expired execution is absent.
      kind: "version",
      expression: ALIVE,
      names: NAMES.alive,
      values: livenessValues(now),
      fails: (old) => old !== undefined && isExpired(old, now),
    });
  }
  if (head?.cached) {
    const last = head.last;
    clauses.push({
      kind: "traceEnd",
      expression: "#te = :tc",
      names: NAMES.traceEnd,
      values: { ":tc": N(last) },
      fails: (old) => numberOf(old, EXECUTION.traceEnd) !== last,
    });
  }
  if (statusKept !== undefined) {
    // Kept in place (its time too) only when it stays in its status; else built again to move.
    clauses.push({
      kind: "status",
      expression: "(attribute_not_exists(#ss) OR #ss = :ssk)",
      names: NAMES.status,
      values: { ":ssk": { S: statusKept } },
      fails: (old) => {
        const stored = old?.[EXECUTION.statusShard]?.S;
        return stored !== undefined && stored !== statusKept;
      },
    });
  }
  // Per-execution seq order across processes: each execution remembers its highest seq, and
  // a commit must bring higher ones (or a block reserved after it saw that item).
  if (expected !== 0 && !outbox.fresh && outbox.seqs.length > 0) {
    const first = outbox.seqs[0]!;
    clauses.push({
      kind: "outboxWatermark",
      expression: "#oh < :ohf",
      names: NAMES.outboxWatermark,
      values: { ":ohf": N(first) },
      fails: (old) => !(numberOf(old, EXECUTION.outboxHwm) < first),
    });
  }
  if (expected !== 0 && !spawns.fresh && spawns.seqs.length > 0) {
    const first = spawns.seqs[0]!;
    clauses.push({
      kind: "spawnWatermark",
      expression: "#sh < :shf",
      names: NAMES.spawnWatermark,
      values: { ":shf": N(first) },
      fails: (old) => !(numberOf(old, EXECUTION.spawnHwm) < first),
    });
  }
  return clauses;
}

/** The names each clause reads (shared: a clause's names are never written to). */
const NAMES = {
  absent: { "#id": EXECUTION.id, "#ttl": EXECUTION.ttl },
  version: { "#v": EXECUTION.version },
  alive: { "#ttl": EXECUTION.ttl },
  traceEnd: { "#te": EXECUTION.traceEnd },
  outboxWatermark: { "#oh": EXECUTION.outboxHwm },
  spawnWatermark: { "#sh": EXECUTION.spawnHwm },
  status: { "#ss": EXECUTION.statusShard },
} as const satisfies Record<string, Record<string, string>>;

/** The clauses as one ConditionExpression, with the names and values they read. */
export function conditionOf(
  clauses: readonly Clause[],
): { expression: string; names: Record<string, string>; values: Item } {
  const names: Record<string, string> = {};
  const values: Item = {};
  let expression = "";
  for (const clause of clauses) {
    Object.assign(names, clause.names);
    Object.assign(values, clause.values);
    expression += expression === "" ? clause.expression : ` AND ${clause.expression}`;
  }
  return { expression, names, values };
}

/** Why the execution item's condition failed (see {@linkcode refusalOf}). */
export type ExecutionRefusal =
  /** The stored version is not the expected one (or the item exists for an insert): a lost race. */
  | { reason: "version"; found: number | null }
  /** A trace step was appended outside a commit since this store cached the ring's end. */
  | { reason: "traceEnd" }
  /** The execution is in another status than the commit assumed: its index entry must move. */
  | { reason: "status" }
  /** The execution was last written with later seqs (another process's block, or the seed). */
  | { reason: "watermark"; outbox: boolean; spawns: boolean };

/**
 * Why a commit's condition failed, told from the item DynamoDB found (`ALL_OLD`) by the clauses
 * that are false on it, in the list's order: a lost race first, then a stale ring end, then a
 * status that moved, then stale watermarks (both told at once). A refusal no clause explains is a lost race.
 */
export function refusalOf(
  clauses: readonly Clause[],
  old: Item | undefined,
  now: number,
): ExecutionRefusal {
  // An expired item is absent: a commit refused by it lost to nobody.
  const live = old !== undefined && !isExpired(old, now) ? old : undefined;
  const version = numberOf(live, EXECUTION.version);
  const found = Number.isNaN(version) ? null : version;
  const failed = new Set(clauses.filter((clause) => clause.fails(old)).map((c) => c.kind));
  if (failed.has("version")) return { reason: "version", found };
  if (failed.has("traceEnd")) return { reason: "traceEnd" };
  if (failed.has("status")) return { reason: "status" };
  const outbox = failed.has("outboxWatermark"), spawns = failed.has("spawnWatermark");
  return outbox || spawns ? { reason: "watermark", outbox, spawns } : { reason: "version", found };
}
