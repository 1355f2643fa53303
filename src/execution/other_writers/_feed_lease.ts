// A table feed's counters item (`feed:{kind}`; the status feed's is `status_feed`): the lease
// that lets one store at a time read the table's stream, and the checkpoint where each shard
// stands, pruned and capped when saved (_feed_checkpoint.ts).
import type { Shard } from "@aws-sdk/client-dynamodb-streams";
import {
  GetItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandOutput,
} from "@aws-sdk/client-dynamodb";
import { type DynamoDBSender, isNamed, type Item, N, S } from "../../dynamo/_dynamo.ts";
import { FEED } from "../../core/_layout.ts";
import { pruneCheckpoint } from "./_feed_checkpoint.ts";
import type { ExecutionTables } from "../../dynamo/tables.ts";

/** What a round reads and writes with. */
export interface FeedContext {
  readonly client: DynamoDBSender;
  readonly tables: ExecutionTables;
  /** Epoch milliseconds (the store's clock): the lease's time. */
  readonly now: () => number;
}

/** How long a round's lease lasts: a store that dies mid-round holds the feed that long. */
export const LEASE_SECONDS = 30;

/** The counters item of table feed `kind`. */
export function feedItemId(kind: string): string {
  return `feed:${kind}`;
}

/** Where a round starts: the feed item as the lease returned it. */
export interface FeedState {
  shards: Map<string, string>;
  /** The backfill scan's position (`{}`: the start); undefined when there is none to do. */
  backfill: Item | undefined;
  /** The shards DescribeStream showed (the checkpoint is pruned against them). */
  described?: Shard[];
}

/** Where a round of stream `arn` starts: a new stream starts with no shard read, to backfill. */
export function stateOf(item: Item, arn: string): FeedState {
  if (item[FEED.stream]?.S !== arn) return { shards: new Map(), backfill: {} };
  const shards = new Map<string, string>();
  for (const [id, seq] of Object.entries(item[FEED.shards]?.M ?? {})) {
    if (seq.S !== undefined) shards.set(id, seq.S);
  }
  const backfill = item[FEED.backfill]?.S;
  return { shards, backfill: backfill === undefined ? undefined : JSON.parse(backfill) };
}

/** The lease and checkpoint on the feed's counters item. */
export class Lease {
  #renewed = -Infinity;

  constructor(
    private readonly ctx: FeedContext,
    private readonly id: string,
    private readonly owner: string,
  ) {}

  /**
   * Takes (or renews) the lease: one conditional UpdateItem that also reads the item; the item,
   * or null when another store holds it.
   */
  async take(): Promise<Item | null> {
    const now = Math.floor(this.ctx.now() / 1000);
    let out: UpdateItemCommandOutput;
    try {
      out = await this.ctx.client.send(
        new UpdateItemCommand({
          TableName: this.ctx.tables.counters.name,
          Key: { id: S(this.id) },
          UpdateExpression: "SET #lu = :until, #o = :me",
          ConditionExpression: "attribute_not_exists(#lu) OR #lu < :now OR #o = :me",
          ExpressionAttributeNames: { "#lu": FEED.leaseUntil, "#o": FEED.owner },
          ExpressionAttributeValues: {
            ":until": N(now + LEASE_SECONDS),
            ":now": N(now),
            ":me": S(this.owner),
          },
          ReturnValues: "ALL_NEW",
        }),
      );
    } catch (error) {
      if (isNamed(error, "ConditionalCheckFailedException")) return null;
      throw error;
    }
    this.#renewed = this.ctx.now();
    return out.Attributes ?? {};
  }

  /** Renews the lease once a third of it has gone by; false: another store took it over. */
  async renew(): Promise<boolean> {
    if (this.ctx.now() - this.#renewed < LEASE_SECONDS * 1000 / 3) return true;
    return await this.take() !== null;
  }

  /** The item as it stands (a strong read), for a read-only round: no lease. */
  async peek(): Promise<Item> {
    const out = await this.ctx.client.send(
      new GetItemCommand({
        TableName: this.ctx.tables.counters.name,
        Key: { id: S(this.id) },
        ConsistentRead: true,
      }),
    );
    return out.Item ?? {};
  }

  /** Saves where the round stopped and gives the lease back (only while it is still ours). */
  async save(arn: string, state: FeedState): Promise<void> {
    const kept = state.described ? pruneCheckpoint(state.shards, state.described) : state.shards;
    const shards: Item = {};
    for (const [id, seq] of kept) shards[id] = S(seq);
    const names = {
      "#s": FEED.stream,
      "#sh": FEED.shards,
      "#b": FEED.backfill,
      "#lu": FEED.leaseUntil,
      "#o": FEED.owner,
    };
    const values: Item = {
      ":arn": S(arn),
      ":sh": { M: shards },
      ":me": S(this.owner),
      ":free": N(0),
    };
    let update = "SET #s = :arn, #sh = :sh, #lu = :free";
    if (state.backfill === undefined) update += " REMOVE #b";
    else {
      update += ", #b = :b";
      values[":b"] = S(JSON.stringify(state.backfill));
    }
    try {
      await this.ctx.client.send(
        new UpdateItemCommand({
          TableName: this.ctx.tables.counters.name,
          Key: { id: S(this.id) },
          UpdateExpression: update,
          ConditionExpression: "#o = :me",
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
    } catch (error) {
      // The round outlived its lease and another store took over: it saves its own progress.
      if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
    }
  }
}
