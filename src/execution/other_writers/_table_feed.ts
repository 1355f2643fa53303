// The table feed: reads a table's stream for the rows other writers commit and hands each page of
// change records to the table's handler (executions: the status feed; outbox, spawns, timers:
// adoption). One store at a time reads a stream, under a lease on a counters item that also keeps
// where each shard stands (_feed_checkpoint.ts). A round reads from the checkpoint until caught
// up, out of records or time, or aborted, and saves where it stopped.
import {
  type _Record as StreamRecord,
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
} from "@aws-sdk/client-dynamodb-streams";
import { DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import { type DynamoDBSender, isNamed, type Item, N } from "../../dynamo/_dynamo.ts";
import { withSignal } from "../../dynamo/_abortable.ts";
import { streamDifference, TableDrift } from "../../dynamo/table_check.ts";
import { FEED } from "../../core/_layout.ts";
import { type FeedContext, type FeedState, Lease, stateOf } from "./_feed_lease.ts";
import type { ExecutionTables } from "../../dynamo/tables.ts";
import { childrenOf, END, shardDone } from "./_feed_checkpoint.ts";

export { type FeedContext, feedItemId } from "./_feed_lease.ts";

export type { StreamRecord };

/** What a round sends Streams requests with: a DynamoDB Streams client (duck-typed). */
export type StreamsSender = Pick<DynamoDBStreamsClient, "send" | "destroy">;

/** How often a store reads a feed on its own ({@linkcode TableFeed.maybe}): at most every 10 s. */
export const FEED_EVERY_MS = 10_000;
/** Change records a GetRecords call asks for: the lease is renewed between pages. */
const RECORDS_PER_PAGE = 100;
/** Records of work a round reads at most (100 commits a second for a cron once a minute). */
export const RECORDS_PER_ROUND = 6000;
/** How long a round reads at most (real time): then it saves where it stopped, `behind`. */
export const ROUND_MS = 20_000;

/** What a round did. */
export interface FeedReport {
  /** Change records of work read (the ones `ignore` passes over are not counted). */
  records: number;
  /** What the handler says it wrote (or, read-only, records handed to `peek`). */
  handled: number;
  /** Rows examined by the backfill scan (0 once it is done, or without one). */
  scanned: number;
  /** More is waiting: the next round goes on from where this one stopped. */
  behind: boolean;
  /**
   * Why nothing was read: `"off"` (no Streams client), `"no stream"` (the table has none),
   * `"leased"` (another store is reading it now); `null` when the round ran.
   */
  skipped: "off" | "no stream" | "leased" | null;
  /**
   * The one-off scan, or the index's settling after it, is under way (or another store holds
   * the feed): what it finds may have lower seqs than what the index shows now.
   */
  backfilling: boolean;
}

/** How long after the one-off scan ends its last rows may still be missing from the index. */
const BACKFILL_SETTLE_SECONDS = 30;

/** A handler's page: the records of work, oldest first per shard (images, creation times). */
export type FeedHandler<C extends FeedContext> = (
  ctx: C,
  records: StreamRecord[],
  signal: AbortSignal | undefined,
) => Promise<number>;

/**
 * A page of the one-off scan for rows the stream never showed, from `start` (`{}`: the
 * beginning): where it goes on (undefined: done), what it examined and wrote.
 */
export type FeedBackfill<C extends FeedContext> = (
  ctx: C,
  start: Item,
  signal: AbortSignal | undefined,
) => Promise<{ next: Item | undefined; scanned: number; handled: number; adopted?: number }>;

/** What a table feed is. */
export interface TableFeedOptions<C extends FeedContext> {
  /** A name for messages (`"executions"`, `"outbox"`, ...). */
  kind: string;
  /** The table whose stream is read. */
  table: keyof ExecutionTables;
  /** The counters item that holds the lease and the checkpoint (`feed:{kind}`). */
  itemId: string;
  /** Builds the Streams client when first needed (null: no feed, rounds are skipped `"off"`). */
  streams: () => StreamsSender | null;
  /** Writes what a page of records asks for; resolves to how many writes it made. */
  handler: FeedHandler<C>;
  /** Records that are no work (not handed to the handler, not counted). @default none */
  ignore?: (record: StreamRecord) => boolean;
  /** The scan for rows the stream never showed; none by default. */
  backfill?: FeedBackfill<C>;
  /** What a failed round of {@linkcode TableFeed.maybe} means for the store, for its warning. */
  missed?: string;
  /** Records of work a round reads at most. @default {6000} ({@linkcode RECORDS_PER_ROUND}) */
  maxRecords?: number;
  /** How long a round reads at most, ms of real time. @default {20000} ({@linkcode ROUND_MS}) */
  maxMs?: number;
}

/** How a round runs. */
export interface RoundOptions {
  /** Stops the round at its next call, `behind`: what it handled is saved, as at its bounds. */
  signal?: AbortSignal;
  /**
   * An operator's view: reads from the checkpoint without the lease, saves nothing, writes
   * nothing; the records of work go to `peek` page by page instead of the handler.
   */
  readOnly?: boolean;
  /** Read-only rounds: takes each page of records of work. */
  peek?: (records: StreamRecord[]) => void | Promise<void>;
}

/** A Streams client configured as an SDK DynamoDB client; null for a client not the SDK's. */
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

/** A store's side of one table's feed: its Streams client, its lease id, when it last read. */
export class TableFeed<C extends FeedContext = FeedContext> {
  readonly #owner = crypto.randomUUID();
  /** The stream's ARN once looked up; null: the table has no stream. */
  #arn: string | null | undefined;
  /** Whether that stream was made with the table. */
  #withTable = false;
  #last = -Infinity;
  #running: Promise<FeedReport> | undefined;
  #streams: StreamsSender | null | undefined;
  readonly #warned = new Set<string>();

  constructor(readonly options: TableFeedOptions<C>) {}

  /** The Streams client, built on first use; null when there is no feed. */
  get streams(): StreamsSender | null {
    if (this.#streams === undefined) this.#streams = this.options.streams();
    return this.#streams;
  }

  /** The lease's owner id of this store. */
  get owner(): string {
    return this.#owner;
  }

  /** Waits until the round running has saved where it stopped, then destroys the Streams client. */
  async close(): Promise<void> {
    await this.#running?.catch(() => undefined);
    this.#streams?.destroy();
    this.#streams = null;
  }

  /**
   * A round unless this store read the feed less than {@linkcode FEED_EVERY_MS} ago (by the real
   * clock: the stream's records are real-time) or is reading it now (then that round). What it
   * fails with is said once per kind of error, never thrown: the caller goes on without it.
   */
  async maybe(ctx: C, signal?: AbortSignal): Promise<void> {
    if (this.streams === null || signal?.aborted) return;
    if (Date.now() - this.#last < FEED_EVERY_MS && !this.#running) return;
    await this.round(ctx, { signal }).catch((error: unknown) => {
      if (!signal?.aborted) this.#warnOnce(error);
    });
  }

  #warnOnce(error: unknown): void {
    const name = error instanceof Error ? error.name : typeof error;
    if (this.#warned.has(name)) return;
    this.#warned.add(name);
    console.warn(
      `harel: the ${this.options.kind} feed's round failed (${String(error)}): ${
        this.options.missed ?? "other writers' rows are missed"
      } until a round succeeds`,
    );
  }

  /**
   * One round now (or the writing round running, which a second caller shares). A read-only
   * round runs on its own, takes no lease and saves nothing.
   */
  round(ctx: C, options: RoundOptions = {}): Promise<FeedReport> {
    const streams = this.streams;
    if (streams === null) return Promise.resolve(skipped("off"));
    const { signal } = options;
    if (options.readOnly) return this.#read(ctx, streams, signal, true, options.peek);
    this.#running ??= this.#read(ctx, streams, signal, false, undefined).then((report) => {
      // Behind: the next listing or pass goes on at once, so a busy fleet is followed.
      if (report.behind) this.#last = -Infinity;
      return report;
    }).finally(() => {
      this.#running = undefined;
    });
    this.#last = Date.now();
    return this.#running;
  }

  /**
   * The stream's ARN (DescribeTable, once; again when `stale`), or null without a stream. A
   * stream without the images the handlers read is a TableDrift: its records would say nothing.
   */
  async arn(ctx: C, stale = false): Promise<string | null> {
    if (this.#arn === undefined || stale) {
      const name = ctx.tables[this.options.table].name;
      const table = (await ctx.client.send(new DescribeTableCommand({ TableName: name }))).Table;
      this.#arn = table?.StreamSpecification?.StreamEnabled ? table.LatestStreamArn ?? null : null;
      // A stream made with the table (its label is the table's creation time) saw every row.
      const label = Date.parse(`${table?.LatestStreamLabel}Z`);
      this.#withTable = label <= (table?.CreationDateTime?.getTime() ?? NaN);
      const difference = this.#arn === null ? null : streamDifference(name, table!);
      if (difference !== null) {
        this.#arn = undefined;
        throw new TableDrift([difference]);
      }
    }
    return this.#arn;
  }

  /** One round: what it handled is saved at the end, even once `signal` stopped it (`behind`). */
  async #read(
    given: C,
    streams: StreamsSender,
    signal: AbortSignal | undefined,
    readOnly: boolean,
    peek: RoundOptions["peek"] | undefined,
  ): Promise<FeedReport> {
    const report: FeedReport = {
      records: 0,
      handled: 0,
      scanned: 0,
      behind: false,
      skipped: null,
      backfilling: false,
    };
    let arn = await this.arn(given);
    if (arn === null) return skipped("no stream");
    // The stream's reads and the handler's writes stop at the signal; the lease and checkpoint
    // go by the store's own client, so what was handled is saved even then.
    const ctx = withSignal(given, signal);
    const lease = new Lease(given, this.options.itemId, this.#owner);
    const item = readOnly ? await lease.peek() : await lease.take();
    if (item === null) return skipped("leased");
    // Another store read another stream (the table's was turned off and on since one of us
    // looked it up): the table says which is current.
    const read = item[FEED.stream]?.S;
    if (read !== undefined && read !== arn) {
      const current = await this.arn(given, true);
      if (current === null) {
        if (!readOnly) await lease.save(read, stateOf(item, read));
        return skipped("no stream");
      }
      arn = current;
    }
    const state = stateOf(item, arn);
    if (this.#withTable && item[FEED.stream]?.S !== arn) state.backfill = undefined;
    const backfill = this.options.backfill;
    if (backfill === undefined) state.backfill = undefined;
    const reader = new Reader(ctx, this.options, streams, arn, state, report, signal, lease, {
      readOnly,
      peek,
    });
    try {
      if (await reader.shards() && backfill !== undefined) state.backfill = {};
      // The scan's page goes on under the lease, renewed (another store may have taken it).
      const now = ctx.now() / 1000;
      const settle = Number(state.backfill?.[SETTLE]?.N);
      if (settle <= now) state.backfill = undefined;
      if (
        backfill !== undefined && !readOnly && state.backfill !== undefined && !(settle > now) &&
        !report.behind && await lease.take() !== null
      ) {
        const { [FOUND]: found, ...start } = state.backfill;
        const page = await backfill(ctx, start, signal);
        report.scanned += page.scanned;
        report.handled += page.handled;
        // A scan that adopted rows ends once the index can show them all.
        const adopted = found !== undefined || (page.adopted ?? 0) > 0;
        state.backfill = page.next !== undefined
          ? { ...page.next, ...(adopted ? { [FOUND]: { BOOL: true } } : {}) }
          : adopted
          ? { [SETTLE]: N(now + BACKFILL_SETTLE_SECONDS) }
          : undefined;
        if (page.next !== undefined) report.behind = true;
      }
      report.backfilling = state.backfill !== undefined;
    } catch (error) {
      // Stopped by its caller; or the table's stream was turned off (and maybe on again) since
      // the ARN was looked up.
      if (signal?.aborted) report.behind = true;
      else if (isNamed(error, "ResourceNotFoundException") || error instanceof StreamOff) {
        await this.arn(given, true);
        report.behind = true;
      } else throw error;
    } finally {
      if (!readOnly) await lease.save(arn, state);
    }
    return report;
  }
}

/** The mark of a finished scan that the index may not show whole yet (until when). */
const SETTLE = "settle_until";
/** The mark of a scan that adopted rows so far. */
const FOUND = "~found";

function skipped(why: NonNullable<FeedReport["skipped"]>): FeedReport {
  // Another store's round may be scanning: what it adopts may come below what is found now.
  return {
    records: 0,
    handled: 0,
    scanned: 0,
    behind: false,
    skipped: why,
    backfilling: why === "leased",
  };
}

/** The stream turned off: the round looks up the table's stream again. */
class StreamOff extends Error {
  override name = "StreamOff";
  constructor(arn: string) {
    super(`the stream ${arn} is turned off`);
  }
}

/** One round's reading of the stream. */
class Reader<C extends FeedContext> {
  readonly #started = performance.now();

  constructor(
    private readonly ctx: C,
    private readonly options: TableFeedOptions<C>,
    private readonly streams: StreamsSender,
    private readonly arn: string,
    private readonly state: FeedState,
    private readonly report: FeedReport,
    private readonly signal: AbortSignal | undefined,
    private readonly lease: Lease,
    private readonly view: { readOnly: boolean; peek: RoundOptions["peek"] | undefined },
  ) {}

  /** Whether the round has read its records or its time. */
  get #full(): boolean {
    return this.report.records >= (this.options.maxRecords ?? RECORDS_PER_ROUND) ||
      performance.now() - this.#started >= (this.options.maxMs ?? ROUND_MS);
  }

  /**
   * Reads every shard from where it stands, parents before children, up to the round's records
   * and time; resolves to whether records were lost (a shard trimmed before it was read to its
   * end, or gone from the stream part-way read).
   */
  async shards(): Promise<boolean> {
    const { shards, status } = await this.#describe();
    // A stream turned off stays readable for a day, but the table writes to a new one if any.
    if (status === "DISABLING" || status === "DISABLED") throw new StreamOff(this.arn);
    this.state.described = shards;
    const present = new Set(shards.map((shard) => shard.ShardId!));
    const children = childrenOf(shards);
    const checkpoint = this.state.shards;
    let lost = [...checkpoint].some(([id, seq]) => seq !== END && !present.has(id));
    for (const id of [...checkpoint.keys()]) if (!present.has(id)) checkpoint.delete(id);
    const done = (id: string | undefined) => shardDone(id, checkpoint, present, children);
    for (let progress = true; progress && !this.report.behind;) {
      progress = false;
      for (const shard of shards) {
        const id = shard.ShardId!;
        if (done(id) || !done(shard.ParentShardId)) continue;
        this.signal?.throwIfAborted();
        const read = await this.#shard(shard);
        lost ||= read.trimmed;
        progress ||= read.ended;
        if (this.report.behind) break;
      }
    }
    return lost;
  }

  /** Every shard of the stream (DescribeStream pages by shard id), and the stream's status. */
  async #describe(): Promise<{ shards: Shard[]; status: string | undefined }> {
    const shards: Shard[] = [];
    let status: string | undefined;
    let start: string | undefined;
    do {
      const out = await this.streams.send(
        new DescribeStreamCommand({ StreamArn: this.arn, ExclusiveStartShardId: start }),
        { abortSignal: this.signal },
      );
      shards.push(...out.StreamDescription?.Shards ?? []);
      status = out.StreamDescription?.StreamStatus;
      start = out.StreamDescription?.LastEvaluatedShardId;
    } while (start !== undefined);
    return { shards, status };
  }

  async #iterator(id: string, after: string | undefined): Promise<string | undefined> {
    return (await this.streams.send(
      new GetShardIteratorCommand({
        StreamArn: this.arn,
        ShardId: id,
        ...(after === undefined
          ? { ShardIteratorType: "TRIM_HORIZON" }
          : { ShardIteratorType: "AFTER_SEQUENCE_NUMBER", SequenceNumber: after }),
      }),
      { abortSignal: this.signal },
    )).ShardIterator;
  }

  /** Reads one shard from its checkpoint until caught up, at its end, or the round is full. */
  async #shard(shard: Shard): Promise<{ trimmed: boolean; ended: boolean }> {
    const id = shard.ShardId!;
    const closed = shard.SequenceNumberRange?.EndingSequenceNumber !== undefined;
    const { ignore, handler } = this.options;
    let trimmed = false;
    let iterator: string | undefined;
    try {
      iterator = await this.#iterator(id, this.state.shards.get(id));
    } catch (error) {
      // The checkpoint is older than the stream's 24 hours: start over, and scan for the rest.
      if (!isNamed(error, "TrimmedDataAccessException")) throw error;
      trimmed = true;
      iterator = await this.#iterator(id, undefined);
    }
    while (iterator !== undefined) {
      this.signal?.throwIfAborted();
      const left = (this.options.maxRecords ?? RECORDS_PER_ROUND) - this.report.records;
      const out = await this.streams.send(
        new GetRecordsCommand({ ShardIterator: iterator, Limit: Math.min(RECORDS_PER_PAGE, left) }),
        { abortSignal: this.signal },
      );
      const records = out.Records ?? [];
      const work = ignore ? records.filter((record) => !ignore(record)) : records;
      this.report.records += work.length;
      if (work.length > 0) {
        if (this.view.readOnly) {
          await this.view.peek?.(work);
          this.report.handled += work.length;
        } else this.report.handled += await handler(this.ctx, work, this.signal);
      }
      // Stopped part-way: the page is read again by the next round.
      this.signal?.throwIfAborted();
      const last = records.at(-1)?.dynamodb?.SequenceNumber;
      if (last !== undefined) this.state.shards.set(id, last);
      if (records.length > 0 && !this.view.readOnly && !(await this.lease.renew())) {
        // Another store took the feed over (this round outlived its lease): it goes on from the
        // last checkpoint saved, and this round's writes were conditional.
        this.report.behind = true;
        return { trimmed, ended: false };
      }
      iterator = out.NextShardIterator;
      if (iterator === undefined) {
        this.state.shards.set(id, END);
        return { trimmed, ended: true };
      }
      // Caught up with an open shard. A closed one may serve empty pages before its records ("it
      // might take multiple calls to get to a portion of the shard that contains stream
      // records", a trimmed start): it is read on to its end.
      if (records.length === 0 && !closed) break;
      if (this.#full) {
        this.report.behind = true;
        break;
      }
    }
    return { trimmed, ended: false };
  }
}
