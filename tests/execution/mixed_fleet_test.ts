// The execution store in a mixed fleet (issue #10): other writers on the same tables (another
// deploy with another traceMax, the Python seed's algorithm) and the mistakes users make.
import assert from "node:assert/strict";
import { ListTablesCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  type Execution,
  type ExecutionStore,
  InvalidCursor,
  newEvent,
  newExecution,
  StoreClosed,
} from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { countingClient, endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";
import { seedAppendTrace } from "../_support/seed.ts";

const prefixOf = (store: DynamoDBStore) => store.tables.executions.name.replace(/_executions$/, "");
const indexes = async (store: ExecutionStore, id: string) =>
  (await store.readTrace(id)).map((step) => step.index as number);

/** Both backends, each on fresh tables, with a way to count what the DynamoDB one sends. */
async function backends(
  traceMax = 200,
): Promise<{ name: string; store: ExecutionStore; sent: () => string[]; close(): void }[]> {
  const { client, calls } = countingClient();
  const dynamo = new DynamoDBStore(client, { prefix: uniqueName("mixed"), traceMax });
  await dynamo.ensureTables();
  calls.length = 0;
  return [
    {
      name: "DynamoDBStore",
      store: dynamo,
      sent: () => calls.splice(0),
      close: () => client.destroy(),
    },
    { name: "MemoryStore", store: new MemoryStore({ traceMax }), sent: () => [], close() {} },
  ];
}

Deno.test("a traceMax 4 store keeps committing after a traceMax 2 store trimmed the same ring", async () => {
  const a = await freshStore({ traceMax: 4 });
  await using b = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix: prefixOf(a),
    traceMax: 2,
    conflictRetries: 2,
  });
  try {
    const exe = newExecution({ definition_id: "fleet" });
    for (let n = 0; n < 6; n++) await a.commit(exe, { trace: { by: "a", n } });
    const other = (await b.load(exe.id))!;
    for (let n = 6; n < 8; n++) await b.commit(other, { trace: { by: "b", n } });
    const again = (await a.load(exe.id))!;
    await a.commit(again, { trace: { by: "a", n: 8 } });
    await a.appendTrace(exe.id, { by: "a", n: 9 });
    await a.commit(again, { trace: { by: "a", n: 10 } });
    const trace = await a.readTrace(exe.id);
    // A's window (the last 4) is whole and contiguous; B's smaller window left older steps
    // (over-retained, never over-deleted).
    assert.deepEqual(trace.slice(-4).map((s) => [s.index, s.n]), [[7, 7], [8, 8], [9, 9], [
      10,
      10,
    ]]);
    assert.deepEqual(trace.map((s) => s.index), [2, 3, 7, 8, 9, 10]);
  } finally {
    await a.close();
  }
});

Deno.test("traced commits never block on a ring a seed-algorithm writer with another trace_max appends to", async (t) => {
  for (const seedMax of [1, 2, 3, 7]) {
    await t.step(`seed trace_max ${seedMax}, ours 4`, async () => {
      await using store = await freshStore({ traceMax: 4, conflictRetries: 2 });
      using client = testClient();
      const exe = newExecution({ definition_id: "py" });
      const written: number[] = [];
      for (let round = 0; round < 4; round++) {
        await store.commit(exe, { trace: { by: "deno", round } });
        written.push((await indexes(store, exe.id)).at(-1)!);
        for (let k = 0; k < 3; k++) {
          written.push(
            await seedAppendTrace(client, store.tables.trace.name, exe.id, { by: "py" }, seedMax),
          );
        }
        await store.appendTrace(exe.id, { by: "deno-append", round });
        written.push((await indexes(store, exe.id)).at(-1)!);
      }
      // Every append took the highest index + 1: 0, 1, 2, ... with no gap and no duplicate.
      assert.deepEqual(written, written.map((_, i) => i));
      const ring = await indexes(store, exe.id);
      const last = written.length - 1;
      // The last min(ours, seed's) steps are there, and the step before our window is gone.
      const kept = Math.min(4, seedMax);
      assert.deepEqual(
        ring.slice(-kept),
        Array.from({ length: kept }, (_, i) => last - kept + 1 + i),
      );
      assert.ok(!ring.includes(last - 4), `ring ${ring} still holds ${last - 4}`);
    });
  }
});

Deno.test("trace indexes start at 0 like the seed's, and rings started at 1 keep working", async (t) => {
  await using store = await freshStore({ traceMax: 3 });
  using client = testClient();
  await t.step("a new ring starts at 0", async () => {
    const exe = newExecution({ definition_id: "zero" });
    await store.commit(exe, { trace: { n: 0 } });
    await store.appendTrace(exe.id, { n: 1 });
    assert.deepEqual(await indexes(store, exe.id), [0, 1]);
    assert.deepEqual(await indexes(store, "never-committed"), []);
    await store.appendTrace("never-committed", { n: 0 });
    assert.deepEqual(await indexes(store, "never-committed"), [0]);
  });
  await t.step("a ring the seed started at 0 keeps exactly traceMax steps", async () => {
    const exe = newExecution({ definition_id: "py" });
    await seedAppendTrace(client, store.tables.trace.name, exe.id, { by: "py" }, 3);
    for (let n = 1; n <= 4; n++) await store.commit(exe, { trace: { n } });
    assert.deepEqual(await indexes(store, exe.id), [2, 3, 4]);
  });
  await t.step("a ring an earlier deploy started at 1 goes on from its end", async () => {
    const exe = newExecution({ definition_id: "old" });
    for (const index of [1, 2, 3]) {
      await seedAppendTrace(client, store.tables.trace.name, exe.id, { index }, 0);
    }
    await store.commit(exe, { trace: { n: 4 } });
    await store.appendTrace(exe.id, { n: 5 });
    assert.deepEqual(await indexes(store, exe.id), [3, 4, 5]);
  });
});

Deno.test("appendTrace() writes at the index an entry carries, as the seed does", async () => {
  for (const { name, store, close } of await backends(3)) {
    try {
      await store.appendTrace("x", { n: 0 });
      await store.appendTrace("x", { n: 1, index: 10 });
      await store.appendTrace("x", { n: 2 });
      assert.deepEqual(
        (await store.readTrace("x")).map((s) => [s.index, s.n]),
        [[0, 0], [10, 1], [11, 2]],
        name,
      );
      await assert.rejects(store.appendTrace("x", { index: -1 }), /entry.index/, name);
      await assert.rejects(store.appendTrace("x", { index: 1.5 }), RangeError, name);
    } finally {
      close();
    }
  }
});

Deno.test("a cursor from another listing is refused with InvalidCursor", async () => {
  await using one = await freshStore();
  await using two = await freshStore();
  for (let i = 0; i < 3; i++) {
    await one.save(newExecution({ definition_id: "d" }));
    await two.save(newExecution({ definition_id: "d" }));
  }
  const page = await one.listExecutions({ limit: 1 });
  assert.match(page.nextCursor!, /^[A-Za-z0-9_-]+$/, "cursors stay opaque base64url");
  await assert.rejects(two.listExecutions({ cursor: page.nextCursor }), InvalidCursor);
  await assert.rejects(
    two.listExecutions({ cursor: page.nextCursor }),
    /produced for another listing/,
  );
  assert.equal((await one.listExecutions({ limit: 5, cursor: page.nextCursor })).items.length, 2);
  const memory = new MemoryStore();
  await assert.rejects(memory.listExecutions({ cursor: page.nextCursor }), InvalidCursor);
});

Deno.test("times are epoch seconds: milliseconds and numbers DynamoDB cannot store are refused before sending", async (t) => {
  for (const { name, store, sent, close } of await backends()) {
    try {
      const exe = newExecution({ definition_id: "t" });
      await store.save(exe);
      sent();
      await t.step(`${name}: milliseconds`, async () => {
        const ms = Date.now();
        const seconds = /epoch seconds.*milliseconds/;
        await assert.rejects(
          store.commit(exe, { timers: [{ action: "schedule", path: "p", fireAt: ms + 60_000 }] }),
          (e: Error) =>
            e instanceof RangeError && seconds.test(e.message) && /fireAt/.test(e.message),
        );
        await assert.rejects(store.dueTimers(ms), seconds);
        await assert.rejects(store.deleteTimer(exe.id, "p", ms), seconds);
        await assert.rejects(store.dueTimers(253402300800), seconds);
        assert.deepEqual(sent(), []);
      });
      await t.step(`${name}: numbers DynamoDB cannot store`, async () => {
        for (const fireAt of [1e200, 5e-324, 1e-131]) {
          await assert.rejects(
            store.commit(exe, { timers: [{ action: "schedule", path: "p", fireAt }] }),
            RangeError,
            String(fireAt),
          );
          await assert.rejects(store.dueTimers(fireAt), RangeError);
          await assert.rejects(store.deleteTimer(exe.id, "p", fireAt), RangeError);
        }
        assert.deepEqual(sent(), []);
        assert.equal(exe.version, 1);
      });
      await t.step(`${name}: the edges are fine`, async () => {
        await store.commit(exe, {
          timers: [
            { action: "schedule", path: "last", fireAt: 253402300799 },
            { action: "schedule", path: "tiny", fireAt: 1e-130 },
            { action: "schedule", path: "zero", fireAt: 0 },
          ],
        });
        assert.deepEqual(
          (await store.dueTimers(253402300799)).map((x) => [x.path, x.fireAt]),
          [["zero", 0], ["tiny", 1e-130], ["last", 253402300799]],
        );
      });
    } finally {
      close();
    }
  }
});

Deno.test("save() and commit() refuse what is not an Execution document, naming the field", async (t) => {
  for (const { name, store, sent, close } of await backends()) {
    try {
      const cases: [string, Record<string, unknown>, RegExp][] = [
        ["no status", { id: "a1", definition_id: "d", version: 0 }, /exe\.status must be one of/],
        [
          "a bogus status",
          { ...newExecution({ definition_id: "d" }), status: "bogus" },
          /exe\.status.*"bogus"/,
        ],
        ["priority 7", { ...newExecution({ definition_id: "d" }), priority: 7 }, /exe\.priority/],
        [
          "context null",
          { ...newExecution({ definition_id: "d" }), context: null },
          /exe\.context/,
        ],
        [
          "history of numbers",
          { ...newExecution({ definition_id: "d" }), history: { a: 1 } },
          /exe\.history\.a/,
        ],
        [
          "deferred not a list",
          { ...newExecution({ definition_id: "d" }), deferred: {} },
          /exe\.deferred/,
        ],
        ["a deferred event without kind", {
          ...newExecution({ definition_id: "d" }),
          deferred: [{ id: "e", data: {} }],
        }, /exe\.deferred\[0\]\.kind/],
        ["invoke_seq of strings", {
          ...newExecution({ definition_id: "d" }),
          invoke_seq: { s: "1" },
        }, /exe\.invoke_seq\.s/],
        [
          "parent_id a number",
          { ...newExecution({ definition_id: "d" }), parent_id: 3 },
          /exe\.parent_id/,
        ],
      ];
      for (const [what, doc, message] of cases) {
        await t.step(`${name}: ${what}`, async () => {
          const error = await store.save(doc as Execution).then(() => null, (e: Error) => e);
          assert.ok(error instanceof TypeError, `${what}: ${error}`);
          assert.match(error.message, message);
          assert.match(error.message, /newExecution\(\)/);
          assert.equal(await store.load(doc.id as string), null);
        });
      }
      assert.deepEqual(sent().filter((c) => c !== "GetItemCommand"), []);
      await t.step(`${name}: unknown extra fields round-trip`, async () => {
        const exe = { ...newExecution({ definition_id: "d" }), custom: { a: [1, "x"] }, v2: null };
        await store.save(exe);
        assert.deepEqual(await store.load(exe.id), exe);
      });
    } finally {
      close();
    }
  }
});

Deno.test("a Map or a Set in context or in an event's data is refused, naming its path", async () => {
  for (const { name, store, sent, close } of await backends()) {
    try {
      const exe = newExecution({ definition_id: "d" });
      await store.save(exe);
      sent();
      await assert.rejects(
        store.save({ ...exe, context: { tags: new Map([["a", 1]]) } }),
        (e: Error) => e instanceof TypeError && /context\.tags is a Map/.test(e.message),
        name,
      );
      await assert.rejects(
        store.commit(exe, {
          emits: [{ target: null, event: newEvent("e", { ids: new Set([1]) }) }],
        }),
        /data\.ids is a Set/,
      );
      await assert.rejects(
        store.commit(exe, { spawns: [{ childId: "c", rootPath: "r", context: { m: new Map() } }] }),
        /context\.m is a Map/,
      );
      await assert.rejects(store.appendTrace(exe.id, { s: new Set() }), /entry\.s is a Set/);
      assert.deepEqual(sent(), []);
      assert.equal(exe.version, 1);
      const at = new Date("2026-01-02T03:04:05Z");
      await store.save({ ...exe, context: { at } });
      assert.equal((await store.load(exe.id))!.context.at, at.toISOString());
    } finally {
      close();
    }
  }
});

Deno.test("a closed store refuses every call, and an injected client stays the caller's", async (t) => {
  using counting = countingClient();
  const { client } = counting;
  const dynamo = new DynamoDBStore(client, { prefix: uniqueName("closed") });
  await dynamo.ensureTables();
  const exe = newExecution({ definition_id: "d" });
  await dynamo.save(exe);
  for (const store of [dynamo, new MemoryStore()] as ExecutionStore[]) {
    await store.close();
    await store.close();
    const name = store.constructor.name;
    const calls: [string, () => Promise<unknown>][] = [
      ["load", () => store.load(exe.id)],
      ["loadForEvent", () => store.loadForEvent(exe.id, "e")],
      ["isProcessed", () => store.isProcessed(exe.id, "e")],
      ["save", () => store.save(exe)],
      ["commit", () => store.commit(exe, { trace: { n: 1 } })],
      ["listExecutions", () => store.listExecutions()],
      ["pendingOutbox", () => store.pendingOutbox()],
      ["ackOutbox", () => store.ackOutbox(1)],
      ["pendingSpawns", () => store.pendingSpawns()],
      ["ackSpawn", () => store.ackSpawn(1)],
      ["dueTimers", () => store.dueTimers(1)],
      ["deleteTimer", () => store.deleteTimer(exe.id, "p", 1)],
      ["readTrace", () => store.readTrace(exe.id)],
      ["appendTrace", () => store.appendTrace(exe.id, { n: 1 })],
    ];
    await t.step(`${name} refuses every call`, async () => {
      for (const [method, call] of calls) {
        await assert.rejects(
          call(),
          (e: Error) => e instanceof StoreClosed && /closed/.test(e.message),
          `${name}.${method}`,
        );
      }
    });
  }
  await t.step("the injected client still works", async () => {
    assert.ok((await client.send(new ListTablesCommand({}))).TableNames!.length > 0);
    const fresh = new DynamoDBStore(client, { prefix: prefixOf(dynamo) });
    assert.equal((await fresh.load(exe.id))?.version, 1);
  });
});

Deno.test("ackOutbox() and ackSpawn() name the position the caller passed", async () => {
  for (const { name, store, close } of await backends()) {
    try {
      await assert.rejects(store.ackOutbox([3, 3, 3, -1]), /seq\[3\]/, name);
      await assert.rejects(store.ackSpawn([1, 1, 2.5]), /seq\[2\]/, name);
    } finally {
      close();
    }
  }
});

Deno.test("committing one Execution object again before the first commit finished is refused at once", async () => {
  for (const { name, store, sent, close } of await backends()) {
    try {
      const exe = newExecution({ definition_id: "d" });
      const first = store.commit(exe, { emits: [{ target: null, event: newEvent("a") }] });
      const second = store.commit(exe, { emits: [{ target: null, event: newEvent("b") }] });
      await assert.rejects(
        second,
        (e: Error) => e instanceof TypeError && /already being committed/.test(e.message),
      );
      await first;
      assert.equal(exe.version, 1, name);
      assert.deepEqual((await store.pendingOutbox()).map((e) => e.event.kind), ["a"], name);
      assert.equal(
        sent().filter((c) => c === "TransactWriteItemsCommand").length,
        name === "DynamoDBStore" ? 1 : 0,
      );
      // Awaited in turn, the same object commits fine, and a copy is a separate commit.
      await store.commit(exe);
      const race = await Promise.allSettled([
        store.commit(structuredClone(exe)),
        store.commit(exe),
      ]);
      assert.equal(race.filter((r) => r.status === "fulfilled").length, 1, name);
      assert.equal((await store.load(exe.id))!.version, 3, name);
    } finally {
      close();
    }
  }
});

Deno.test("a traceMax 1 store and a traceMax 3 store share one ring without blocking", async () => {
  const one = await freshStore({ traceMax: 1, conflictRetries: 2 });
  await using three = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix: prefixOf(one),
    traceMax: 3,
    conflictRetries: 2,
  });
  try {
    const exe = newExecution({ definition_id: "one" });
    for (let n = 0; n < 8; n++) {
      const store = n % 3 === 0 ? three : one;
      const current = (await store.load(exe.id)) ?? exe;
      await store.commit(current, { trace: { n } });
      if (n % 2) await (n % 4 === 1 ? one : three).appendTrace(exe.id, { n, extra: true });
    }
    const trace = await one.readTrace(exe.id);
    const last = trace.at(-1)!.index as number;
    assert.equal(last, 11, "8 commits and 4 appends: indexes 0..11");
    assert.equal(trace.at(-1)!.n, 7);
    assert.ok(
      trace.every((s, i) => i === 0 || (s.index as number) > (trace[i - 1]!.index as number)),
    );
  } finally {
    await one.close();
  }
});
