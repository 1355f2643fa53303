// The execution store's reads of single items, and a page of the executions listing. Input is
// checked by the caller.
import { GetItemCommand, ScanCommand, type ScanCommandInput } from "@aws-sdk/client-dynamodb";
import { batchGet, type Item, pages, S } from "../../dynamo/_dynamo.ts";
import { cursorId, encodeCursor } from "../../core/cursor.ts";
import type { Listing } from "./_listing.ts";
import type { Execution, ExecutionSummary } from "../../core/documents.ts";
import type { ExecutionTables } from "../../dynamo/tables.ts";
import type { Reads } from "../queue/_seq_deletes.ts";
import type { ChainCache } from "../commit/_outbox_chain.ts";
import {
  EXECUTION,
  executionFromItem,
  executionKey,
  isLiveMark,
  processedKey,
} from "../../core/_layout.ts";
import type { ListPage, LoadForEventResult, UnreadableExecutionRow } from "../../core/types.ts";
import { isExpired, secondsOf } from "../commit/_retention.ts";
import type { StatusCache } from "./_status_index.ts";
import { apart, rowOfItem, takes } from "./_summaries.ts";
import { withSignal } from "../../dynamo/_abortable.ts";

/** Remembers what a read execution item holds, for this store's next commit of it. */
function sawItem(reads: ExecutionReads, id: string, item: Item | undefined): void {
  reads.chains.sawItem(id, item);
  reads.statuses.sawItem(id, item);
}

/** What these reads need of the store, and where it keeps what a read saw for its next commit. */
export interface ExecutionReads extends Reads {
  readonly tables: ExecutionTables;
  readonly chains: ChainCache;
  readonly statuses: StatusCache;
  /** Epoch milliseconds: an execution past its `ttl` or an expired mark reads as absent. */
  readonly now: () => number;
  /** Told of each execution item read whole: says when another writer committed it last. */
  readonly sharing: SharedTables;
}

/** What a store without `otherWriters: true` says, once, on reading another writer's commit. */
export class SharedTables {
  #said: boolean;

  constructor(otherWriters: boolean) {
    this.#said = otherWriters;
  }

  /** Warns (once per store) when `item` was committed last by another writer. */
  saw(item: Item | undefined): void {
    if (this.#said || item === undefined || item[EXECUTION.updatedAt] !== undefined) return;
    this.#said = true;
    console.warn(
      `harel: execution ${JSON.stringify(item[EXECUTION.id]?.S ?? "")} was committed last by ` +
        "another writer (the Python store?), and this store was built without " +
        "`otherWriters: true`: its relay passes and sweeps do not find that writer's outbox " +
        "entries, spawns and timers, and listings by status leave out its executions. Build the " +
        "stores that share tables with another writer with `otherWriters: true` (it finds, " +
        "adopts and lists their rows: docs/operations.md); said once per store.",
    );
  }
}

/** What a load reads of an execution item: the document, its expiry, and the chains at its version. */
const LOADED = {
  ProjectionExpression: "#id, #d, #ttl, #v, #ol, #ss, #ua",
  ExpressionAttributeNames: {
    "#id": EXECUTION.id,
    "#d": EXECUTION.data,
    "#ttl": EXECUTION.ttl,
    "#v": EXECUTION.version,
    "#ol": EXECUTION.outboxLast,
    "#ss": EXECUTION.statusShard,
    "#ua": EXECUTION.updatedAt,
  },
};

/** The execution with this id, or `null` (`load`). */
export async function readExecution(
  reads: ExecutionReads,
  id: string,
): Promise<Execution | null> {
  const result = await reads.client.send(
    new GetItemCommand({
      TableName: reads.tables.executions.name,
      Key: executionKey(id),
      ...LOADED,
      ConsistentRead: reads.consistent,
    }),
  );
  const item = result.Item;
  sawItem(reads, id, item);
  reads.sharing.saw(item);
  return item && !isExpired(item, secondsOf(reads.now)) ? executionFromItem(item, id) : null;
}

/**
 * The version and outbox chains of an execution item (undefined when there is none): for a
 * commit from a version this store did not read or write itself.
 */
export async function readChains(reads: ExecutionReads, id: string): Promise<Item | undefined> {
  const result = await reads.client.send(
    new GetItemCommand({
      TableName: reads.tables.executions.name,
      Key: executionKey(id),
      ProjectionExpression: "#v, #ol, #ttl, #ss",
      ExpressionAttributeNames: {
        "#v": EXECUTION.version,
        "#ol": EXECUTION.outboxLast,
        "#ttl": EXECUTION.ttl,
        "#ss": EXECUTION.statusShard,
      },
      ConsistentRead: true,
    }),
  );
  // An expired execution is absent, for a commit as for a read.
  const item = result.Item && !isExpired(result.Item, secondsOf(reads.now))
    ? result.Item
    : undefined;
  sawItem(reads, id, item);
  return item;
}

/** The execution and whether `eventId` was already handled, in one BatchGetItem (`loadForEvent`). */
export async function readForEvent(
  reads: ExecutionReads,
  id: string,
  eventId: string,
): Promise<LoadForEventResult> {
  const { executions, processed } = reads.tables;
  const request = {
    [executions.name]: {
      Keys: [executionKey(id)],
      ...LOADED,
      ConsistentRead: reads.consistent,
    },
    [processed.name]: {
      Keys: [processedKey(id, eventId)],
      ConsistentRead: reads.consistent,
    },
  };
  let execution: Execution | null = null;
  let mark: Item | undefined;
  const now = secondsOf(reads.now);
  await batchGet(reads.client, request, (responses) => {
    const exeItem = responses[executions.name]?.[0];
    if (exeItem) sawItem(reads, id, exeItem);
    reads.sharing.saw(exeItem);
    if (exeItem && !isExpired(exeItem, now)) {
      execution = executionFromItem(exeItem, id);
    }
    mark ??= responses[processed.name]?.[0];
  });
  return { execution, processed: mark !== undefined && isLiveMark(mark, now) };
}

/** Whether execution `id` holds a live dedupe mark for `eventId` (`isProcessed`). */
export async function readProcessed(
  reads: ExecutionReads,
  id: string,
  eventId: string,
): Promise<boolean> {
  const result = await reads.client.send(
    new GetItemCommand({
      TableName: reads.tables.processed.name,
      Key: processedKey(id, eventId),
      ConsistentRead: reads.consistent,
    }),
  );
  return result.Item !== undefined && isLiveMark(result.Item, secondsOf(reads.now));
}

/** One page of the executions `listing` selects, in scan order: O(`limit`) unfiltered. */
export async function listPage(given: ExecutionReads, listing: Listing): Promise<ListPage> {
  const reads = withSignal(given, listing.signal);
  const input: ScanCommandInput = {
    TableName: reads.tables.executions.name,
    ProjectionExpression: "#id, #d, #v, #ttl, #ua, #def",
    ExpressionAttributeNames: {
      "#id": EXECUTION.id,
      "#def": EXECUTION.definitionId,
      "#d": EXECUTION.data,
      "#v": EXECUTION.version,
      "#ttl": EXECUTION.ttl,
      "#ua": EXECUTION.updatedAt,
    },
    ConsistentRead: reads.consistent,
  };
  if (listing.definitionId !== undefined) {
    input.FilterExpression = "#def = :def";
    input.ExpressionAttributeValues = { ":def": S(listing.definitionId) };
  }
  const after = listing.after === null ? undefined : { id: S(cursorId(listing.after)) };
  let pageSize = listing.limit + 1;
  let examined = 0;
  const scan = (start: Item | undefined) => {
    const Limit = Math.min(pageSize, listing.maxExamined - examined);
    pageSize = Math.min(pageSize * 2, MAX_SCAN_PAGE);
    return reads.client.send(new ScanCommand({ ...input, Limit, ExclusiveStartKey: start }));
  };
  const items: ExecutionSummary[] = [];
  const unreadable: UnreadableExecutionRow[] = [];
  const now = secondsOf(reads.now);
  const table = reads.tables.executions.name;
  for await (const page of pages(scan, after)) {
    examined += page.ScannedCount ?? page.Items?.length ?? 0;
    const found = page.Items ?? [];
    for (let i = 0; i < found.length; i++) {
      const item = found[i]!;
      if (isExpired(item, now)) continue;
      reads.sharing.saw(item);
      const row = rowOfItem(item);
      if (!takes(listing, item, row)) continue;
      if ("summary" in row) items.push(row.summary);
      else unreadable.push(row.unreadable);
      if (items.length + unreadable.length === listing.limit) {
        const more = i < found.length - 1 || page.LastEvaluatedKey !== undefined;
        // The item's key, not its document's id: the scan resumes after this item.
        const at = item[EXECUTION.id]!.S!;
        return {
          items,
          nextCursor: more ? encodeCursor(table, listing.query, at) : null,
          ...apart(unreadable),
        };
      }
    }
    const last = page.LastEvaluatedKey?.[EXECUTION.id]?.S;
    if (examined >= listing.maxExamined && last !== undefined) {
      // The budget is spent: what matched so far, and the scan goes on after what it evaluated.
      return {
        items,
        nextCursor: encodeCursor(table, listing.query, last),
        ...apart(unreadable),
      };
    }
  }
  return { items, nextCursor: null, ...apart(unreadable) };
}

/** The most items one page of a listing's scan evaluates (DynamoDB stops at 1 MB anyway). */
const MAX_SCAN_PAGE = 100_000;
