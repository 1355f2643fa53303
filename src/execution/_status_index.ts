// The executions table's status index (#25): which shard an execution is written to, what a
// commit writes for the index, and how an index entry is read back. Private: the wire format is
// the attributes `status_shard` (S, `"{status}#{shard}"`), `updated_at` (N, epoch seconds) and
// `summary` (S, JSON) on the execution item, described in docs/design.md.
import type { Item } from "../core/_attributes.ts";
import { EXECUTION } from "../core/_layout.ts";
import {
  type Execution,
  type ExecutionSummary,
  type Status,
  STATUSES,
  summarize,
} from "../core/documents.ts";
import { fnv1a } from "../core/_fnv1a.ts";

/**
 * The global secondary index on the executions table: `status_shard` (HASH) + `updated_at`
 * (RANGE), projecting what a page of summaries needs (and the `version` and `ttl` that tell a
 * stale or expired entry), so that listing reads the index alone.
 */
export const STATUS_INDEX = {
  name: "status_shard-updated_at",
  hash: [EXECUTION.statusShard, "S"],
  range: [EXECUTION.updatedAt, "N"],
  include: [EXECUTION.summary, EXECUTION.version, EXECUTION.ttl, EXECUTION.definitionId],
} as const;

/**
 * How many shards each status spreads over. Part of the wire format: every writer and reader of
 * a table must agree, so it is no option. An index partition key takes about 1,000 writes/s and
 * a commit costs it two (the entry moves to its new `updated_at`): 16 shards carry about 8,000
 * commits per second of one status; a listing pays one Query per shard.
 */
export const STATUS_SHARDS = 16;

/** The index partition of an execution in `status`: its id's shard, fixed for its life. */
export function statusKey(status: Status, id: string): string {
  return `${status}#${fnv1a(id) % STATUS_SHARDS}`;
}

/** The summary a commit stores (`summary`): the document's, at the version the commit writes. */
export function summaryJson(exe: Execution, version: number): string {
  const { updated_at: _, ...summary } = summarize(exe);
  summary.version = version; // in its place: the text is the same as of a copy at `version`
  return JSON.stringify(summary);
}

/**
 * The summary an item (or index entry) holds, with `updated_at`, when it is the summary of the
 * item's current version; `null` when it is not: the item was last written by another writer
 * (an older version of this module keeps the old `summary`; the Python store drops it).
 * `retired`: an item deleteExecutions retired (it bumped the version): its summary as it was.
 */
export function storedSummary(item: Item, retired = false): ExecutionSummary | null {
  const text = item[EXECUTION.summary]?.S;
  const updatedAt = Number(item[EXECUTION.updatedAt]?.N);
  if (text === undefined || !Number.isFinite(updatedAt)) return null;
  let summary: ExecutionSummary;
  try {
    summary = JSON.parse(text);
  } catch {
    return null;
  }
  if (
    typeof summary !== "object" || summary === null || typeof summary.version !== "number" ||
    !STATUSES.includes(summary.status)
  ) return null;
  const stored = Number(item[EXECUTION.version]?.N);
  const current = summary.version === stored || (retired && summary.version === stored - 1);
  return current ? { ...summary, version: stored, updated_at: updatedAt } : null;
}

/** When an item was last committed by this module, epoch seconds, or `null` when unknown. */
export function lastCommitTime(item: Item): number | null {
  return storedSummary(item)?.updated_at ?? null;
}
