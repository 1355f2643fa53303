import assert from "node:assert/strict";
import { DeleteItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newEvent, newExecution } from "../../mod.ts";
import { endpoint, freshStore, testClient } from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";
import { putAll } from "../_support/put_all.ts";

Deno.test("dueTimers() reads every page when the timers table is larger than one 1 MB scan page", async () => {
  await using store = await freshStore();
  using client = testClient();
  // 1,400 timers of ~1 KB each: well over the 1 MB a single Scan page returns.
  const pad = "p".repeat(1000);
  await putAll(
    client,
    store.tables.timers.name,
    Array.from({ length: 1400 }, (_, i) => ({
      execution_id: { S: `exe-${i % 7}` },
      path: { S: `${pad}-${i}` },
      fire_at: { N: String(i % 2 === 0 ? i : 1e10 + i) },
    })),
    8,
  );
  const due = await store.dueTimers(1e9, { scan: true }); // rows as another writer writes them
  assert.equal(due.length, 700);
  assert.deepEqual(due.map((x) => x.fireAt), Array.from({ length: 700 }, (_, i) => i * 2));
});

Deno.test("trace indexes stay contiguous when another store instance appended steps in between", async () => {
  const first = await freshStore({ traceMax: 3 });
  await using second = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix: first.tables.executions.name.replace(/_executions$/, ""),
    traceMax: 3,
  });
  try {
    const exe = newExecution({ definition_id: "t" });
    await first.commit(exe, { trace: { by: "first", n: 1 } }); // first caches index 1
    const other = (await second.load(exe.id))!;
    for (let n = 2; n <= 6; n++) await second.commit(other, { trace: { by: "second", n } });
    exe.version = other.version;
    await first.commit(exe, { trace: { by: "first", n: 7 } });
    await first.appendTrace(exe.id, { by: "first", n: 8 });
    await second.appendTrace(exe.id, { by: "second", n: 9 });
    assert.deepEqual(await first.readTrace(exe.id), [
      { by: "first", n: 7, index: 6 },
      { by: "first", n: 8, index: 7 },
      { by: "second", n: 9, index: 8 },
    ]);
  } finally {
    await first.close();
  }
});

Deno.test("outbox seqs rise per execution in commit order across store instances", async () => {
  const seedStore = await freshStore();
  const prefix = seedStore.tables.executions.name.replace(/_executions$/, "");
  await seedStore.close();
  const stores = await Promise.all(
    [1, 2, 3].map(() => DynamoDBStore.create({ endpoint: endpoint(), prefix, seqBlockSize: 50 })),
  );
  try {
    const exe = newExecution({ definition_id: "hop" });
    const order: number[] = [];
    for (let i = 0; i < 12; i++) {
      const store = stores[(i * 7) % 3]!; // hop between instances holding different blocks
      const current = (await store.load(exe.id)) ?? exe;
      const { outbox } = await store.commit(current, {
        emits: [{ target: null, event: newEvent("e", { i }) }, {
          target: null,
          event: newEvent("f", { i }),
        }],
      });
      order.push(...outbox);
    }
    for (let i = 1; i < order.length; i++) assert.ok(order[i - 1]! < order[i]!, `seqs ${order}`);
    const pending = await stores[0]!.pendingOutbox();
    assert.deepEqual(pending.map((e) => e.event.data.i), order.map((_, i) => Math.floor(i / 2)));
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
});

Deno.test("seqs stay ordered after a writer that keeps no watermark (the Python seed) wrote the execution", async () => {
  await using store = await freshStore({ seqBlockSize: 1000 });
  const exe = newExecution({ definition_id: "py" });
  const first = await store.commit(exe, { emits: [{ target: null, event: newEvent("a") }] });
  // A seed-algorithm writer: takes one seq from the counter, then Puts the whole item.
  using client = testClient();
  const { UpdateItemCommand } = await import("@aws-sdk/client-dynamodb");
  const counter = await client.send(
    new UpdateItemCommand({
      TableName: store.tables.counters.name,
      Key: { id: { S: "outbox" } },
      UpdateExpression: "ADD n :k",
      ExpressionAttributeValues: { ":k": { N: "1" } },
      ReturnValues: "UPDATED_NEW",
    }),
  );
  const pySeq = Number(counter.Attributes!.n!.N);
  exe.version = 2;
  await seedPutExecution(client, store.tables.executions.name, exe);
  await client.send(
    new PutItemCommand({
      TableName: store.tables.outbox.name,
      Item: {
        seq: { N: String(pySeq) },
        target_id: { NULL: true },
        event: { S: JSON.stringify(newEvent("py")) },
      },
    }),
  );
  const next = await store.commit(exe, { emits: [{ target: null, event: newEvent("b") }] });
  assert.ok(
    first.outbox[0]! < pySeq && pySeq < next.outbox[0]!,
    `${first.outbox} ${pySeq} ${next.outbox}`,
  );
  assert.equal(exe.version, 3);
});

Deno.test("expired dedupe marks read as absent when processedTtlSeconds is set", async () => {
  let now = Date.now(); // the store's clock: the mark expires when it moves on, not a sleep
  await using store = await freshStore({ processedTtlSeconds: 1, now: () => now });
  const exe = newExecution({ definition_id: "d" });
  await store.commit(exe, { processedEventId: "e1" });
  assert.equal(await store.isProcessed(exe.id, "e1"), true);
  now += 2100;
  assert.equal(await store.isProcessed(exe.id, "e1"), false);
  assert.equal((await store.loadForEvent(exe.id, "e1")).processed, false);
});

Deno.test("the trace stays contiguous around steps appended by a writer using the seed's algorithm", async () => {
  await using store = await freshStore({ traceMax: 3 });
  const exe = newExecution({ definition_id: "py" });
  await store.commit(exe, { trace: { by: "deno", n: 1 } });
  using client = testClient();
  // The seed's writer: Query the highest index, Put K, Delete K - traceMax, no guards.
  for (const k of [1, 2, 3]) {
    await client.send(
      new PutItemCommand({
        TableName: store.tables.trace.name,
        Item: {
          execution_id: { S: exe.id },
          idx: { N: String(k) },
          entry: { S: JSON.stringify({ by: "python", n: k }) },
        },
      }),
    );
    if (k >= 3) {
      await client.send(
        new DeleteItemCommand({
          TableName: store.tables.trace.name,
          Key: { execution_id: { S: exe.id }, idx: { N: String(k - 3) } },
        }),
      );
    }
  }
  await store.commit(exe, { trace: { by: "deno", n: 5 } });
  assert.deepEqual((await store.readTrace(exe.id)).map((s) => [s.index, s.by]), [[2, "python"], [
    3,
    "python",
  ], [4, "deno"]]);
});
