// Hostile tests: values at the limits and the mistakes a Deno user makes, on both backends.
// Each test fails on the code it was written against and names the behaviour a fix must give.
import assert from "node:assert/strict";
import {
  DynamoDBStateStore,
  DynamoDBStore,
  type ExecutionStore,
  newEvent,
  newExecution,
  StoreClosed,
} from "../../mod.ts";
import { MemoryStateStore, MemoryStore } from "../../src/testing.ts";
import { endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";

Deno.test("dueTimers() with the timer index takes any limit checkLimit accepts", async (t) => {
  await using store = await freshStore({ timerIndex: true });
  const exe = newExecution({ definition_id: "limits" });
  await store.commit(exe, { timers: [{ action: "schedule", path: "p", fireAt: 100 }] });
  // 2 ** 31 and above pass checkLimit (a safe integer) but reach DynamoDB as a Query Limit,
  // which answers InternalFailure (a 32-bit field); Infinity works, so a big limit must too.
  for (const limit of [2 ** 31, 2 ** 53 - 1]) {
    await t.step(`limit ${limit}`, async () => {
      const due = await store.dueTimers(200, { limit });
      assert.deepEqual(due.map((timer) => timer.path), ["p"]);
    });
  }
});

Deno.test("commit() of a frozen execution writes nothing when it cannot bump the version", async (t) => {
  // Immer and friends freeze state objects. commit() bumps exe.version in place after the
  // transaction: on a frozen object that throws a raw TypeError after everything was written,
  // and a caller who retries then meets a StoreConflict. Refuse before sending, or succeed.
  await using dynamo = await freshStore();
  const stores: [string, ExecutionStore][] = [["DynamoDBStore", dynamo], [
    "MemoryStore",
    new MemoryStore(),
  ]];
  for (const [name, store] of stores) {
    await t.step(name, async () => {
      const exe = Object.freeze(newExecution({ definition_id: "frozen" }));
      let failed = false;
      try {
        await store.commit(exe, { emits: [{ target: null, event: newEvent("go") }] });
      } catch (error) {
        failed = true;
        assert.ok(error instanceof TypeError, String(error));
      }
      if (failed) {
        assert.equal(await store.load(exe.id), null, "refused, yet the execution was written");
        assert.deepEqual(await store.pendingOutbox(), [], "refused, yet its emit was written");
      } else {
        assert.equal((await store.load(exe.id))?.version, 1);
      }
    });
  }
});

Deno.test("a closed DynamoDBStore refuses pendingOutbox, pendingSpawns and dueTimers as MemoryStore does", async (t) => {
  // MemoryStore refuses a closed store's call before checking its input, naming the method;
  // DynamoDBStore checks the input first, and names the SDK command (Scan) instead.
  const dynamo = await freshStore();
  const memory = new MemoryStore();
  await dynamo.close();
  await memory.close();
  const calls: [string, (store: ExecutionStore) => Promise<unknown>][] = [
    ["pendingOutbox", (store) => store.pendingOutbox({ limit: 0 })],
    ["pendingSpawns", (store) => store.pendingSpawns({ limit: 0 })],
    ["dueTimers", (store) => store.dueTimers(Date.now())],
    ["pendingOutbox", (store) => store.pendingOutbox()],
    ["dueTimers", (store) => store.dueTimers(1)],
  ];
  for (const [method, call] of calls) {
    for (const [name, store] of [["DynamoDBStore", dynamo], ["MemoryStore", memory]] as const) {
      await t.step(`${name}.${method}`, async () => {
        await assert.rejects(
          () => call(store),
          (error) =>
            error instanceof StoreClosed &&
            error.message.startsWith(`${name}.${method}() was called after the store was closed`),
        );
      });
    }
  }
});

Deno.test("a closed state store refuses every call with StoreClosed, as the execution stores do", async (t) => {
  // DynamoDBStateStore.close() destroys the client create() built; the SDK then quietly opens
  // new sockets on it and every call goes on working (DynamoDBStore refuses: issue #10).
  const dynamo = await DynamoDBStateStore.create({
    endpoint: endpoint(),
    tableName: uniqueName("state"),
  });
  const memory = new MemoryStateStore();
  for (
    const [name, state] of [["DynamoDBStateStore", dynamo], ["MemoryStateStore", memory]] as const
  ) {
    await t.step(name, async () => {
      await state.set("k", 1);
      await state.close();
      await assert.rejects(() => state.get("k"), StoreClosed);
      await assert.rejects(() => state.set("k", 2), StoreClosed);
      await assert.rejects(() => state.hset("h", "f", 1), StoreClosed);
    });
  }
});

Deno.test("null options are no options (or a clear TypeError), never a raw property read of null", async (t) => {
  // Issue #11 made `set(k, v, null)` mean "no options"; the constructors still read a property
  // of null. (create(null) does too, but a fixed create() would go to AWS: not tested here.)
  using client = testClient();
  const attempts: [string, () => unknown][] = [
    ["new DynamoDBStore(client, null)", () => new DynamoDBStore(client, null as never)],
    ["new DynamoDBStateStore(client, null)", () => new DynamoDBStateStore(client, null as never)],
    ["new MemoryStore(null)", () => new MemoryStore(null as never)],
    ["new MemoryStateStore(null)", () => new MemoryStateStore(null as never)],
  ];
  for (const [what, attempt] of attempts) {
    await t.step(what, async () => {
      try {
        await (attempt() as { close(): Promise<void> }).close();
      } catch (error) {
        assert.ok(error instanceof TypeError, `${what}: ${error}`);
        assert.doesNotMatch(error.message, /Cannot read properties of null/, what);
      }
    });
  }
});

Deno.test("options of the wrong type are refused by the constructor, naming the option", async (t) => {
  // timerIndex, traceMax and the rest are checked; consistentReads is sent as it is (a string
  // from an environment variable reaches DynamoDB, which answers InternalFailure on every read),
  // and a twin's `now` that is not a function fails on first use with a raw TypeError.
  using client = testClient();
  const attempts: [string, RegExp, () => unknown][] = [
    [
      "DynamoDBStore consistentReads",
      /consistentReads/,
      () => new DynamoDBStore(client, { consistentReads: "false" as never }),
    ],
    [
      "DynamoDBStateStore consistentReads",
      /consistentReads/,
      () => new DynamoDBStateStore(client, { consistentReads: "false" as never }),
    ],
    ["MemoryStore now", /now/, () => new MemoryStore({ now: 5 as never })],
    ["MemoryStateStore now", /now/, () => new MemoryStateStore({ now: "soon" as never })],
  ];
  for (const [what, names, attempt] of attempts) {
    await t.step(what, () => {
      assert.throws(attempt, (error) => error instanceof TypeError && names.test(error.message));
    });
  }
});

Deno.test("commit() refuses an emitted event that is not an Event, naming the field, as it does a deferred one", async (t) => {
  // exe.deferred[i] must have a string kind and an object data; changes.emits[i].event only
  // needs an id, so `{ id }` is stored and relayed to workers (Python's included) that read
  // event["kind"].
  await using dynamo = await freshStore();
  const stores: [string, ExecutionStore][] = [["DynamoDBStore", dynamo], [
    "MemoryStore",
    new MemoryStore(),
  ]];
  const events: [string, RegExp, unknown][] = [
    ["no kind", /changes\.emits\[0\]\.event\.kind/, { id: "e1", data: {} }],
    ["a number kind", /changes\.emits\[0\]\.event\.kind/, { id: "e2", kind: 5, data: {} }],
    ["no data", /changes\.emits\[0\]\.event\.data/, { id: "e3", kind: "k" }],
    ["string data", /changes\.emits\[0\]\.event\.data/, { id: "e4", kind: "k", data: "x" }],
  ];
  for (const [name, store] of stores) {
    for (const [what, field, event] of events) {
      await t.step(`${name}: ${what}`, async () => {
        const exe = newExecution({ definition_id: "emits" });
        await assert.rejects(
          () => store.commit(exe, { emits: [{ target: null, event: event as never }] }),
          (error) => error instanceof TypeError && field.test(error.message),
        );
        assert.equal(await store.load(exe.id), null);
      });
    }
  }
});
