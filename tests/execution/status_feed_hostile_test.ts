// The status feed against a hostile fleet: the stream turned off and on, rows that cannot
// take an index entry, an id deleted and written again, a relay that must not wait for it.
import assert from "node:assert/strict";
import {
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  UpdateTableCommand,
} from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, type Execution, newExecution, relayOutbox } from "../../mod.ts";
import {
  countingClient,
  endpoint,
  ownRegion,
  pause,
  testClient,
  uniqueName,
} from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";
import { FaultProxy } from "../_support/fault_proxy.ts";
import {
  type _Record as StreamRecord,
  DescribeStreamCommand,
  type GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
} from "@aws-sdk/client-dynamodb-streams";
import { StatusFeed, type StreamsSender } from "../../src/execution/other_writers/_status_feed.ts";

/** These tables have streams: a database of this file's own (see `ownRegion`). */
const REGION = ownRegion("sfh");

async function ids(store: DynamoDBStore, status: Execution["status"]): Promise<string[]> {
  return (await store.listExecutions({ status, limit: 1000 })).items.map((s) => s.id);
}

Deno.test("ensureTables() creates the executions table with its stream in one call", async () => {
  // Turning a stream on with UpdateTable is another change of the table (on DynamoDB Local with
  // a few thousand tables, 27 s: past create()'s 30 s with the rest).
  using counting = countingClient(REGION);
  await using store = new DynamoDBStore(counting.client, {
    prefix: uniqueName("sfh"),
    otherWriters: true,
  });
  await store.ensureTables();
  assert.deepEqual(counting.calls.filter((call) => call === "UpdateTableCommand"), []);
  assert.equal((await store.catchUpStatusIndex()).skipped, null, "the stream is on");
});

Deno.test("catchUpStatusIndex() reads the stream turned off and on again at its new ARN", async () => {
  using client = testClient(REGION);
  const prefix = uniqueName("sfh");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  await using other = new DynamoDBStore(testClient(REGION), { prefix, otherWriters: true });
  const table = store.tables.executions.name;
  await store.catchUpStatusIndex();
  await other.catchUpStatusIndex(); // both stores know the first stream
  const stream = (enabled: boolean) =>
    client.send(
      new UpdateTableCommand({
        TableName: table,
        StreamSpecification: enabled
          ? { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" }
          : { StreamEnabled: false },
      }),
    );
  await stream(false);
  await stream(true);
  const exe = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
  await seedPutExecution(client, table, exe);
  for (let round = 0; round < 3; round++) {
    if (!(await store.catchUpStatusIndex()).behind) break;
  }
  assert.deepEqual(await ids(store, "RUNNING"), [exe.id]);
  // The other store still holds the first stream's ARN: it follows the new one, and does not
  // start the first store's progress over.
  const later = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
  await seedPutExecution(client, table, later);
  for (let round = 0; round < 3; round++) {
    if (!(await other.catchUpStatusIndex()).behind) break;
  }
  assert.deepEqual((await ids(other, "RUNNING")).sort(), [exe.id, later.id].sort());
  const again = await store.catchUpStatusIndex();
  assert.equal(again.scanned, 0, "the new stream's scan is done once");
});

Deno.test("catchUpStatusIndex() passes over an execution too big to take its index entry", async () => {
  using client = testClient(REGION);
  const prefix = uniqueName("sfh");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  const table = store.tables.executions.name;
  await store.catchUpStatusIndex();
  // Python's Put of an item just under 400 KB: the two attributes of its entry do not fit.
  const big = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
  const bare = JSON.stringify({ ...big, context: { pad: "" } }).length;
  for (let size = 409_600 - 2;; size -= 8) {
    big.context = { pad: "x".repeat(size - bare - 61) };
    try {
      await seedPutExecution(client, table, big);
      break;
    } catch (error) {
      if (size < 409_000) throw error;
    }
  }
  const small = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
  await seedPutExecution(client, table, small);
  const round = await store.catchUpStatusIndex();
  assert.equal(round.indexed, 1);
  assert.deepEqual(await ids(store, "RUNNING"), [small.id]);
  // Read once: the next round goes on past it (it only reads the entry written above).
  assert.equal((await store.catchUpStatusIndex()).indexed, 0);
  assert.ok((await store.listExecutions({ scan: true })).items.some((s) => s.id === big.id));
});

Deno.test("an execution deleted and written again at the same version is listed in its new status", async () => {
  using writer = testClient(REGION);
  const prefix = uniqueName("sfh");
  const exe = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
  const client = testClient(REGION);
  let table = "";
  let putAgain = false;
  // While the feed's write for the first row is on its way, the id is written again.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { UpdateExpression?: string; Key?: { id?: { S?: string } } };
      if (
        !putAgain && context.commandName === "UpdateItemCommand" &&
        input.Key?.id?.S === exe.id && /#ss = :ss/.test(input.UpdateExpression ?? "")
      ) {
        putAgain = true;
        await seedPutExecution(writer, table, { ...exe, status: "DONE" } as Execution);
      }
      return next(args);
    },
    { step: "initialize", name: "putAgain" },
  );
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  await using feed = new DynamoDBStore(client, { prefix, otherWriters: true });
  table = store.tables.executions.name;
  await feed.catchUpStatusIndex();
  await seedPutExecution(writer, table, exe);
  await writer.send(new DeleteItemCommand({ TableName: table, Key: { id: { S: exe.id } } }));
  await feed.catchUpStatusIndex();
  assert.ok(putAgain);
  await feed.catchUpStatusIndex();
  assert.deepEqual(await ids(store, "RUNNING"), []);
  assert.deepEqual(await ids(store, "DONE"), [exe.id]);
  client.destroy();
});

Deno.test("a relay pass does not wait for the status feed's round", async (t) => {
  using writer = testClient(REGION);
  const prefix = uniqueName("sfh");
  await using reader = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
  });
  await using proxy = new FaultProxy(endpoint());
  // Calls about the executions table's stream answer 2 s late: the status feed's round. (A pass
  // reads its own table's stream first, in the same call, with otherWriters: true: those
  // calls are not delayed.)
  proxy.script = {
    request: (info) =>
      info.operation === "?" && info.body.includes("_executions")
        ? { kind: "delay", ms: 2000 }
        : { kind: "pass" },
  };
  const client = new DynamoDBClient({
    endpoint: proxy.endpoint,
    region: REGION,
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  const timed = async (f: () => Promise<unknown>) => {
    const started = performance.now();
    await f();
    return performance.now() - started;
  };
  await t.step("the pass delivers at once; the round goes on behind it", async () => {
    // ensureTables turned the stream on (the reader, a default store, does not).
    await using store = await DynamoDBStore.create({
      endpoint: endpoint(),
      region: REGION,
      prefix,
      otherWriters: true,
    });
    await using feed = new DynamoDBStore(client, { prefix, otherWriters: true });
    const exe = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
    await seedPutExecution(writer, store.tables.executions.name, exe);
    const ms = await timed(() => relayOutbox(feed, () => Promise.resolve()));
    assert.ok(ms < 1500, `the pass took ${Math.round(ms)} ms`);
    for (let tries = 0; !(await ids(reader, "RUNNING")).includes(exe.id); tries++) {
      assert.ok(tries < 60, "the round never wrote the entry");
      await pause(500);
    }
  });
  await t.step("closing the store lets the round end first, and gives its lease back", async () => {
    const feed = new DynamoDBStore(client, { prefix, otherWriters: true });
    const exe = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
    await seedPutExecution(writer, feed.tables.executions.name, exe);
    await relayOutbox(feed, () => Promise.resolve());
    // A cron pass's store closes right after the pass: the round it left running ends (at its
    // 20 s at most) and is saved, rather than lost.
    const ms = await timed(() => feed.close());
    assert.ok(ms > 1500 && ms < 25_000, `close() took ${Math.round(ms)} ms`);
    assert.ok((await ids(reader, "RUNNING")).includes(exe.id));
    await using next = new DynamoDBStore(testClient(REGION), { prefix, otherWriters: true });
    assert.equal((await next.catchUpStatusIndex()).skipped, null);
  });
  client.destroy();
});

Deno.test("a round reads a closed shard past its empty pages, as AWS may serve them", async () => {
  using client = testClient(REGION);
  const prefix = uniqueName("sfh");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  const table = store.tables.executions.name;
  // A stream served as AWS documents GetRecords: "it might take multiple calls to get to a
  // portion of the shard that contains stream records" (a trimmed start, say).
  let shards: Shard[] = [];
  let pages: StreamRecord[][] = [];
  const streams = {
    send: (command: unknown) => {
      if (command instanceof DescribeStreamCommand) {
        return Promise.resolve({ StreamDescription: { StreamStatus: "ENABLED", Shards: shards } });
      }
      if (command instanceof GetShardIteratorCommand) {
        return Promise.resolve({ ShardIterator: "0" });
      }
      const at = Number((command as GetRecordsCommand).input.ShardIterator);
      return Promise.resolve({
        Records: pages[at] ?? [],
        NextShardIterator: at + 1 < pages.length ? String(at + 1) : undefined,
      });
    },
    destroy() {},
  } as unknown as StreamsSender;
  const feed = new StatusFeed(() => streams);
  const ctx = { client, tables: store.tables, now: Date.now, feed };
  assert.equal((await feed.round(ctx)).scanned, 0, "the scan of the empty table is done");
  const exe = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
  await seedPutExecution(client, table, exe);
  const item = (await client.send(
    new GetItemCommand({ TableName: table, Key: { id: { S: exe.id } }, ConsistentRead: true }),
  )).Item!;
  const record: StreamRecord = {
    eventName: "INSERT",
    dynamodb: { Keys: { id: { S: exe.id } }, NewImage: item as never, SequenceNumber: "100" },
  };
  shards = [{
    ShardId: "shardId-1",
    SequenceNumberRange: { StartingSequenceNumber: "1", EndingSequenceNumber: "200" },
  }];
  pages = [[], [], [record], []];
  const round = await feed.round(ctx);
  assert.equal(round.indexed, 1, JSON.stringify(round));
  assert.deepEqual(await ids(store, "RUNNING"), [exe.id]);
});

Deno.test("a round that outlives its lease renews it page by page: another store's rounds meanwhile are skipped as leased", async () => {
  // One clock for both stores, which A's writes move: 0.2 s each. A page of the stream (100
  // records) is 20 s of it, within the 30 s lease; the round (800 records) is 160 s, past it.
  let t = Date.now();
  const now = () => t;
  const prefix = uniqueName("sfl");
  using client = testClient(REGION);
  const executions = `${prefix}_executions`;
  client.middlewareStack.add(
    (next, context) => (args) => {
      const input = args.input as { TableName?: string };
      if (context.commandName === "UpdateItemCommand" && input.TableName === executions) t += 200;
      return next(args);
    },
    { step: "initialize", name: "clockMovesWithWrites" },
  );
  await using a = new DynamoDBStore(client, { prefix, now, otherWriters: true });
  await a.ensureTables();
  await using b = new DynamoDBStore(testClient(REGION), { prefix, now, otherWriters: true });
  await a.catchUpStatusIndex(); // the one-off scan of an empty table
  using writer = testClient(REGION);
  const exes = Array.from(
    { length: 800 },
    () => newExecution({ definition_id: "d", status: "RUNNING", version: 1 }),
  );
  for (let i = 0; i < exes.length; i += 25) {
    await Promise.all(
      exes.slice(i, i + 25).map((exe) => seedPutExecution(writer, executions, exe)),
    );
  }
  const round = a.catchUpStatusIndex();
  let done = false;
  round.finally(() => done = true);
  const others: (string | null)[] = [];
  while (!done) {
    await pause(50);
    if (!done) others.push((await b.catchUpStatusIndex()).skipped);
  }
  const report = await round;
  assert.equal(report.indexed, 800, JSON.stringify(report));
  assert.ok(others.length >= 3, `the round took ${others.length} of B's tries`);
  assert.deepEqual(new Set(others.slice(0, -1)), new Set(["leased"]), JSON.stringify(others));
});
