// deleteExecutions (#25): every execution a selection names, found through the status index (or
// a scan), removed as deleteExecution removes one — retired first, so that a run that stops
// half-way leaves each execution findable until the next run finishes it.
import { ITEM_WRITES_IN_FLIGHT } from "../core/_lanes.ts";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { eachConcurrently, type Item, pages, S } from "../dynamo/_dynamo.ts";
import { EXECUTION, executionFromItem } from "../core/_layout.ts";
import { type ExecutionSummary, summarize } from "../core/documents.ts";
import type { DeleteExecutionsOptions } from "../core/operator_types.ts";
import type { Resends } from "../dynamo/_lost_answers.ts";
import type { ExecutionReads } from "./_execution_reads.ts";
import type { Selection } from "./_listing.ts";
import { isExpired, secondsOf } from "./_retention.ts";
import { lastCommitTime, storedSummary } from "./_status_index.ts";
import { entrySummary, IndexWalk } from "./_status_listing.ts";
import { isRetired, retireExecution } from "./_delete_execution.ts";

/** Executions examined per batch (progress is reported after each). */
const BATCH = 25;

/** The first page of each index partition a run reads; pages double from there. */
const FIRST_PAGE = 100;

/** An execution to remove, at the version it was selected at. */
interface Candidate {
  id: string;
  version: number;
}

/**
 * Removes every execution `selection` names, in batches, and resolves to how many this run
 * removed. Each goes only if it is still at the version it was selected at (a commit since
 * keeps it). Retired or expired ones that still match are finished (their leftovers swept)
 * without being counted again.
 */
export async function deleteSelected(
  reads: ExecutionReads,
  selection: Selection & Pick<DeleteExecutionsOptions, "onProgress" | "signal">,
  resends: Resends,
): Promise<number> {
  const started = performance.now();
  let deleted = 0, examined = 0;
  const candidates = selection.indexed ? fromIndex(reads, selection) : fromScan(reads, selection);
  let batch: Candidate[] = [];
  const flush = async () => {
    // After a failure no lane starts another execution, and the call throws once the started
    // ones have settled: nothing of this run goes on behind the caller's back.
    let failed: { error: unknown } | undefined;
    await eachConcurrently(batch, ITEM_WRITES_IN_FLIGHT, async ({ id, version }) => {
      try {
        if (await retireExecution(reads, id, version, resends)) deleted++;
      } catch (error) {
        failed ??= { error };
      }
    }, () => failed !== undefined);
    if (failed) throw failed.error;
    examined += batch.length;
    batch = [];
    selection.onProgress?.({ deleted, examined, elapsedMs: performance.now() - started });
  };
  for await (const candidate of candidates) {
    if (selection.signal?.aborted) return deleted;
    batch.push(candidate);
    if (batch.length === BATCH) await flush();
  }
  if (!selection.signal?.aborted) await flush();
  return deleted;
}

/** A summary's candidate, when the selection takes it. */
function take(selection: Selection, summary: ExecutionSummary | null): Candidate[] {
  return summary && selection.matches(summary)
    ? [{ id: summary.id, version: summary.version }]
    : [];
}

/**
 * The index entries the selection takes: live ones by their summary (a stale one read from the
 * table), and retired or expired ones whose stored summary still matches (to finish them).
 */
async function* fromIndex(reads: ExecutionReads, selection: Selection) {
  const walk = new IndexWalk(reads, selection, null, FIRST_PAGE);
  const now = secondsOf(reads.now);
  for (let entry = await walk.next(); entry; entry = await walk.next()) {
    const summary = isExpired(entry, now)
      ? storedSummary(entry, isRetired(entry))
      : await entrySummary(reads, entry, now);
    yield* take(selection, summary);
  }
}

/** The table's items the selection takes, by a scan (every page; the documents are read). */
async function* fromScan(reads: ExecutionReads, selection: Selection) {
  const names: Record<string, string> = {
    "#d": EXECUTION.data,
    "#v": EXECUTION.version,
    "#ttl": EXECUTION.ttl,
    "#ua": EXECUTION.updatedAt,
    "#sm": EXECUTION.summary,
  };
  const definition = selection.definitionId === undefined ? {} : {
    FilterExpression: "#def = :def",
    ExpressionAttributeValues: { ":def": S(selection.definitionId) },
  };
  if (selection.definitionId !== undefined) names["#def"] = EXECUTION.definitionId;
  const scan = (start: Item | undefined) =>
    reads.client.send(
      new ScanCommand({
        TableName: reads.tables.executions.name,
        ProjectionExpression: "#d, #v, #ttl, #ua, #sm",
        ExpressionAttributeNames: names,
        ...definition,
        ConsistentRead: reads.consistent,
        ExclusiveStartKey: start,
      }),
    );
  for await (const page of pages(scan)) {
    for (const item of page.Items ?? []) {
      // A retired item is taken as it was when retired (an interrupted run's: to finish it).
      const stored = isRetired(item) ? storedSummary(item, true) : null;
      const exe = executionFromItem(item);
      // The item's version (not the document's) guards the removal.
      const version = Number(item[EXECUTION.version]?.N);
      const summary = stored ?? { ...summarize(exe, lastCommitTime(item)), version };
      yield* take(selection, summary);
    }
  }
}
