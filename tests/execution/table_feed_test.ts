// The table feed: the one engine that reads a table's stream, its checkpoint kept under
// 4 KB whatever the stream does, and the status feed (its executions use) at 100 of the Python
// store's commits a second: its own write-backs are no work, and listings show when each
// execution was last committed. Streamed tables slow DynamoDB Local down: these tests keep a
// database of their own (another region).
import assert from "node:assert/strict";
import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import {
  DescribeStreamCommand,
  type GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
} from "@aws-sdk/client-dynamodb-streams";
import { DynamoDBStore, newExecution } from "../../mod.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";
import { capacityClient } from "../_support/capacity.ts";
import { fillExecutions } from "../_support/executions.ts";
import {
  CHECKPOINT_BYTES,
  CHECKPOINT_SHARDS,
  childrenOf,
  END,
  pruneCheckpoint,
  shardDone,
} from "../../src/execution/other_writers/_feed_checkpoint.ts";
import {
  feedItemId,
  type StreamRecord,
  streamsClientOf,
  type StreamsSender,
  TableFeed,
} from "../../src/execution/other_writers/_table_feed.ts";
import { StatusFeed } from "../../src/execution/other_writers/_status_feed.ts";
import { isIndexed } from "../../src/execution/other_writers/_status_entries.ts";

const REGION = "eu-feed-1";

/** An AWS-sized shard id and sequence number (65 and 40 characters at most; these are long). */
const shardId = (n: number) => `shardId-${String(n).padStart(20, "0")}-${"f".repeat(36)}`;
const seq = (n: number) => String(n).padStart(40, "1");

/**
 * A stream of `partitions` lines of shards, each rolled over `generations` times (each shard the
 * parent of the next of its line): the last of each line open, the others closed.
 */
function stream(partitions: number, generations: number): Shard[] {
  const shards: Shard[] = [];
  for (let p = 0; p < partitions; p++) {
    for (let g = 0; g < generations; g++) {
      const n = p * generations + g;
      shards.push({
        ShardId: shardId(n),
        ...(g > 0 ? { ParentShardId: shardId(n - 1) } : {}),
        SequenceNumberRange: {
          StartingSequenceNumber: seq(n * 1000),
          ...(g < generations - 1 ? { EndingSequenceNumber: seq(n * 1000 + 999) } : {}),
        },
      });
    }
  }
  return shards;
}

/** The bytes of a checkpoint's shards as DynamoDB counts them (names and values). */
function bytesOf(checkpoint: Map<string, string>): number {
  let bytes = 0;
  for (const [id, value] of checkpoint) bytes += id.length + value.length + 2;
  return bytes;
}

/** An item's size as DynamoDB counts it (names and values, near enough for maps and strings). */
function itemBytes(item: Record<string, unknown>): number {
  return new TextEncoder().encode(JSON.stringify(item)).length;
}

Deno.test("a checkpoint keeps only the shards not read to their end, and closed ones whose children have not started", () => {
  const shards = stream(3, 4);
  const present = new Set(shards.map((s) => s.ShardId!));
  const children = childrenOf(shards);
  // Line 0 read into its third shard; line 1's first read to its end, its child not started;
  // line 2 not started; and a shard the stream no longer has.
  const checkpoint = new Map([
    [shardId(0), END],
    [shardId(1), END],
    [shardId(2), seq(2005)],
    [shardId(4), END],
    [shardId(99), seq(7)],
  ]);
  const kept = pruneCheckpoint(checkpoint, shards);
  assert.deepEqual([...kept.keys()].sort(), [shardId(2), shardId(4)].sort());
  // The parents dropped are still done: a child has a checkpoint.
  for (const id of [shardId(0), shardId(1), shardId(4)]) {
    assert.ok(shardDone(id, kept, present, children), id);
  }
  assert.ok(!shardDone(shardId(2), kept, present, children));
  assert.ok(!shardDone(shardId(5), kept, present, children), "line 1 goes on with its child");
  assert.ok(!shardDone(shardId(8), kept, present, children), "line 2 is to read");
});

Deno.test("a checkpoint stays under its cap with thousands of shards: part-way read ones first, the newest first", () => {
  // 200 partitions rolled over 30 times (5,000+ shards), every line read part-way into its
  // last shard, and each line's previous one read to its end with no record yet in its child.
  const generations = 30;
  const shards = stream(200, generations);
  const checkpoint = new Map<string, string>();
  for (let p = 0; p < 200; p++) {
    const last = p * generations + generations - 1;
    for (let g = 0; g < generations - 1; g++) checkpoint.set(shardId(p * generations + g), END);
    if (p % 2) checkpoint.set(shardId(last), seq(last * 1000 + 5));
  }
  const kept = pruneCheckpoint(checkpoint, shards);
  assert.ok(kept.size <= CHECKPOINT_SHARDS, `${kept.size} shards`);
  assert.ok(bytesOf(kept) <= CHECKPOINT_BYTES, `${bytesOf(kept)} bytes`);
  assert.ok(kept.size > 0);
  // Only part-way read shards (the odd lines' last ones), the newest first: the highest lines.
  for (const [id, value] of kept) assert.notEqual(value, END, id);
  const lines = [...kept.keys()].map((id) => Math.floor(Number(id.slice(8, 28)) / generations));
  assert.deepEqual(lines, [...lines].sort((a, b) => b - a));
  assert.equal(lines[0], 199);
  // With few part-way shards, the rest of the room goes to closed ones, never past the cap.
  const ends = new Map([...checkpoint].filter(([, v]) => v === END));
  const closed = pruneCheckpoint(ends, shards);
  assert.ok(closed.size <= CHECKPOINT_SHARDS && bytesOf(closed) <= CHECKPOINT_BYTES);
  assert.ok(closed.size > 0);
  // A checkpoint of the whole stream read to its end keeps nothing but the last shards' ends.
  const all = new Map(shards.map((s) => [s.ShardId!, END]));
  const read = pruneCheckpoint(all, shards);
  assert.ok(read.size <= CHECKPOINT_SHARDS);
  for (const id of read.keys()) {
    assert.equal(Number(id.slice(8, 28)) % generations, generations - 1);
  }
});

Deno.test("a read-only round hands the records to its caller, takes no lease and saves nothing", async () => {
  const prefix = uniqueName("tf");
  using client = testClient(REGION);
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  await store.catchUpStatusIndex();
  const table = store.tables.executions.name;
  const exes = Array.from(
    { length: 3 },
    () => newExecution({ definition_id: "d", status: "RUNNING", version: 1 }),
  );
  for (const exe of exes) await seedPutExecution(client, table, exe);
  const counter = () =>
    client.send(
      new GetItemCommand({
        TableName: store.tables.counters.name,
        Key: { id: { S: "status_feed" } },
        ConsistentRead: true,
      }),
    ).then((out) => JSON.stringify(out.Item));
  // Another store holds the lease: an operator's view reads all the same.
  const lease = (until: number) =>
    client.send(
      new UpdateItemCommand({
        TableName: store.tables.counters.name,
        Key: { id: { S: "status_feed" } },
        UpdateExpression: "SET lease_until = :u, #o = :o",
        ExpressionAttributeNames: { "#o": "owner" },
        ExpressionAttributeValues: { ":u": { N: String(until) }, ":o": { S: "another store" } },
      }),
    );
  await lease(Math.floor(Date.now() / 1000) + 60);
  assert.equal((await store.catchUpStatusIndex()).skipped, "leased");
  const saved = await counter();
  const feed = new TableFeed({
    kind: "executions",
    table: "executions",
    itemId: "status_feed",
    streams: () => streamsClientOf(client),
    handler: () => {
      throw new Error("a read-only round calls no handler");
    },
  });
  const ctx = { client, tables: store.tables, now: Date.now };
  const peeked: StreamRecord[] = [];
  const report = await feed.round(ctx, {
    readOnly: true,
    peek: (records) => void peeked.push(...records),
  });
  assert.equal(report.skipped, null);
  assert.equal(report.records, 3);
  assert.deepEqual(
    peeked.map((r) => r.dynamodb?.Keys?.id?.S).sort(),
    exes.map((e) => e.id).sort(),
  );
  assert.ok(peeked.every((r) => r.dynamodb?.ApproximateCreationDateTime !== undefined));
  assert.equal(await counter(), saved, "nothing saved");
  assert.deepEqual(
    (await store.listExecutions({ status: "RUNNING" })).items,
    [],
    "nothing written",
  );
  // The writing round then finds them all.
  await lease(0);
  assert.equal((await store.catchUpStatusIndex()).indexed, 3);
  await feed.close();
});

/** A Streams client that counts its calls. */
function countingStreams(inner: StreamsSender, calls: string[]): StreamsSender {
  return {
    send: ((command: { constructor: { name: string } }, options: unknown) => {
      calls.push(command.constructor.name);
      return (inner.send as (c: unknown, o: unknown) => Promise<unknown>)(command, options);
    }) as StreamsSender["send"],
    destroy: () => inner.destroy(),
  };
}

Deno.test("the status feed's cost per other writer's commit, at 300 and 3,000 stored executions", async () => {
  const { client, capacity } = capacityClient(REGION);
  const prefix = uniqueName("tf");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  using writer = testClient(REGION);
  const streamCalls: string[] = [];
  const feed = new StatusFeed(() => countingStreams(streamsClientOf(client)!, streamCalls));
  const ctx = { client, tables: store.tables, now: Date.now };
  await feed.round(ctx); // the one-off scan of an empty table
  const table = store.tables.executions.name;
  const commits = 100;
  const lines: string[] = [];
  for (const rows of [300, 3000]) {
    await fillExecutions(writer, table, rows - (rows === 300 ? 0 : 300), {
      status: "DONE",
      from: 1e9,
    });
    const running = Array.from(
      { length: commits },
      () => newExecution({ definition_id: "d", status: "RUNNING", version: 1 }),
    );
    for (const exe of running) await seedPutExecution(writer, table, exe);
    // The rows filled (this module's commits, in the index already) are read first.
    while ((await feed.round(ctx)).records > commits);
    await feed.round(ctx); // the write-backs of the inserts
    for (const exe of running) await seedPutExecution(writer, table, { ...exe, version: 2 });
    capacity.units = 0;
    capacity.calls.length = 0;
    streamCalls.length = 0;
    const round = await feed.round(ctx);
    assert.equal(round.indexed, commits, JSON.stringify(round));
    assert.equal(round.records, commits, JSON.stringify(round));
    // The round after reads the write-backs: no write but its lease and checkpoint.
    const before = capacity.calls.length;
    const echo = await feed.round(ctx);
    assert.equal(echo.records, 0, JSON.stringify(echo));
    // Its lease and its checkpoint: not one call for the write-backs it read.
    assert.deepEqual(capacity.calls.slice(before), ["UpdateItemCommand", "UpdateItemCommand"]);
    const calls = capacity.calls.length + streamCalls.length;
    const perCommit = { calls: calls / commits, units: capacity.units / commits };
    lines.push(
      `${rows} stored: ${perCommit.calls.toFixed(2)} calls (${capacity.calls.length} DynamoDB, ` +
        `${streamCalls.length} Streams) and ${perCommit.units.toFixed(2)} write units a commit`,
    );
    // One UpdateItem per commit; the stream's pages and the lease shared by 100 records.
    assert.ok(perCommit.calls <= 1.15, lines.at(-1));
    assert.ok(perCommit.units <= 2.1, lines.at(-1));
  }
  console.log(
    `the status feed per other writer's commit (rounds of ${commits}): ${lines.join("; ")}`,
  );
  // The feed's item after these rounds: well under 4 KB.
  const item = (await writer.send(
    new GetItemCommand({
      TableName: store.tables.counters.name,
      Key: { id: { S: "status_feed" } },
      ConsistentRead: true,
    }),
  )).Item!;
  assert.ok(itemBytes(item) < 4096, `${itemBytes(item)} bytes`);
  await feed.close();
  client.destroy();
});

Deno.test("a TableFeed reads another table's stream from its own counters item: each record once, a read-only round beside it", async () => {
  const prefix = uniqueName("tf");
  using client = testClient(REGION);
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  // ensureTables() of a store with otherWriters: true turned the outbox table's stream on.
  const table = store.tables.outbox.name;
  const seen: number[] = [];
  const feed = new TableFeed({
    kind: "outbox",
    table: "outbox",
    itemId: feedItemId("outbox"),
    streams: () => streamsClientOf(client),
    ignore: (record) => record.eventName === "REMOVE",
    handler: (_ctx, records) => {
      for (const record of records) seen.push(Number(record.dynamodb?.NewImage?.seq?.N));
      return Promise.resolve(records.length);
    },
  });
  const ctx = { client, tables: store.tables, now: Date.now };
  const put = (seq: number) =>
    client.send(
      new PutItemCommand({
        TableName: table,
        Item: { seq: { N: String(seq) }, target_id: { S: "t" }, event: { S: "{}" } },
      }),
    );
  for (let seq = 1; seq <= 250; seq++) await put(seq);
  await client.send(new DeleteItemCommand({ TableName: table, Key: { seq: { N: "1" } } }));
  const first = await feed.round(ctx);
  assert.deepEqual(
    [first.records, first.handled, first.behind, first.skipped],
    [250, 250, false, null],
    JSON.stringify(first),
  );
  assert.deepEqual(seen, Array.from({ length: 250 }, (_, i) => i + 1), "in order, each once");
  for (let seq = 251; seq <= 260; seq++) await put(seq);
  // A read-only round reads from the checkpoint: the 10 new ones, and saves nothing.
  const peeked: number[] = [];
  const view = await feed.round(ctx, {
    readOnly: true,
    peek: (records) => void peeked.push(...records.map((r) => Number(r.dynamodb?.Keys?.seq?.N))),
  });
  assert.equal(view.records, 10);
  assert.deepEqual(peeked, Array.from({ length: 10 }, (_, i) => 251 + i));
  const second = await feed.round(ctx);
  assert.equal(second.records, 10, JSON.stringify(second));
  assert.equal(seen.length, 260);
  assert.equal((await feed.round(ctx)).records, 0);
  const item = (await client.send(
    new GetItemCommand({
      TableName: store.tables.counters.name,
      Key: { id: { S: "feed:outbox" } },
      ConsistentRead: true,
    }),
  )).Item!;
  assert.equal(Object.keys(item.shards?.M ?? {}).length, 1, JSON.stringify(item));
  assert.ok(itemBytes(item) < 4096);
  await feed.close();
});

Deno.test("a round ends at its records of work, or at its time when the stream holds nothing but the feed's own write-backs", async () => {
  const prefix = uniqueName("tf");
  using client = testClient(REGION);
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  // A stream served as AWS may serve a busy table: an open shard whose every page is full.
  let next = 0;
  let echoes = false;
  const record = (n: number): StreamRecord => {
    const old = { id: { S: `e${n}` }, version: { N: "2" }, data: { S: "{}" } };
    return {
      eventName: echoes ? "MODIFY" : "INSERT",
      dynamodb: {
        Keys: { id: old.id },
        SequenceNumber: seq(n),
        ...echoes
          ? {
            OldImage: old,
            NewImage: {
              ...old,
              status_shard: { S: "RUNNING#1" },
              status_at: { N: "1" },
              updated_at: { N: "1" },
            },
          }
          : { NewImage: old },
      },
    };
  };
  const streams = {
    send: (command: unknown) => {
      if (command instanceof DescribeStreamCommand) {
        return Promise.resolve({
          StreamDescription: {
            StreamStatus: "ENABLED",
            Shards: [{
              ShardId: "shardId-1",
              SequenceNumberRange: { StartingSequenceNumber: "1" },
            }],
          },
        });
      }
      if (command instanceof GetShardIteratorCommand) {
        return Promise.resolve({ ShardIterator: "i" });
      }
      const limit = (command as GetRecordsCommand).input.Limit ?? 1000;
      const records = Array.from({ length: limit }, () => record(next++));
      return new Promise((resolve) =>
        setTimeout(() => resolve({ Records: records, NextShardIterator: "i" }), 5)
      );
    },
    destroy() {},
  } as unknown as StreamsSender;
  const handled: StreamRecord[] = [];
  const options = {
    kind: "test",
    table: "executions" as const,
    itemId: feedItemId("test"),
    streams: () => streams,
    ignore: isIndexed,
    handler: (_ctx: unknown, records: StreamRecord[]) => {
      handled.push(...records);
      return Promise.resolve(records.length);
    },
    maxRecords: 250,
    maxMs: 1000,
  };
  const ctx = { client, tables: store.tables, now: Date.now };
  const feed = new TableFeed(options);
  const full = await feed.round(ctx);
  assert.deepEqual([full.records, full.handled, full.behind], [250, 250, true]);
  // Its checkpoint is the last record it handled: the next round goes on after it.
  const item = async () =>
    (await client.send(
      new GetItemCommand({
        TableName: store.tables.counters.name,
        Key: { id: { S: feedItemId("test") } },
        ConsistentRead: true,
      }),
    )).Item!;
  assert.equal((await item()).shards?.M?.["shardId-1"]?.S, seq(249));
  echoes = true;
  const started = performance.now();
  const idle = await feed.round(ctx);
  const ms = performance.now() - started;
  assert.deepEqual([idle.records, idle.handled, idle.behind], [0, 0, true], JSON.stringify(idle));
  assert.ok(ms >= 1000 && ms < 5000, `${Math.round(ms)} ms`);
  assert.equal(handled.length, 250, "no write-back handed to the handler");
  assert.ok(next > 250 + 100, `${next - 250} write-backs read`);
  await feed.close();
});
