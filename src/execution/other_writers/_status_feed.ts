// The status feed: executions another writer committed, put back into the status index. The
// Python store's commit is a whole-item Put that drops `status_shard` and `status_at`, so the
// execution leaves the index; the executions table's stream (DynamoDB Streams, which
// ensureTables() turns on with `otherWriters: true`) shows every such Put, and a round reads what the stream holds since
// the last round and writes the two attributes back, conditioned on the version the record shows
// (the stream finds candidates, the write's condition decides). One store at a time reads it,
// under a lease on the counters item `status_feed`, which also keeps where each shard stands.
// Rows the stream never showed (written before it was on, or trimmed after 24 hours unread) are
// found once by a scan, a page per round.
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
} from "@aws-sdk/client-dynamodb-streams";
import {
  DescribeTableCommand,
  UpdateItemCommand,
  type UpdateItemCommandOutput,
} from "@aws-sdk/client-dynamodb";
import { type DynamoDBSender, isNamed, type Item, N, S } from "../../dynamo/_dynamo.ts";
import { FEED } from "../../core/_layout.ts";
import type { StatusCatchUp } from "../../core/operator_types.ts";
import { backfillPage, type EntryContext, putBack } from "./_status_entries.ts";

/** What a round sends Streams requests with: a DynamoDB Streams client (duck-typed). */
export type StreamsSender = Pick<DynamoDBStreamsClient, "send" | "destroy">;

/** How often a store reads the feed on its own (a listing, a relay pass): at most every 10 s. */
export const FEED_EVERY_MS = 10_000;
/** How long a round's lease lasts: a store that dies mid-round holds the feed that long. */
const LEASE_SECONDS = 30;
/**
 * Change records a GetRecords call asks for: after each such page the round renews its lease,
 * so a round that writes slowly (throttled, a busy table) keeps the feed to itself.
 */
const RECORDS_PER_PAGE = 100;
/** Change records a round reads at most (GetRecords returns up to 1,000 a call). */
const RECORDS_PER_ROUND = 1000;

/**
 * A Streams client for the same account, region and endpoint as an SDK DynamoDB client (its
 * resolved config); null for a client that is not the SDK's (a duck-typed `send()`).
 */
export function streamsClientOf(client: DynamoDBSender): StreamsSender | null {
  const config = (client as { config?: Record<string, unknown> }).config;
  if (typeof config?.region !== "function" || typeof config.credentials !== "function") return null;
  return new DynamoDBStreamsClient({
    region: config.region as () => Promise<string>,
    credentials: config.credentials as () => Promise<never>,
    // DynamoDB Local and LocalStack serve Streams on the table endpoint; AWS on its own.
    ...(config.isCustomEndpoint ? { endpoint: config.endpoint as () => Promise<never> } : {}),
    maxAttempts: typeof config.maxAttempts === "function"
      ? config.maxAttempts as () => Promise<number>
      : undefined,
    requestHandler: {
      connectionTimeout: 5_000,
      requestTimeout: 30_000,
      throwOnRequestTimeout: true,
    },
  });
}

/** What a round reads and writes with (the feed itself is the StatusFeed's). */
export type FeedContext = EntryContext;

/** A store's side of the feed: its Streams client, its lease id, when it last read. */
export class StatusFeed {
  readonly #owner = crypto.randomUUID();
  /** The stream's ARN once looked up; null: the table has no stream. */
  #arn: string | null | undefined;
  #last = -Infinity;
  #running: Promise<StatusCatchUp> | undefined;
  /** Stops the round running when the store closes. */
  readonly #closing = new AbortController();

  #streams: StreamsSender | null | undefined;

  /**
   * `build` builds the Streams client when first needed (null: a client that is not the SDK's,
   * and then there is no feed).
   */
  constructor(private readonly build: () => StreamsSender | null) {}

  /** The Streams client, built on first use; null when there is no feed. */
  get streams(): StreamsSender | null {
    if (this.#streams === undefined) this.#streams = this.build();
    return this.#streams;
  }

  /**
   * Stops the round running (a pass's, which nobody waits for) at its next call, waits until
   * it has given the lease back, and destroys the Streams client this store built, if it did.
   */
  async close(): Promise<void> {
    this.#closing.abort();
    await this.#running?.catch(() => undefined);
    this.#streams?.destroy();
    this.#streams = null;
  }

  /** The lease's owner id of this store. */
  get owner(): string {
    return this.#owner;
  }

  /**
   * A round unless this store read the feed less than {@linkcode FEED_EVERY_MS} ago (by the real
   * clock: the stream's records are real-time) or is reading it now (then that round).
   */
  async maybe(ctx: FeedContext, signal?: AbortSignal): Promise<void> {
    if (this.streams === null || signal?.aborted) return;
    if (Date.now() - this.#last < FEED_EVERY_MS && !this.#running) return;
    // What a round fails with is never the caller's: a listing or a pass goes on with the index
    // as it is. It is said once per kind of error, not silently dropped; an explicit round
    // (catchUpStatusIndex) throws it. A listing whose request went away stops the round too.
    await this.round(ctx, signal).catch((error: unknown) => {
      if (!signal?.aborted) this.#warnOnce(error);
    });
  }

  readonly #warned = new Set<string>();

  #warnOnce(error: unknown): void {
    const name = error instanceof Error ? error.name : typeof error;
    if (this.#closing.signal.aborted || this.#warned.has(name)) return;
    this.#warned.add(name);
    console.warn(
      `harel: the status feed's round failed (${String(error)}): listings by status miss the ` +
        "executions other writers committed last until a round succeeds; catchUpStatusIndex() " +
        "throws what it fails with",
    );
  }

  /** One round now (or the one running). */
  round(ctx: FeedContext, signal?: AbortSignal): Promise<StatusCatchUp> {
    const streams = this.streams;
    if (streams === null) return Promise.resolve(skipped("off"));
    const stop = signal ? AbortSignal.any([signal, this.#closing.signal]) : this.#closing.signal;
    this.#running ??= readFeed(ctx, this, streams, stop, signal).then((report) => {
      // Behind: the next listing or pass goes on at once, so a busy fleet is followed.
      if (report.behind) this.#last = -Infinity;
      return report;
    }).finally(() => {
      this.#running = undefined;
    });
    this.#last = Date.now();
    return this.#running;
  }

  /** The stream's ARN (DescribeTable, once; again when `stale`), or null without a stream. */
  async arn(ctx: FeedContext, stale = false): Promise<string | null> {
    if (this.#arn === undefined || stale) {
      const table = (await ctx.client.send(
        new DescribeTableCommand({ TableName: ctx.tables.executions.name }),
      )).Table;
      this.#arn = table?.StreamSpecification?.StreamEnabled ? table.LatestStreamArn ?? null : null;
    }
    return this.#arn;
  }
}

function skipped(why: NonNullable<StatusCatchUp["skipped"]>): StatusCatchUp {
  return { records: 0, indexed: 0, scanned: 0, behind: false, skipped: why };
}

/** Where a round starts: the feed item as the lease returned it. */
interface FeedState {
  shards: Map<string, string>;
  /** The backfill scan's position (`{}`: the start); undefined when there is none to do. */
  backfill: Item | undefined;
}

/**
 * One round: `signal` stops it at its next call (the store closes, or `caller`, the listing or
 * call that started it, went away). What it read is saved at the end, but when `caller` stopped
 * it: then nothing more is sent, and the lease runs out (the next round reads it again).
 */
async function readFeed(
  ctx: FeedContext,
  feed: StatusFeed,
  streams: StreamsSender,
  signal: AbortSignal | undefined,
  caller: AbortSignal | undefined,
): Promise<StatusCatchUp> {
  let arn = await feed.arn(ctx);
  if (arn === null) return skipped("no stream");
  signal?.throwIfAborted();
  const item = await takeLease(ctx, feed.owner);
  if (item === null) return skipped("leased");
  // Another store read another stream (the table's was turned off and on since one of us looked
  // it up): the table says which is current.
  const read = item[FEED.stream]?.S;
  if (read !== undefined && read !== arn) {
    const current = await feed.arn(ctx, true);
    if (current === null) {
      await saveFeed(ctx, feed.owner, read, stateOf(item, read));
      return skipped("no stream");
    }
    arn = current;
  }
  const state = stateOf(item, arn);
  const report: StatusCatchUp = {
    records: 0,
    indexed: 0,
    scanned: 0,
    behind: false,
    skipped: null,
  };
  try {
    let lost: boolean;
    try {
      lost = await readShards(ctx, feed.owner, streams, arn, state, report, signal);
    } catch (error) {
      // The table's stream was turned off (and maybe on again) since the ARN was looked up.
      if (!isNamed(error, "ResourceNotFoundException") && !(error instanceof StreamOff)) {
        throw error;
      }
      await feed.arn(ctx, true);
      return { ...report, behind: true };
    }
    if (lost) state.backfill = {};
    // The scan's page goes on under the lease, renewed (another store may have taken it).
    if (
      state.backfill !== undefined && !report.behind && await takeLease(ctx, feed.owner) !== null
    ) {
      state.backfill = await backfillPage(ctx, state.backfill, report);
      if (state.backfill !== undefined) report.behind = true;
    }
  } finally {
    if (!caller?.aborted) await saveFeed(ctx, feed.owner, arn, state);
  }
  return report;
}

/**
 * Takes the lease on the feed item (one conditional UpdateItem that also reads it): the item, or
 * null when another store holds it.
 */
async function takeLease(ctx: FeedContext, owner: string): Promise<Item | null> {
  const now = Math.floor(ctx.now() / 1000);
  let out: UpdateItemCommandOutput;
  try {
    out = await ctx.client.send(
      new UpdateItemCommand({
        TableName: ctx.tables.counters.name,
        Key: { id: S(FEED.id) },
        UpdateExpression: "SET #lu = :until, #o = :me",
        ConditionExpression: "attribute_not_exists(#lu) OR #lu < :now OR #o = :me",
        ExpressionAttributeNames: { "#lu": FEED.leaseUntil, "#o": FEED.owner },
        ExpressionAttributeValues: {
          ":until": N(now + LEASE_SECONDS),
          ":now": N(now),
          ":me": S(owner),
        },
        ReturnValues: "ALL_NEW",
      }),
    );
  } catch (error) {
    if (isNamed(error, "ConditionalCheckFailedException")) return null;
    throw error;
  }
  return out.Attributes ?? {};
}

/**
 * Where the feed item says a round of stream `arn` starts: a new stream (or the first round)
 * starts with no shard read and a backfill to do.
 */
function stateOf(item: Item, arn: string): FeedState {
  if (item[FEED.stream]?.S !== arn) return { shards: new Map(), backfill: {} };
  const shards = new Map<string, string>();
  for (const [id, seq] of Object.entries(item[FEED.shards]?.M ?? {})) {
    if (seq.S !== undefined) shards.set(id, seq.S);
  }
  const backfill = item[FEED.backfill]?.S;
  return { shards, backfill: backfill === undefined ? undefined : JSON.parse(backfill) };
}

/** Saves where the round stopped and gives the lease back (only while it is still ours). */
async function saveFeed(
  ctx: FeedContext,
  owner: string,
  arn: string,
  state: FeedState,
): Promise<void> {
  const shards: Item = {};
  for (const [id, seq] of state.shards) shards[id] = S(seq);
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
    ":me": S(owner),
    ":free": N(0),
  };
  let update = "SET #s = :arn, #sh = :sh, #lu = :free";
  if (state.backfill === undefined) update += " REMOVE #b";
  else {
    update += ", #b = :b";
    values[":b"] = S(JSON.stringify(state.backfill));
  }
  try {
    await ctx.client.send(
      new UpdateItemCommand({
        TableName: ctx.tables.counters.name,
        Key: { id: S(FEED.id) },
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

/**
 * Reads every shard from where it stands, parents before children, up to the round's records;
 * resolves to whether records were lost (a shard trimmed before it was read to its end).
 */
async function readShards(
  ctx: FeedContext,
  owner: string,
  streams: StreamsSender,
  arn: string,
  state: FeedState,
  report: StatusCatchUp,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const { shards, status } = await describeShards(streams, arn, signal);
  // A stream turned off stays readable for a day, but the table writes to a new one if any.
  if (status === "DISABLING" || status === "DISABLED") throw new StreamOff(arn);
  const present = new Set(shards.map((shard) => shard.ShardId!));
  // A shard read part-way that the stream no longer has: what was left of it is gone.
  let lost = [...state.shards].some(([id, seq]) => seq !== "end" && !present.has(id));
  for (const id of [...state.shards.keys()]) if (!present.has(id)) state.shards.delete(id);
  const done = (id: string | undefined) =>
    id === undefined || !present.has(id) || state.shards.get(id) === "end";
  for (let progress = true; progress && !report.behind;) {
    progress = false;
    for (const shard of shards) {
      const id = shard.ShardId!;
      if (done(id) || !done(shard.ParentShardId)) continue;
      signal?.throwIfAborted();
      const read = await readShard(ctx, owner, streams, arn, shard, state, report, signal);
      lost ||= read.trimmed;
      progress ||= read.ended;
      if (report.behind) break;
    }
  }
  return lost;
}

/** The stream turned off: the round looks up the table's stream again. */
class StreamOff extends Error {
  override name = "StreamOff";
  constructor(arn: string) {
    super(`the stream ${arn} is turned off`);
  }
}

/** Every shard of the stream (DescribeStream pages by shard id), and the stream's status. */
async function describeShards(
  streams: StreamsSender,
  arn: string,
  signal: AbortSignal | undefined,
): Promise<{ shards: Shard[]; status: string | undefined }> {
  const shards: Shard[] = [];
  let status: string | undefined;
  let start: string | undefined;
  do {
    const out = await streams.send(
      new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: start }),
      { abortSignal: signal },
    );
    shards.push(...out.StreamDescription?.Shards ?? []);
    status = out.StreamDescription?.StreamStatus;
    start = out.StreamDescription?.LastEvaluatedShardId;
  } while (start !== undefined);
  return { shards, status };
}

/**
 * Reads one shard from its checkpoint until it is caught up (an empty page of an open shard),
 * read to its end (a closed one), or the round has read its records.
 */
async function readShard(
  ctx: FeedContext,
  owner: string,
  streams: StreamsSender,
  arn: string,
  shard: Shard,
  state: FeedState,
  report: StatusCatchUp,
  signal: AbortSignal | undefined,
): Promise<{ trimmed: boolean; ended: boolean }> {
  const id = shard.ShardId!;
  const closed = shard.SequenceNumberRange?.EndingSequenceNumber !== undefined;
  const after = state.shards.get(id);
  let trimmed = false;
  let iterator: string | undefined;
  try {
    iterator = (await streams.send(
      new GetShardIteratorCommand({
        StreamArn: arn,
        ShardId: id,
        ...(after === undefined
          ? { ShardIteratorType: "TRIM_HORIZON" }
          : { ShardIteratorType: "AFTER_SEQUENCE_NUMBER", SequenceNumber: after }),
      }),
      { abortSignal: signal },
    )).ShardIterator;
  } catch (error) {
    // The checkpoint is older than the stream's 24 hours: start over, and scan for the rest.
    if (!isNamed(error, "TrimmedDataAccessException")) throw error;
    trimmed = true;
    iterator = (await streams.send(
      new GetShardIteratorCommand({
        StreamArn: arn,
        ShardId: id,
        ShardIteratorType: "TRIM_HORIZON",
      }),
      { abortSignal: signal },
    )).ShardIterator;
  }
  while (iterator !== undefined) {
    signal?.throwIfAborted();
    const left = RECORDS_PER_ROUND - report.records;
    const out = await streams.send(
      new GetRecordsCommand({ ShardIterator: iterator, Limit: Math.min(RECORDS_PER_PAGE, left) }),
      { abortSignal: signal },
    );
    const records = out.Records ?? [];
    report.records += records.length;
    report.indexed += await putBack(ctx, records, signal);
    // Stopped part-way (the store closes): the page is read again by the next round.
    signal?.throwIfAborted();
    const last = records.at(-1)?.dynamodb?.SequenceNumber;
    if (last !== undefined) state.shards.set(id, last);
    if (records.length > 0 && await takeLease(ctx, owner) === null) {
      // Another store took the feed over (this round outlived its lease): it goes on from the
      // last checkpoint saved, and this round's writes were idempotent.
      report.behind = true;
      return { trimmed, ended: false };
    }
    iterator = out.NextShardIterator;
    if (iterator === undefined) {
      state.shards.set(id, "end");
      return { trimmed, ended: true };
    }
    // Caught up with an open shard. A closed one may serve empty pages before its records ("it
    // might take multiple calls to get to a portion of the shard that contains stream records",
    // a trimmed start): it is read on to its end.
    if (records.length === 0 && !closed) break;
    if (report.records >= RECORDS_PER_ROUND) {
      report.behind = true;
      break;
    }
  }
  return { trimmed, ended: false };
}
