// Reading the status index, the latest to enter a status first: a walk merges the shards lazily,
// so a page reads about `limit` entries plus a small page per shard. The entries only name
// candidates: the items, read by key, decide.
import { WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { QueryCommand, type QueryCommandOutput } from "@aws-sdk/client-dynamodb";
import {
  batchGet,
  chunks,
  eachConcurrently,
  isNamed,
  type Item,
  N,
  S,
} from "../../dynamo/_dynamo.ts";
import { IndexNotFound } from "../../dynamo/tables.ts";
import { InvalidCursor } from "../../core/errors.ts";
import { encodeCursor } from "../../core/cursor.ts";
import { EXECUTION } from "../../core/_layout.ts";
import type { ExecutionSummary } from "../../core/documents.ts";
import type { ListPage, UnreadableExecutionRow } from "../../core/types.ts";
import type { Listing, Selection } from "./_listing.ts";
import type { ExecutionReads } from "./_execution_reads.ts";
import { isExpired, secondsOf } from "../commit/_retention.ts";
import { STATUS_INDEX, STATUS_SHARDS } from "./_status_index.ts";
import { apart, rowOfItem, takes } from "./_summaries.ts";
import { withSignal } from "../../dynamo/_abortable.ts";

/** The largest page a partition is read in: pages double from a small first one up to this. */
const MAX_PAGE = 1000;

/** One index partition (`"{status}#{shard}"`) as a walk reads it. */
interface Partition {
  key: string;
  /** Entries read and not yet taken, newest first. */
  buffer: Item[];
  /** Where the next Query starts (DynamoDB's LastEvaluatedKey), if it was cut. */
  next: Item | undefined;
  /** Nothing more to read. */
  done: boolean;
  /** What a cursor resumes after: the last entry taken, or the page end; undefined: the top. */
  resume: Item | undefined;
  pageSize: number;
}

/** A cursor's position: per partition, the `[status_at, id]` it resumes after, or 0 (done). */
type Position = Record<string, [string, string] | 0>;

/**
 * The entries of the index partitions of `selection`'s statuses, newest first, from `after` (a
 * position of {@linkcode IndexWalk.position}). `firstPage` sizes each partition's first Query.
 */
export class IndexWalk {
  readonly #partitions: Partition[];
  /** Index entries the Queries evaluated (filtered ones included), and items read for them. */
  #examined = 0;
  /** Whether the walk stopped at its budget, before the partitions' ends. */
  stopped = false;

  /**
   * `budget`: the most rows it reads; past it, `next()` answers undefined (`stopped`). The first
   * round of reads is always made, so each walk moves on.
   */
  constructor(
    private readonly reads: ExecutionReads,
    private readonly selection: Selection,
    after: unknown,
    firstPage: number,
    private readonly budget = Infinity,
  ) {
    const keys = selection.statuses!.flatMap((status) =>
      Array.from({ length: STATUS_SHARDS }, (_, shard) => `${status}#${shard}`)
    );
    const position = checkPosition(after, keys);
    this.#partitions = keys.map((key) => {
      const at = position[key];
      const resume = at === undefined || at === 0 ? undefined : {
        [EXECUTION.id]: S(at[1]),
        [EXECUTION.statusShard]: S(key),
        [EXECUTION.statusAt]: { N: at[0] },
      };
      return { key, buffer: [], next: resume, done: at === 0, resume, pageSize: firstPage };
    });
  }

  /** The next entry, newest first; undefined when every partition is read. */
  async next(): Promise<Item | undefined> {
    for (;;) {
      const waiting = this.#partitions.filter((p) => !p.done && p.buffer.length === 0);
      if (waiting.length === 0) break;
      const left = this.budget - this.#examined;
      // A budget too small to read one entry of each waiting partition is spent.
      if (this.#examined > 0 && left < waiting.length) {
        this.stopped = true;
        return undefined;
      }
      const share = Math.max(1, Math.floor(left / waiting.length));
      await eachConcurrently(waiting, WRITES_IN_FLIGHT, (p) => this.#read(p, share));
    }
    let newest: Partition | undefined;
    for (const p of this.#partitions) {
      if (p.buffer.length > 0 && (!newest || newer(p.buffer[0]!, newest.buffer[0]!))) newest = p;
    }
    if (!newest) return undefined;
    const entry = newest.buffer.shift()!;
    if (newest.buffer.length > 0) newest.resume = entry;
    else {
      newest.resume = newest.next;
      newest.done = newest.next === undefined;
    }
    return entry;
  }

  /** Counts `n` rows read for the walk's entries (their items, by key) against its budget. */
  spend(n: number): void {
    this.#examined += n;
  }

  /** Whether every partition is read to its end. */
  get finished(): boolean {
    return this.#partitions.every((p) => p.done);
  }

  /** Where a next page resumes: per partition that moved, after what (or 0: read to its end). */
  position(): Position {
    const position: Position = {};
    for (const p of this.#partitions) {
      if (p.done) position[p.key] = 0;
      else if (p.resume) {
        position[p.key] = [p.resume[EXECUTION.statusAt]!.N!, p.resume[EXECUTION.id]!.S!];
      }
    }
    return position;
  }

  async #read(p: Partition, share: number): Promise<void> {
    const { selection, reads } = this;
    const names: Record<string, string> = { "#ss": EXECUTION.statusShard };
    const values: Item = { ":ss": S(p.key) };
    let condition = "#ss = :ss";
    if (selection.updatedBefore !== null && !selection.includeUndated) {
      names["#sa"] = EXECUTION.statusAt;
      // An execution last committed before a time entered its status before it too: the
      // entries before it are the candidates, and each item's `updated_at` decides.
      condition += " AND #sa < :before";
      values[":before"] = N(selection.updatedBefore);
    }
    let filter: string | undefined;
    if (selection.definitionId !== undefined) {
      filter = "#def = :def";
      names["#def"] = EXECUTION.definitionId;
      values[":def"] = S(selection.definitionId);
    }
    const page = await queryStatusIndex(
      reads,
      new QueryCommand({
        TableName: reads.tables.executions.name,
        IndexName: STATUS_INDEX.name,
        KeyConditionExpression: condition,
        FilterExpression: filter,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ScanIndexForward: false,
        Limit: Math.min(p.pageSize, share),
        ExclusiveStartKey: p.next,
      }),
    );
    this.#examined += page.ScannedCount ?? page.Items?.length ?? 0;
    p.pageSize = Math.min(p.pageSize * 2, MAX_PAGE);
    p.buffer = page.Items ?? [];
    p.next = page.LastEvaluatedKey;
    // Nothing of an empty page is needed (filtered out): a cursor resumes after it.
    if (p.buffer.length === 0) {
      p.resume = p.next ?? p.resume;
      p.done = p.next === undefined;
    }
  }
}

/** Newest first; at one time, the higher id first (any fixed order would do). */
function newer(a: Item, b: Item): boolean {
  const at = Number(a[EXECUTION.statusAt]?.N), bt = Number(b[EXECUTION.statusAt]?.N);
  return at !== bt ? at > bt : (a[EXECUTION.id]?.S ?? "") > (b[EXECUTION.id]?.S ?? "");
}

/** A cursor's position, checked against the walk's partitions; InvalidCursor otherwise. */
function checkPosition(after: unknown, keys: string[]): Position {
  if (after === null || after === undefined) return {};
  const bad = (why: string) => new InvalidCursor(`its position ${why}`);
  if (typeof after !== "object" || Array.isArray(after)) throw bad("is not a map of partitions");
  for (const [key, at] of Object.entries(after)) {
    if (!keys.includes(key)) throw bad(`names an unknown partition ${JSON.stringify(key)}`);
    if (at === 0) continue;
    if (
      !Array.isArray(at) || at.length !== 2 || typeof at[0] !== "string" ||
      !/^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(at[0]) || typeof at[1] !== "string" ||
      at[1].length === 0 || at[1].length > 2048
    ) throw bad(`of ${JSON.stringify(key)} is not [status_at, id]`);
  }
  return after as Position;
}

/** One Query of the status index; a table without it (or still building it) is IndexNotFound. */
export async function queryStatusIndex(
  reads: ExecutionReads,
  query: QueryCommand,
): Promise<QueryCommandOutput> {
  try {
    return await reads.client.send(query);
  } catch (error) {
    if (!isNamed(error, "ValidationException")) throw error;
    const text = String(error);
    const building = /backfilling/i.test(text);
    if (!building && !/specified index/i.test(text)) throw error;
    throw new IndexNotFound(
      reads.tables.executions.name,
      STATUS_INDEX.name,
      building
        ? "DynamoDB is still building it: ensureTables() returns once it is ready"
        : "run ensureTables() once (it adds the index), or list with { scan: true } (a full scan)",
      { cause: error },
    );
  }
}

/** How many index entries a page reads the items of at once (BatchGetItem takes 100 keys). */
const ITEMS_AT_ONCE = 100;

/**
 * The items of index entries, read by key, in the entries' order: undefined for an entry that is
 * no longer current (a ghost of a lagging index). An item another writer took out still counts.
 */
export async function entryItems(
  reads: ExecutionReads,
  entries: Item[],
): Promise<(Item | undefined)[]> {
  const found = new Map<string, Item>();
  const table = reads.tables.executions.name;
  for (const run of chunks(entries, ITEMS_AT_ONCE)) {
    const keys = [...new Set(run.map((entry) => entry[EXECUTION.id]!.S!))].map((id) => ({
      [EXECUTION.id]: S(id),
    }));
    await batchGet(reads.client, {
      [table]: { Keys: keys, ConsistentRead: reads.consistent },
    }, (responses) => {
      for (const item of responses[table] ?? []) found.set(item[EXECUTION.id]!.S!, item);
    });
  }
  return entries.map((entry) => {
    const item = found.get(entry[EXECUTION.id]!.S!);
    const stored = item?.[EXECUTION.statusShard]?.S;
    return stored === undefined || stored === entry[EXECUTION.statusShard]?.S ? item : undefined;
  });
}

/** One page of `listing` from the status index: at most `maxExamined` rows read. */
export async function indexPage(given: ExecutionReads, listing: Listing): Promise<ListPage> {
  const reads = withSignal(given, listing.signal);
  const partitions = listing.statuses!.length * STATUS_SHARDS;
  const walk = new IndexWalk(
    reads,
    listing,
    listing.after,
    Math.ceil(listing.limit / partitions) + 1,
    listing.maxExamined,
  );
  const now = secondsOf(reads.now);
  const items: ExecutionSummary[] = [];
  const unreadable: UnreadableExecutionRow[] = [];
  const rows = () => items.length + unreadable.length;
  for (;;) {
    // Each entry yields at most one row: reading as many as are missing never overshoots.
    const entries: Item[] = [];
    while (entries.length < listing.limit - rows()) {
      const entry = await walk.next();
      if (entry === undefined) break;
      entries.push(entry);
    }
    const found = await entryItems(reads, entries);
    walk.spend(entries.length);
    for (const item of found) {
      if (item === undefined || isExpired(item, now)) continue;
      const row = rowOfItem(item);
      if (!takes(listing, item, row)) continue;
      if ("summary" in row) items.push(row.summary);
      else unreadable.push(row.unreadable);
    }
    if (rows() === listing.limit || walk.stopped) break;
    if (entries.length === 0 || walk.finished) {
      return { items, nextCursor: null, ...apart(unreadable) };
    }
  }
  const table = reads.tables.executions.name;
  return {
    items,
    nextCursor: walk.finished ? null : encodeCursor(table, listing.query, walk.position()),
    ...apart(unreadable),
  };
}
