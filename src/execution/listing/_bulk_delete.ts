// deleteExecutions: every execution a selection names, retired first, so that a run that stops
// half-way leaves each execution findable until the next run finishes it.
import { ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { eachConcurrently, type Item, pages, S } from "../../dynamo/_dynamo.ts";
import { EXECUTION } from "../../core/_layout.ts";
import type { DeleteExecutionsOptions } from "../../core/operator_types.ts";
import type { Resends } from "../../dynamo/_lost_answers.ts";
import type { ExecutionReads } from "./_execution_reads.ts";
import type { Selection } from "./_listing.ts";
import { entryItems, IndexWalk } from "./_status_listing.ts";
import { rowOfItem } from "./_summaries.ts";
import { retireExecution } from "./_delete_execution.ts";

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
 * Removes every execution `selection` names still at the version it was selected at, in batches:
 * how many. Retired or expired ones that still match are finished uncounted.
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
    // After a failure no lane starts another, and the call throws once the started ones settle:
    // nothing goes on behind the caller's back.
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

/** An item's candidate, when the selection takes it (never an unreadable one). */
function take(selection: Selection, item: Item): Candidate[] {
  const row = rowOfItem(item);
  return "summary" in row && selection.matches(row.summary)
    ? [{ id: row.summary.id, version: row.summary.version }]
    : [];
}

/** The executions the index names that the selection takes, read by key a batch at a time. */
async function* fromIndex(reads: ExecutionReads, selection: Selection) {
  const walk = new IndexWalk(reads, selection, null, FIRST_PAGE);
  for (;;) {
    const entries: Item[] = [];
    for (let entry; entries.length < BATCH && (entry = await walk.next());) entries.push(entry);
    if (entries.length === 0) return;
    for (const item of await entryItems(reads, entries)) {
      if (item) yield* take(selection, item);
    }
  }
}

/** The table's items the selection takes, by a scan (every page; the documents are read). */
async function* fromScan(reads: ExecutionReads, selection: Selection) {
  const names: Record<string, string> = {
    "#id": EXECUTION.id,
    "#d": EXECUTION.data,
    "#v": EXECUTION.version,
    "#ttl": EXECUTION.ttl,
    "#ua": EXECUTION.updatedAt,
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
        ProjectionExpression: "#id, #d, #v, #ttl, #ua",
        ExpressionAttributeNames: names,
        ...definition,
        ConsistentRead: reads.consistent,
        ExclusiveStartKey: start,
      }),
    );
  for await (const page of pages(scan)) {
    for (const item of page.Items ?? []) yield* take(selection, item);
  }
}
