// Reads of the relay index (_relay_index.ts): one partition a page at a time, and the partitions of
// one state merged lazily, lowest order first: a pass reads about as many index entries as it
// takes, never a whole partition, never the table.
import {
  type AttributeValue,
  QueryCommand,
  type QueryCommandOutput,
} from "@aws-sdk/client-dynamodb";
import { isNamed, type Item, N } from "../../core/_attributes.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import { IndexNotFound } from "../../dynamo/tables.ts";
import { OUTBOX, RELAY, TIMER } from "../../core/_layout.ts";
import { type Part, partition, RELAY_INDEX, RELAY_SHARDS } from "./_relay_index.ts";

/** What to read of one partition: its name and, optionally, the highest order wanted. */
export interface PartitionQuery {
  /** The partition, e.g. `p3`. */
  part: string;
  /** Only rows ordered at or below this (due by now). */
  upTo?: number;
  /** Only rows ordered strictly below this (a stored number). */
  below?: AttributeValue;
}

/** One page of a partition, from `start`, at most `limit` index entries (all: a 1 MB page). */
export async function queryPartition(
  client: DynamoDBSender,
  table: string,
  query: PartitionQuery,
  limit: number | undefined,
  start: Item | undefined,
): Promise<QueryCommandOutput> {
  const values: Item = { ":p": { S: query.part } };
  let condition = "#p = :p";
  if (query.upTo !== undefined) {
    values[":o"] = N(query.upTo);
    condition += " AND #o <= :o";
  } else if (query.below !== undefined) {
    values[":o"] = query.below;
    condition += " AND #o < :o";
  }
  try {
    return await client.send(
      new QueryCommand({
        TableName: table,
        IndexName: RELAY_INDEX.name,
        KeyConditionExpression: condition,
        ExpressionAttributeNames: query.upTo === undefined && query.below === undefined
          ? { "#p": RELAY.part }
          : { "#p": RELAY.part, "#o": RELAY.order },
        ExpressionAttributeValues: values,
        // DynamoDB refuses a Limit past 32 bits.
        Limit: limit === undefined ? undefined : Math.min(limit, 10_000),
        ExclusiveStartKey: start,
      }),
    );
  } catch (error) {
    if (!(isNamed(error, "ValidationException") && /specified index/.test(String(error)))) {
      throw error;
    }
    throw new IndexNotFound(
      table,
      RELAY_INDEX.name,
      "run ensureTables() once (it adds the relay index and adopts the rows already there)",
      { cause: error },
    );
  }
}

/** Rows in index order: by `relay_order`, then by key (seq; a timer's execution and path). */
export function byIndexOrder(a: Item, b: Item): number {
  const order = Number(a[RELAY.order]?.N) - Number(b[RELAY.order]?.N);
  if (order !== 0 && !Number.isNaN(order)) return order;
  return compareText(keyText(a), keyText(b));
}

function keyText(item: Item): string {
  const seq = item[OUTBOX.seq]?.N;
  if (seq !== undefined) return seq.padStart(40, "0");
  return `${item[TIMER.executionId]?.S ?? ""}\u0000${item[TIMER.path]?.S ?? ""}`;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One partition's rows as a merge reads them: a page buffered, the next page on demand. */
interface Stream {
  query: PartitionQuery;
  buffer: Item[];
  start: Item | undefined;
  done: boolean;
}

/**
 * The rows of every shard of one state, merged lowest order first, a page per partition read
 * only when the merge needs it: n rows read about n + shards × pageSize index entries.
 */
export class MergedPartitions {
  readonly #streams: Stream[];
  /** The rows handed out, by key: a row found both by key and in the index goes once. */
  readonly #given = new Set<string>();
  /** Index entries read so far (what DynamoDB charges a Query by). */
  read = 0;

  /**
   * `bound.upTo`: only rows ordered at or below it. `bound.extra`: rows found by key (adopted,
   * maybe not in the index yet), lowest order first, merged in as if the index had them.
   */
  constructor(
    readonly client: DynamoDBSender,
    readonly table: string,
    part: Exclude<Part, "h">,
    readonly pageSize: number | undefined,
    bound: { upTo?: number; extra?: Item[] } = {},
  ) {
    const { extra, ...upTo } = bound;
    this.#streams = Array.from({ length: RELAY_SHARDS }, (_, shard) => ({
      query: { part: partition(part, shard), ...upTo },
      buffer: [],
      start: undefined,
      done: false,
    }));
    if (extra?.length) {
      this.#streams.push({ query: { part: "" }, buffer: [...extra], start: undefined, done: true });
    }
  }

  /** The next row, or undefined when every partition is exhausted. */
  async next(): Promise<Item | undefined> {
    for (;;) {
      await Promise.all(
        this.#streams.filter((s) => s.buffer.length === 0 && !s.done).map((s) => this.#fill(s)),
      );
      let best: Stream | undefined;
      for (const stream of this.#streams) {
        const head = stream.buffer[0];
        if (
          head !== undefined && (best === undefined || byIndexOrder(head, best.buffer[0]!) < 0)
        ) best = stream;
      }
      const row = best?.buffer.shift();
      if (row === undefined) return undefined;
      // A row once per place: a row found by key and in the index goes once.
      const place = `${keyText(row)}@${row[RELAY.order]?.N}`;
      if (this.#given.has(place)) continue;
      this.#given.add(place);
      return row;
    }
  }

  /** Reads the next non-empty page of a partition (or learns it is exhausted). */
  async #fill(stream: Stream): Promise<void> {
    while (stream.buffer.length === 0 && !stream.done) {
      const page = await queryPartition(
        this.client,
        this.table,
        stream.query,
        this.pageSize,
        stream.start,
      );
      stream.buffer = page.Items ?? [];
      this.read += stream.buffer.length;
      stream.start = page.LastEvaluatedKey;
      stream.done = stream.start === undefined;
    }
  }
}

/** The page size a merge of `limit` rows reads each partition with (all: 1 MB pages). */
export function mergePage(limit: number): number | undefined {
  if (limit === Infinity) return undefined;
  return Math.max(10, Math.min(1000, Math.ceil(limit / RELAY_SHARDS) + 1));
}
