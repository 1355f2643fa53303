// What every relay queue's reads share: what they need of a store, and how a queue item reads
// (a timer, a due time, a created time, a row no reader can use).
import { plainMap } from "../../core/_attributes.ts";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { Item } from "../../dynamo/_dynamo.ts";
import type { Resends } from "../../dynamo/_lost_answers.ts";
import type { Lru } from "../../core/_lru.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import type { ExecutionTables } from "../../core/table_specs.ts";
import type { RelayKey, RelayKind, UnreadableRow } from "../../core/types.ts";

/** What the relay reads need of a store. */
export interface QueueContext {
  /** The store's client (gated by its ownership). */
  client: DynamoDBSender;
  tables: ExecutionTables;
  /**
   * What a store built with `otherWriters: true` runs for the writers that keep none of this
   * module's attributes (src/execution/other_writers/); absent on a default store.
   */
  otherWriters?: QueueOtherWriters;
  /** How an operator's one-item transaction is re-sent (lost answers, conflicts). */
  resends: Resends;
  /** The store's clock, epoch milliseconds. */
  now: () => number;
  /**
   * Heads of held targets this store handed out for delivery (seq → its target key and stored
   * seq): an acknowledgement of one releases its target.
   */
  headsOut: Lru<number, { target: string; id: string; mark?: string }>;
  /**
   * The other entries this store handed out for delivery (seq → its target key): a concurrent
   * pass may make one a head (its delivery failed there) before this store acknowledges it, and
   * the acknowledgement then releases its target (see `releaseBecameHeads`).
   */
  handedOut: Lru<number, string>;
}

/**
 * The other writers' part as the relay queues call it: a round of `kind`'s table feed (its
 * stream), under the feed's lease (another store holding it: no round, at once), which adopts
 * other writers' rows into the relay index (outbox entries chained: core/_feed_chain.ts). The
 * rows it adopted, as the index shows them once adopted, so that a pass in the same call offers
 * them whatever the index shows yet (each is read again by key before anything is decided).
 */
export interface QueueOtherWriters {
  round(q: QueueContext, kind: RelayKind): Promise<Item[]>;
  /**
   * Whether the outbox feed chains entries (its table has a stream, and a Streams client): then
   * a pass holds back an entry with no `prev_seq` until the feed chained it.
   */
  chaining(): boolean;
}

export function numberOf(value: AttributeValue | undefined): number | undefined {
  if (value?.N === undefined) return undefined;
  const n = Number(value.N);
  return Number.isFinite(n) ? n : undefined;
}

export function earliest(a: number | null, b: number | null | undefined): number | null {
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

export function unreadableRow<K extends RelayKind>(
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

/** A stored item as an operator sees it (numbers that a double cannot hold stay their text). */
export function plain(item: Item): Record<string, unknown> {
  return plainMap(item, {}, true);
}
