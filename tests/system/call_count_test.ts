// The Performance targets, asserted as DynamoDB call counts (never as times).
import assert from "node:assert/strict";
import {
  DynamoDBStateStore,
  DynamoDBStore,
  newEvent,
  newExecution,
  relayOutbox,
} from "../../mod.ts";
import { countingClient, uniqueName } from "../_support/env.ts";
import { seedAppendTrace } from "../_support/seed.ts";

Deno.test("DynamoDBStore makes one call per steady-state commit, loadForEvent and batch of 25 acks", async (t) => {
  using counting = countingClient();
  const { client, calls } = counting;
  const store = new DynamoDBStore(client, { prefix: uniqueName("calls") });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "d" });
  // The first commits of an execution in a process reserve seq blocks and read the trace end.
  await store.commit(exe, {
    emits: [{ target: null, event: newEvent("warm") }],
    spawns: [{ childId: "c0", rootPath: "r", context: {} }],
    trace: { n: 0 },
  });
  const measure = async (action: () => Promise<unknown>) => {
    calls.length = 0;
    await action();
    return [...calls];
  };

  await t.step(
    "a commit with emits, spawns, timers, a dedupe mark and a trace step: 1 call",
    async () => {
      for (let i = 1; i <= 5; i++) {
        const sent = await measure(() =>
          store.commit(exe, {
            emits: [{ target: "x", event: newEvent("e") }, {
              target: null,
              event: newEvent("f"),
            }],
            spawns: [{ childId: `c${i}`, rootPath: "fork", context: { i } }],
            processedEventId: `event-${i}`,
            timers: [
              { action: "schedule", path: "a", fireAt: 100 + i },
              { action: "cancel", path: "b" },
            ],
            trace: { n: i },
          })
        );
        assert.deepEqual(sent, ["TransactWriteItemsCommand"]);
      }
      assert.deepEqual(await measure(() => store.save(exe)), ["TransactWriteItemsCommand"]);
    },
  );

  await t.step("loadForEvent: 1 call", async () => {
    assert.deepEqual(await measure(() => store.loadForEvent(exe.id, "event-1")), [
      "BatchGetItemCommand",
    ]);
  });

  await t.step(
    "ackOutbox / ackSpawn of n seqs: ceil(n / 25) calls (ackOutbox: and one read of the entries before, one of their targets' holds after)",
    async () => {
      const seqs: number[] = [];
      const spawnSeqs: number[] = [];
      for (let i = 0; i < 6; i++) {
        const { outbox, spawns } = await store.commit(exe, {
          emits: Array.from({ length: 10 }, () => ({ target: null, event: newEvent("bulk") })),
          spawns: Array.from(
            { length: 5 },
            (_, j) => ({ childId: `s${i}-${j}`, rootPath: "r", context: {} }),
          ),
        });
        seqs.push(...outbox);
        spawnSeqs.push(...spawns);
      }
      const pending = (await store.pendingOutbox()).map((e) => e.seq);
      assert.equal(pending.length, 71);
      const sent = await measure(() => store.ackOutbox(pending));
      // The entries by key (their targets), the deletes, then the one target's hold: whether an
      // entry was a head (it releases its target).
      assert.deepEqual(sent, [
        "BatchGetItemCommand",
        ...Array(3).fill("BatchWriteItemCommand"),
        "BatchGetItemCommand",
      ]);
      assert.deepEqual(await store.pendingOutbox(), []);
      const spawnsSent = await measure(() => store.ackSpawn(spawnSeqs));
      assert.deepEqual(spawnsSent, Array(2).fill("BatchWriteItemCommand"));
    },
  );
});

Deno.test("with finishedTtlSeconds, a commit that finishes or reopens an execution is still one call, and deleteExecution is 4 + ceil(n / 25) per table", async () => {
  using counting = countingClient();
  const { client, calls } = counting;
  const store = new DynamoDBStore(client, {
    prefix: uniqueName("calls"),
    finishedTtlSeconds: 3600,
    processedTtlSeconds: 3600,
  });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "d", status: "RUNNING" });
  await store.commit(exe, {
    emits: [{ target: null, event: newEvent("warm") }],
    spawns: [{ childId: "c0", rootPath: "r", context: {} }],
    trace: { n: 0 },
  });
  for (const status of ["DONE", "RUNNING", "FAILED", "PENDING", "CANCELLED"] as const) {
    exe.status = status;
    calls.length = 0;
    await store.commit(exe, {
      emits: [{ target: "x", event: newEvent("e") }],
      spawns: [{ childId: `c-${status}`, rootPath: "fork", context: {} }],
      processedEventId: `event-${status}`,
      timers: [{ action: "schedule", path: "a", fireAt: 100 }, { action: "cancel", path: "b" }],
      trace: { status },
    });
    assert.deepEqual(calls, ["TransactWriteItemsCommand"], status);
  }
  calls.length = 0;
  assert.deepEqual(await store.deleteExecution(exe.id), {
    execution: true,
    timers: 1,
    trace: 6,
    processed: 5,
  });
  assert.deepEqual(calls.sort(), [
    ...Array(3).fill("BatchWriteItemCommand"),
    ...Array(3).fill("QueryCommand"),
    "TransactWriteItemsCommand", // the execution's delete, with an idempotency token
  ]);
});

Deno.test("a traced commit of a new execution takes 2 calls with no cached trace end, and still continues a ring another writer started", async (t) => {
  using counting = countingClient();
  const { client, calls } = counting;
  const store = new DynamoDBStore(client, {
    prefix: uniqueName("calls"),
    traceMax: 3,
  });
  await store.ensureTables();
  await t.step(
    "a new execution: one Query for the ring's end, then the transaction",
    async () => {
      const exe = newExecution({ definition_id: "d" });
      calls.length = 0;
      await store.commit(exe, { trace: { n: 0 } });
      assert.deepEqual(calls, ["QueryCommand", "TransactWriteItemsCommand"]);
      assert.deepEqual((await store.readTrace(exe.id)).map((s) => s.index), [0]);
    },
  );
  await t.step("a ring the seed already started for that id goes on from its end", async () => {
    const exe = newExecution({ definition_id: "d" });
    for (let n = 0; n < 5; n++) {
      await seedAppendTrace(client, store.tables.trace.name, exe.id, { by: "py" }, 2);
    }
    calls.length = 0;
    await store.commit(exe, { trace: { by: "deno" } });
    assert.deepEqual(calls, ["QueryCommand", "TransactWriteItemsCommand"]);
    assert.deepEqual((await store.readTrace(exe.id)).map((s) => [s.index, s.by]), [
      [3, "py"],
      [4, "py"],
      [5, "deno"],
    ]);
  });
});

Deno.test("DynamoDBStateStore makes one call per hset on a live hash, hdel, hget and hgetall", async () => {
  using counting = countingClient();
  const { client, calls } = counting;
  const state = new DynamoDBStateStore(client, { tableName: uniqueName("calls") });
  await state.ensureTable();
  await state.hset("k", "seed", 1);
  const measure = async (action: () => Promise<unknown>) => {
    calls.length = 0;
    await action();
    return [...calls];
  };
  assert.deepEqual(await measure(() => state.hset("k", "a", 1)), ["UpdateItemCommand"]);
  assert.deepEqual(await measure(() => state.hset("k", "a", 2)), ["UpdateItemCommand"]);
  assert.deepEqual(await measure(() => state.hdel("k", "a", "b")), ["UpdateItemCommand"]);
  assert.deepEqual(await measure(() => state.hget("k", "seed")), ["GetItemCommand"]);
  assert.deepEqual(await measure(() => state.hgetall("k")), ["GetItemCommand"]);
  assert.deepEqual(await measure(() => state.hset("new-key", "a", 1)), [
    "UpdateItemCommand",
    "PutItemCommand",
  ], "a first write: the failed update tells what is there, the seed writes the field");
  assert.deepEqual(await measure(() => state.hget("k", "absent")), ["GetItemCommand"]);
  assert.deepEqual(await measure(() => state.exists("k")), ["GetItemCommand"]);
  assert.deepEqual(await measure(() => state.ttl("k")), ["GetItemCommand"]);
  assert.deepEqual(await measure(() => state.expire("k", 100)), ["UpdateItemCommand"]);
  assert.deepEqual(await measure(() => state.hdel("new-key", "a")), [
    "UpdateItemCommand",
    "DeleteItemCommand",
  ], "removing the last field also deletes the emptied key");
});

/** The calls of a relayOutbox pass of 120 entries to 4 targets, sorted. */
async function passCalls(otherWriters: boolean): Promise<string[]> {
  using counting = countingClient();
  const { client, calls } = counting;
  const store = new DynamoDBStore(client, { prefix: uniqueName("calls"), otherWriters });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "d" });
  for (let i = 0; i < 6; i++) {
    await store.commit(exe, {
      emits: Array.from({ length: 20 }, (_, k) => ({
        target: `t${k % 4}`,
        event: newEvent("e"),
      })),
    });
  }
  // With otherWriters: true, a status feed round now: the pass then runs none (one every 10 s;
  // its calls: status_feed_test.ts).
  await store.catchUpStatusIndex();
  calls.length = 0;
  const report = await relayOutbox(store, () => Promise.resolve());
  assert.deepEqual([report.delivered, report.failed, report.setAside], [120, 0, 0]);
  await store.close();
  return calls.filter((name) => name.endsWith("Command")).sort();
}

/** What every pass of 120 entries to 4 targets sends, whatever the options. */
const PASS = [
  ...Array(8 + 8).fill("QueryCommand"), // one page of each shard: 120 entries, 126 a page
  "BatchGetItemCommand", // the 4 targets' holds
  ...Array(2).fill("BatchGetItemCommand"), // the 120 bodies
  ...Array(5).fill("BatchWriteItemCommand"), // the acknowledgements
  ...Array(2).fill("UpdateItemCommand"), // the relay lease, taken and given back
];

Deno.test("a relayOutbox pass of n entries is its lease, a Query per shard of the relay index's waiting and pending entries, one BatchGetItem of the targets' holds, ceil(n / 100) BatchGetItem and ceil(n / 25) BatchWriteItem calls", async () => {
  assert.deepEqual(await passCalls(false), [...PASS].sort());
});

Deno.test("with otherWriters: true, a relayOutbox pass also runs its table's feed round first", async () => {
  const calls = await passCalls(true);
  const extra = [...calls];
  for (const call of PASS) extra.splice(extra.indexOf(call), 1);
  console.log("a mixed pass's calls beyond the default's:", JSON.stringify(extra));
  // The outbox feed's round (its Streams calls go to its own client): the table's stream looked
  // up once, its lease taken and its checkpoint saved, the one-off backfill's page, and one write
  // of each target's `recent` lists for our own entries (what another writer's entry to the
  // target waits for). No probe, no counter read.
  assert.equal(extra.filter((c) => c === "DescribeTableCommand").length, 1);
  assert.equal(extra.filter((c) => c === "BatchGetItemCommand").length, 0);
  assert.ok(extra.filter((c) => c === "ScanCommand").length <= 1);
  const updates = extra.filter((c) => c === "UpdateItemCommand").length;
  // The feed's lease and checkpoint (2), maybe a renewal, and the 4 targets' lists once per page
  // of records (the 120 entries' records come in 2).
  assert.ok(updates >= 10 && updates <= 11, `${updates} UpdateItem`);
  assert.deepEqual(
    extra.filter((c) => !/^(DescribeTable|BatchGetItem|Scan|UpdateItem)Command$/.test(c)),
    [],
  );
});

Deno.test("a commit's transaction never waits for a seq block: the next one is reserved beside a send once the current one is half used", async () => {
  using counting = countingClient();
  const { client } = counting;
  // Each call's start (`>Name`) and end (`<Name`), in the order they happen.
  const events: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context.commandName as string).replace(/Command$/, "");
      events.push(`>${name}`);
      try {
        return await next(args);
      } finally {
        events.push(`<${name}`);
      }
    },
    { step: "initialize", name: "callSpans" },
  );
  const store = new DynamoDBStore(client, { prefix: uniqueName("ahead"), seqBlockSize: 4 });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "d" });
  await store.commit(exe); // the insert: no seqs
  const seqs: number[] = [];
  for (let i = 0; i < 12; i++) {
    events.length = 0;
    const { outbox } = await store.commit(exe, {
      emits: [{ target: "x", event: newEvent("e") }, { target: null, event: newEvent("f") }],
    });
    seqs.push(...outbox);
    const sent = events.indexOf(">TransactWriteItems");
    const waited = events.slice(0, sent).filter((e) => e === "<UpdateItem");
    // The first commit reserves its block first; every later one sends its transaction at once.
    if (i > 0) assert.deepEqual(waited, [], `commit ${i + 1}: ${events.join(" ")}`);
  }
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "seqs rise");
  assert.equal(new Set(seqs).size, seqs.length);
});
