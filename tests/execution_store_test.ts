import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, type Execution, newEvent, newExecution, StoreConflict } from "../mod.ts";
import { endpoint, freshStore, testClient } from "./_env.ts";

/** Everything the store holds besides executions, to prove a failed commit wrote nothing. */
async function sideTables(store: DynamoDBStore, id: string) {
  return {
    outbox: await store.pendingOutbox(),
    spawns: await store.pendingSpawns(),
    timers: await store.dueTimers(1e12),
    trace: await store.readTrace(id),
  };
}

Deno.test("save() inserts at version 1 and sequential saves reach version 3", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "order" });
  await store.save(exe);
  assert.equal(exe.version, 1);
  assert.equal((await store.load(exe.id))?.version, 1);
  await store.save(exe);
  await store.save(exe);
  assert.equal(exe.version, 3);
  assert.equal((await store.load(exe.id))?.version, 3);
});

Deno.test("load() round-trips context and unknown fields untouched, and returns null for a missing id", async () => {
  await using store = await freshStore();
  const exe = newExecution({
    definition_id: "order",
    context: { total: 42.5, items: [{ sku: "a", qty: 2 }], note: "ünïcødé \u{1F600}", none: null },
    history: { "order.shipping": "order.shipping.packed" },
    future_field: { from: "a newer engine", list: [1, 2, 3] },
  });
  await store.save(exe);
  const loaded = await store.load(exe.id);
  assert.deepEqual(loaded, { ...exe });
  assert.deepEqual(loaded?.future_field, { from: "a newer engine", list: [1, 2, 3] });
  assert.equal(await store.load("no-such-id"), null);
});

Deno.test("a stale save raises StoreConflict with expected and found, and leaves the winner's document", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "order" });
  await store.save(exe);
  const a = (await store.load(exe.id))!;
  const b = (await store.load(exe.id))!;
  a.context = { winner: "a" };
  await store.save(a);
  b.context = { winner: "b" };
  const error = await store.save(b).then(() => null, (e) => e);
  assert.ok(error instanceof StoreConflict, `expected StoreConflict, got ${error}`);
  assert.equal(error.name, "StoreConflict");
  assert.equal(error.executionId, exe.id);
  assert.equal(error.expected, 1);
  assert.equal(error.found, 2);
  assert.equal(b.version, 1, "the loser's in-memory version is unchanged");
  assert.deepEqual((await store.load(exe.id))?.context, { winner: "a" });
});

Deno.test("a second insert of one id conflicts", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "order" });
  await store.save(exe);
  const twin = newExecution({ definition_id: "order", id: exe.id });
  const error = await store.save(twin).then(() => null, (e) => e);
  assert.ok(error instanceof StoreConflict);
  assert.equal(error.expected, 0);
  assert.equal(error.found, 1);
  assert.equal(twin.version, 0);
});

Deno.test("commit() writes outbox entries and the dedupe mark also on the first insert", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "order" });
  const event = newEvent("order.created", { n: 1 });
  const result = await store.commit(exe, {
    emits: [{ target: "other", event }],
    processedEventId: "incoming-1",
  });
  assert.equal(result.version, 1);
  assert.equal(result.outbox.length, 1);
  assert.deepEqual(await store.pendingOutbox(), [
    { seq: result.outbox[0], targetId: "other", event },
  ]);
  assert.equal(await store.isProcessed(exe.id, "incoming-1"), true);
  assert.equal(await store.isProcessed(exe.id, "incoming-2"), false);
});

Deno.test("the outbox comes back ordered by seq across executions, and a null target round-trips", async () => {
  await using store = await freshStore();
  const a = newExecution({ definition_id: "d" });
  const b = newExecution({ definition_id: "d" });
  const seqs: number[] = [];
  for (const exe of [a, b, a, b]) {
    const { outbox } = await store.commit(exe, {
      emits: [{ target: null, event: newEvent("x") }, { target: exe.id, event: newEvent("y") }],
    });
    seqs.push(...outbox);
  }
  const pending = await store.pendingOutbox();
  assert.deepEqual(pending.map((e) => e.seq), [...seqs].sort((x, y) => x - y));
  assert.equal(new Set(seqs).size, 8);
  assert.equal(pending.filter((e) => e.targetId === null).length, 4);
  await store.ackOutbox(pending.map((e) => e.seq));
  assert.deepEqual(await store.pendingOutbox(), []);
});

Deno.test("a lost CAS leaks no outbox entry, spawn, dedupe mark, timer or trace step", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "order" });
  await store.commit(exe, { trace: { step: 1 } });
  const stale = structuredClone(exe);
  await store.save(exe);
  const before = await sideTables(store, exe.id);
  const error = await store.commit(stale, {
    emits: [{ target: null, event: newEvent("leak") }],
    spawns: [{ childId: "child-1", rootPath: "fork.a", context: { x: 1 } }],
    processedEventId: "evt-leak",
    timers: [{ action: "schedule", path: "wait", fireAt: 1 }],
    trace: { step: "leak" },
  }).then(() => null, (e) => e);
  assert.ok(error instanceof StoreConflict);
  assert.equal(stale.version, 1);
  assert.deepEqual(await sideTables(store, exe.id), before);
  assert.equal(await store.isProcessed(exe.id, "evt-leak"), false);
});

Deno.test("spawns round-trip in seq order and ackSpawn removes them", async () => {
  await using store = await freshStore();
  const parent = newExecution({ definition_id: "fork" });
  const { spawns } = await store.commit(parent, {
    spawns: [
      { childId: "c1", rootPath: "fork.left", context: { side: "left" } },
      { childId: "c2", rootPath: "fork.right", context: { side: "right", n: [1, 2] } },
    ],
  });
  assert.equal(spawns.length, 2);
  assert.ok(spawns[0]! < spawns[1]!);
  assert.deepEqual(await store.pendingSpawns(), [
    {
      seq: spawns[0],
      parentId: parent.id,
      childId: "c1",
      rootPath: "fork.left",
      context: { side: "left" },
    },
    {
      seq: spawns[1],
      parentId: parent.id,
      childId: "c2",
      rootPath: "fork.right",
      context: { side: "right", n: [1, 2] },
    },
  ]);
  await store.ackSpawn(spawns[0]!);
  assert.deepEqual((await store.pendingSpawns()).map((s) => s.childId), ["c2"]);
  await store.ackSpawn([spawns[1]!]);
  assert.deepEqual(await store.pendingSpawns(), []);
});

Deno.test("timers", async (t) => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "t" });
  await store.save(exe);

  await t.step("a scheduled timer is not due before its time and due at it", async () => {
    await store.commit(exe, { timers: [{ action: "schedule", path: "wait", fireAt: 100.5 }] });
    assert.deepEqual(await store.dueTimers(100), []);
    assert.deepEqual(await store.dueTimers(100.5), [{
      executionId: exe.id,
      path: "wait",
      fireAt: 100.5,
    }]);
  });

  await t.step("re-scheduling a path replaces it", async () => {
    await store.commit(exe, { timers: [{ action: "schedule", path: "wait", fireAt: 200 }] });
    assert.deepEqual(await store.dueTimers(150), []);
    assert.deepEqual((await store.dueTimers(1e9)).map((x) => x.fireAt), [200]);
  });

  await t.step("deleteTimer with a stale fireAt is a no-op returning false", async () => {
    assert.equal(await store.deleteTimer(exe.id, "wait", 100.5), false);
    assert.equal((await store.dueTimers(1e9)).length, 1);
    assert.equal(await store.deleteTimer(exe.id, "wait", 200), true);
    assert.deepEqual(await store.dueTimers(1e9), []);
  });

  await t.step(
    "cancel removes a timer and two ops on one path in one commit mean the last one",
    async () => {
      await store.commit(exe, {
        timers: [
          { action: "schedule", path: "a", fireAt: 10 },
          { action: "schedule", path: "b", fireAt: 5 },
          { action: "cancel", path: "a" },
          { action: "schedule", path: "c", fireAt: 1 },
          { action: "schedule", path: "c", fireAt: 3 },
        ],
      });
      assert.deepEqual(await store.dueTimers(1e9), [
        { executionId: exe.id, path: "c", fireAt: 3 },
        { executionId: exe.id, path: "b", fireAt: 5 },
      ]);
      await store.commit(exe, {
        timers: [{ action: "cancel", path: "b" }, { action: "cancel", path: "never-set" }],
      });
      assert.deepEqual((await store.dueTimers(1e9)).map((x) => x.path), ["c"]);
    },
  );
});

Deno.test("dueTimers() reads every page when the timers table is larger than one 1 MB scan page", async () => {
  await using store = await freshStore();
  const client = testClient();
  try {
    // 1,400 timers of ~1 KB each: well over the 1 MB a single Scan page returns.
    const pad = "p".repeat(1000);
    const writes = [];
    for (let i = 0; i < 1400; i++) {
      writes.push(client.send(
        new PutItemCommand({
          TableName: store.tables.timers.name,
          Item: {
            execution_id: { S: `exe-${i % 7}` },
            path: { S: `${pad}-${i}` },
            fire_at: { N: String(i % 2 === 0 ? i : 1e10 + i) },
          },
        }),
      ));
      if (writes.length === 50) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes);
    const due = await store.dueTimers(1e9);
    assert.equal(due.length, 700);
    assert.deepEqual(due.map((x) => x.fireAt), Array.from({ length: 700 }, (_, i) => i * 2));
  } finally {
    client.destroy();
  }
});

Deno.test("the trace ring with traceMax = 2 keeps indexes [2, 3] after three steps and [3, 4] after four", async () => {
  await using store = await freshStore({ traceMax: 2 });
  const exe = newExecution({ definition_id: "t" });
  for (let i = 1; i <= 3; i++) await store.commit(exe, { trace: { step: i } });
  assert.deepEqual(await store.readTrace(exe.id), [{ step: 2, index: 2 }, { step: 3, index: 3 }]);
  await store.commit(exe, { trace: { step: 4 } });
  assert.deepEqual((await store.readTrace(exe.id)).map((s) => s.index), [3, 4]);
});

Deno.test("a cancelled commit leaves no gap in the trace", async () => {
  await using store = await freshStore({ traceMax: 2 });
  const exe = newExecution({ definition_id: "t" });
  await store.commit(exe, { trace: { step: 1 } });
  const stale = structuredClone(exe);
  await store.commit(exe, { trace: { step: 2 } });
  await assert.rejects(store.commit(stale, { trace: { step: "lost" } }), StoreConflict);
  await store.commit(exe, { trace: { step: 3 } });
  assert.deepEqual(await store.readTrace(exe.id), [{ step: 2, index: 2 }, { step: 3, index: 3 }]);
});

Deno.test("no trace is written unless a commit carries one; traceMax 0 keeps every step", async () => {
  await using store = await freshStore({ traceMax: 0 });
  const exe = newExecution({ definition_id: "t" });
  await store.save(exe);
  assert.deepEqual(await store.readTrace(exe.id), []);
  for (let i = 1; i <= 5; i++) await store.commit(exe, { trace: { i } });
  await store.appendTrace(exe.id, { i: 6 });
  assert.deepEqual((await store.readTrace(exe.id)).map((s) => s.index), [1, 2, 3, 4, 5, 6]);
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
      { by: "first", n: 7, index: 7 },
      { by: "first", n: 8, index: 8 },
      { by: "second", n: 9, index: 9 },
    ]);
  } finally {
    await first.close();
  }
});

Deno.test("of 16 concurrent commits from one version exactly one wins and one emit lands", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "race" });
  await store.save(exe);
  const copies = Array.from({ length: 16 }, () => structuredClone(exe));
  const results = await Promise.allSettled(copies.map((copy, i) =>
    store.commit(copy, {
      emits: [{ target: null, event: newEvent("won", { i }) }],
      processedEventId: `e-${i}`,
      trace: { i },
    })
  ));
  const won = results.filter((r) => r.status === "fulfilled");
  const lost = results.filter((r) => r.status === "rejected");
  assert.equal(won.length, 1);
  for (const r of lost) {
    assert.ok(
      (r as PromiseRejectedResult).reason instanceof StoreConflict,
      String((r as PromiseRejectedResult).reason),
    );
  }
  assert.equal((await store.pendingOutbox()).length, 1);
  assert.equal((await store.readTrace(exe.id)).length, 1);
  assert.equal((await store.load(exe.id))?.version, 2);
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
  const client = testClient();
  try {
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
    await client.send(
      new PutItemCommand({
        TableName: store.tables.executions.name,
        Item: {
          id: { S: exe.id },
          data: { S: JSON.stringify(exe) },
          version: { N: "2" },
          definition_id: { S: exe.definition_id },
        },
      }),
    );
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
  } finally {
    client.destroy();
  }
});

Deno.test("loadForEvent() agrees with isProcessed() and knows unknown ids", async () => {
  await using store = await freshStore();
  assert.deepEqual(await store.loadForEvent("unknown", "e"), { execution: null, processed: false });
  const exe = newExecution({ definition_id: "d" });
  await store.commit(exe, { processedEventId: "e1" });
  for (const eventId of ["e1", "e2"]) {
    const { execution, processed } = await store.loadForEvent(exe.id, eventId);
    assert.deepEqual(execution, { ...exe });
    assert.equal(processed, await store.isProcessed(exe.id, eventId));
  }
  assert.equal((await store.loadForEvent(exe.id, "e1")).processed, true);
});

Deno.test("expired dedupe marks read as absent when processedTtlSeconds is set", async () => {
  await using store = await freshStore({ processedTtlSeconds: 1 });
  const exe = newExecution({ definition_id: "d" });
  await store.commit(exe, { processedEventId: "e1" });
  assert.equal(await store.isProcessed(exe.id, "e1"), true);
  await new Promise((r) => setTimeout(r, 2100));
  assert.equal(await store.isProcessed(exe.id, "e1"), false);
  assert.equal((await store.loadForEvent(exe.id, "e1")).processed, false);
});

async function seedListing(store: DynamoDBStore): Promise<Execution[]> {
  const all: Execution[] = [];
  for (let i = 0; i < 30; i++) {
    const exe = newExecution({
      definition_id: i % 3 === 0 ? "billing" : "order",
      status: (["RUNNING", "DONE", "FAILED"] as const)[i % 3 === 0 ? 0 : i % 2 + 1],
      parent_id: i % 5 === 0 ? "parent" : null,
    });
    all.push(exe);
  }
  await Promise.all(all.map((exe) => store.save(exe)));
  return all;
}

async function walk(store: DynamoDBStore, options: Parameters<DynamoDBStore["listExecutions"]>[0]) {
  const seen: string[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.listExecutions({ ...options, cursor });
    seen.push(...page.items.map((s) => s.id));
    sizes.push(page.items.length);
    cursor = page.nextCursor;
  } while (cursor);
  return { seen, sizes };
}

Deno.test("listExecutions() filters and pages", async (t) => {
  await using store = await freshStore();
  const all = await seedListing(store);
  const ids = (pred: (e: Execution) => boolean) => all.filter(pred).map((e) => e.id).sort();

  await t.step(
    "pages hold exactly `limit` matches, terminate, and cover every execution once",
    async () => {
      const { seen, sizes } = await walk(store, { limit: 7 });
      assert.deepEqual([...seen].sort(), ids(() => true));
      assert.deepEqual(sizes, [7, 7, 7, 7, 2]);
    },
  );

  await t.step("by definition (server-side)", async () => {
    const { seen } = await walk(store, { definitionId: "billing", limit: 4 });
    assert.deepEqual(seen.sort(), ids((e) => e.definition_id === "billing"));
  });

  await t.step("by status, one or several (OR)", async () => {
    assert.deepEqual(
      (await walk(store, { status: "DONE", limit: 3 })).seen.sort(),
      ids((e) => e.status === "DONE"),
    );
    assert.deepEqual(
      (await walk(store, { status: ["DONE", "FAILED"], limit: 5 })).seen.sort(),
      ids((e) => e.status === "DONE" || e.status === "FAILED"),
    );
  });

  await t.step("roots only, and every filter combined", async () => {
    assert.deepEqual(
      (await walk(store, { rootsOnly: true, limit: 6 })).seen.sort(),
      ids((e) => e.parent_id === null),
    );
    const { seen, sizes } = await walk(store, {
      definitionId: "order",
      status: "FAILED",
      rootsOnly: true,
      limit: 2,
    });
    assert.deepEqual(
      seen.sort(),
      ids((e) => e.definition_id === "order" && e.status === "FAILED" && e.parent_id === null),
    );
    assert.ok(sizes.slice(0, -1).every((n) => n === 2));
  });

  await t.step("a summary carries the engine's fields", async () => {
    const page = await store.listExecutions({ definitionId: "billing", limit: 1 });
    const exe = all.find((e) => e.id === page.items[0]!.id)!;
    assert.deepEqual(page.items[0], {
      id: exe.id,
      definition_id: "billing",
      status: "RUNNING",
      outcome: null,
      active_path: null,
      version: 1,
      parent_id: exe.parent_id,
    });
  });
});
