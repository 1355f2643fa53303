// The execution store in a mixed fleet: other writers on the same tables (another
// deploy with another traceMax, the Python seed's algorithm) and the mistakes users make.
import assert from "node:assert/strict";
import { DeleteItemCommand, ListTablesCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  type Execution,
  type ExecutionStore,
  InvalidCursor,
  newEvent,
  newExecution,
  relayOutbox,
  StoreClosed,
  sweepTimers,
} from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { countingClient, endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";
import { seedAppendTrace } from "../_support/seed.ts";
import { main } from "../../src/cli.ts";

const prefixOf = (store: DynamoDBStore) => store.tables.executions.name.replace(/_executions$/, "");
const indexes = async (store: ExecutionStore, id: string) =>
  (await store.readTrace(id)).map((step) => step.index as number);

/** Both backends, each on fresh tables, with a way to count what the DynamoDB one sends. */
async function backends(
  traceMax = 200,
): Promise<{ name: string; store: ExecutionStore; sent: () => string[]; close(): void }[]> {
  const { client, calls } = countingClient();
  const dynamo = new DynamoDBStore(client, {
    prefix: uniqueName("mixed"),
    traceMax,
  });
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

// What a Python harel worker (the seed) leaves in the execution store's tables.
// Each test fails on the code it was written against and names the behaviour a fix must give.
// Python's json.dumps (allow_nan=True, its default) writes NaN and ±Infinity as bare words, and
// puts a space after ":" and ",". These are its bytes for the documents below.
const PY_EVENT = '{"id": "py-event-1", "kind": "scored", "data": {"score": NaN, "top": Infinity}}';
const PY_STEP = '{"event": "scored", "score": NaN}';
const PY_CONTEXT = '{"ratio": -Infinity, "name": "x"}';

Deno.test("entries a Python worker wrote with NaN in their JSON read as null, and never wedge a reader", async (t) => {
  await using store = await freshStore();
  using client = testClient();
  const exe = newExecution({ definition_id: "py" });
  // One entry of ours, before the Python worker's: a relay must be able to deliver it.
  await store.commit(exe, {
    emits: [{ target: "a", event: newEvent("ours") }],
    trace: { step: "ours" },
  });
  const put = (table: string, item: Record<string, { S: string } | { N: string }>) =>
    client.send(new PutItemCommand({ TableName: table, Item: item }));
  await put(store.tables.outbox.name, {
    seq: { N: "900000001" },
    target_id: { S: "b" },
    event: { S: PY_EVENT },
  });
  await put(store.tables.spawns.name, {
    seq: { N: "900000002" },
    parent_id: { S: exe.id },
    child_id: { S: "child-1" },
    root_path: { S: "fork.a" },
    context: { S: PY_CONTEXT },
  });
  await put(store.tables.trace.name, {
    execution_id: { S: exe.id },
    idx: { N: "1" },
    entry: { S: PY_STEP },
  });
  const pyExe = newExecution({ definition_id: "py" });
  await put(store.tables.executions.name, {
    id: { S: pyExe.id },
    data: {
      S: JSON.stringify({ ...pyExe, version: 1 }).replace(
        '"context":{}',
        '"context": {"score": NaN}',
      ),
    },
    version: { N: "1" },
    definition_id: { S: "py" },
  });

  await t.step(
    "pendingOutbox() reads the Python entry, NaN as null, once it is adopted",
    async () => {
      // Rows a Python worker writes lack the relay index's attributes: a pass adopts them (a page
      // at a time), adoptRows() at once; a plain read shows only what the index holds.
      assert.deepEqual((await store.pendingOutbox()).map((e) => e.event.kind), ["ours"]);
      assert.equal(await store.adoptRows("outbox"), 1);
      const entries = await store.pendingOutbox();
      assert.deepEqual(entries.map((e) => e.event.kind), ["ours", "scored"]);
      assert.equal(entries[1]!.event.data.score, null);
    },
  );
  await t.step("relayOutbox() delivers both entries", async () => {
    const delivered: string[] = [];
    const report = await relayOutbox(store, (entry) => {
      delivered.push(entry.event.kind);
      return Promise.resolve();
    });
    assert.deepEqual([report.delivered, report.failed, report.setAside], [2, 0, 0]);
    assert.deepEqual(delivered.sort(), ["ours", "scored"]);
  });
  await t.step("pendingSpawns() reads a context with -Infinity", async () => {
    assert.equal(await store.adoptRows("spawns"), 1);
    const spawns = await store.pendingSpawns();
    assert.equal(spawns.length, 1);
    assert.deepEqual(spawns[0]!.context, { ratio: null, name: "x" });
  });
  await t.step("readTrace() reads a step with NaN", async () => {
    const steps = await store.readTrace(exe.id);
    assert.deepEqual(steps.map((s) => s.index), [0, 1]);
    assert.equal(steps[1]!.score, null);
  });
  await t.step("listExecutions() lists it", async () => {
    const page = await store.listExecutions({ definitionId: "py" });
    assert.deepEqual(page.items.map((item) => item.id).sort(), [exe.id, pyExe.id].sort());
  });
  await t.step("load() reads an execution whose context holds NaN", async () => {
    const loaded = await store.load(pyExe.id);
    assert.equal(loaded?.version, 1);
    assert.equal(loaded?.context.score, null);
  });
});

Deno.test("a timer whose fire_at another writer stored with more digits than a double is swept once, not every pass", async () => {
  await using store = await freshStore();
  using client = testClient();
  // str(Decimal(1700000000.1)) in Python: boto3 takes it (31 digits, exact), and it reads
  // back here as the double 1700000000.1.
  await client.send(
    new PutItemCommand({
      TableName: store.tables.timers.name,
      Item: {
        execution_id: { S: "py-exe" },
        path: { S: "order.waiting" },
        fire_at: { N: "1700000000.099999904632568359375" },
      },
    }),
  );
  assert.equal(await store.adoptRows("timers"), 1); // a Python worker's timer: adopted first
  const [timer] = await store.dueTimers(1_700_000_001);
  assert.equal(timer?.fireAt, 1_700_000_000.1);
  const fired: string[] = [];
  const fire = (_: unknown, event: { id: string }) => {
    fired.push(event.id);
    return Promise.resolve();
  };
  await sweepTimers(store, fire, { now: 1_700_000_001 });
  await sweepTimers(store, fire, { now: 1_700_000_001 });
  await sweepTimers(store, fire, { now: 1_700_000_001 });
  // At least once is fine; on every pass forever is not: the first pass must claim it.
  assert.deepEqual(fired, ["timeout:py-exe:order.waiting:1700000000.1"]);
  assert.deepEqual(await store.dueTimers(1_700_000_001), []);
});

// The reads and guards what other writers leave reaches: loadForEvent and the CLI on Python's
// NaN, deleteTimer's guard at a tie, options that are not an object.
Deno.test("loadForEvent() and the CLI read what a Python worker wrote with NaN, as null", async (t) => {
  const prefix = uniqueName("py");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
  using client = testClient();
  const exe = newExecution({ definition_id: "py" });
  await client.send(
    new PutItemCommand({
      TableName: store.tables.executions.name,
      Item: {
        id: { S: exe.id },
        data: {
          S: JSON.stringify({ ...exe, version: 1 }).replace(
            '"context":{}',
            '"context": {"score": NaN, "top": Infinity}',
          ),
        },
        version: { N: "1" },
        definition_id: { S: "py" },
      },
    }),
  );
  await client.send(
    new PutItemCommand({
      TableName: store.tables.outbox.name,
      Item: {
        seq: { N: "7" },
        target_id: { S: "b" },
        event: { S: '{"id": "py-1", "kind": "scored", "data": {"score": -Infinity}}' },
      },
    }),
  );
  await t.step("loadForEvent()", async () => {
    const { execution } = await store.loadForEvent(exe.id, "e1");
    assert.deepEqual(execution?.context, { score: null, top: null });
  });
  await t.step("the CLI's show and outbox", async () => {
    for (const args of [["show", exe.id], ["outbox", "--json"]]) {
      const out: string[] = [], err: string[] = [];
      const code = await main([...args, "--prefix", prefix, "--endpoint", endpoint()], {
        out: (line) => out.push(line),
        err: (line) => err.push(line),
      });
      assert.equal(code, 0, err.join("\n"));
      if (args[0] === "outbox") {
        assert.equal(JSON.parse(out.join("\n")).oldest[0].event.kind, "scored");
      }
    }
  });
});

Deno.test("deleteTimer() claims exactly the stored fire_at values that read back as its double", async (t) => {
  await using store = await freshStore();
  const client = testClient();
  const put = (fireAt: string) =>
    client.send(
      new PutItemCommand({
        TableName: store.tables.timers.name,
        Item: { execution_id: { S: "x" }, path: { S: "p" }, fire_at: { N: fireAt } },
      }),
    );
  try {
    // 1700000000.1 + 2 ** -22 has an odd last bit: the decimal halfway between it and the
    // next double up reads back as that next (even) double, so it is not this timer's.
    const odd = 1_700_000_000.1 + 2 ** -22, even = odd + 2 ** -22;
    const halfway = "1700000000.10000026226043701171875";
    assert.equal(Number(halfway), even);
    await t.step("a tie belongs to the even neighbour", async () => {
      await put(halfway);
      assert.equal(await store.deleteTimer("x", "p", odd), false);
      assert.equal(await store.deleteTimer("x", "p", even), true);
    });
    await t.step("a re-scheduled timer (a different double) is not claimed", async () => {
      await put("1700000001.1");
      assert.equal(await store.deleteTimer("x", "p", 1_700_000_000.1), false);
      assert.equal(await store.deleteTimer("x", "p", 1_700_000_001.1), true);
    });
    await t.step("a small time (bounds past 38 digits) keeps the exact equality", async () => {
      await put("5");
      assert.equal(await store.deleteTimer("x", "p", 5 + 2 ** -50), false);
      assert.equal(await store.deleteTimer("x", "p", 5), true);
    });
  } finally {
    await client.send(
      new DeleteItemCommand({
        TableName: store.tables.timers.name,
        Key: { execution_id: { S: "x" }, path: { S: "p" } },
      }),
    );
    client.destroy();
  }
});

Deno.test("options that are not an object are refused with a TypeError naming options", () => {
  using client = testClient();
  assert.throws(() => new DynamoDBStore(client, 5 as never), /options must be an object/);
  assert.throws(() => new MemoryStore("x" as never), /options must be an object/);
  assert.throws(
    () => new DynamoDBStore(client, { traceMax: 5, consistentReads: 0 as never }),
    /consistentReads must be a boolean, got 0/,
  );
});
