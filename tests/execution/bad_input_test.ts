import assert from "node:assert/strict";
import {
  type CommitChanges,
  DynamoDBStateStore,
  DynamoDBStore,
  type Execution,
  type ExecutionStore,
  InvalidCursor,
  newEvent,
  newExecution,
  StoreClosed,
} from "../../mod.ts";
import { MemoryStateStore, MemoryStore, snapshotStore } from "../../src/testing.ts";
import { countingClient, endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";

const big = (bytes: number) => "x".repeat(bytes);

Deno.test("commit() refuses input DynamoDB would reject, before sending anything, and the store is unchanged", async (t) => {
  using counting = countingClient();
  const { client, calls } = counting;
  const prefix = uniqueName("bad");
  const store = new DynamoDBStore(client, { prefix, traceMax: 5 });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "d" });
  await store.commit(exe, { trace: { n: 1 }, emits: [{ target: null, event: newEvent("ok") }] });
  const before = await snapshotStore(store, [exe.id]);

  const cases: [
    string,
    (e: Execution) => [Execution, CommitChanges?],
    RegExp,
    typeof TypeError,
  ][] = [
    [
      "101 transaction items",
      (
        e,
      ) => [e, {
        emits: Array.from({ length: 100 }, () => ({ target: null, event: newEvent("e") })),
      }],
      /101 transaction items.*at most 100/,
      RangeError,
    ],
    [
      "an execution over 400 KB",
      (e) => [{ ...e, context: { blob: big(410_000) } }],
      /exe would be a \d+-byte item.*400 KB/,
      RangeError,
    ],
    [
      "an outbox item over 400 KB",
      (
        e,
      ) => [e, {
        emits: [{ target: null, event: { ...newEvent("e"), data: { blob: big(410_000) } } }],
      }],
      /commit item 1 would be.*400 KB/,
      RangeError,
    ],
    [
      "a commit over 4 MB",
      (
        e,
      ) => [e, {
        emits: Array.from(
          { length: 12 },
          () => ({ target: null, event: { ...newEvent("e"), data: { blob: big(390_000) } } }),
        ),
      }],
      /bytes; a DynamoDB transaction holds at most 4194304 bytes \(4 MB\)/,
      RangeError,
    ],
    [
      "a BigInt in the context",
      (e) => [{ ...e, context: { n: 10n } }],
      /exe\.context\.n is 10n \(a BigInt\)/,
      TypeError,
    ],
    [
      "a cycle in the context",
      (e) => {
        const context: Record<string, unknown> = {};
        context.self = context;
        return [{ ...e, context }];
      },
      /exe\.context\.self refers back to itself/,
      TypeError,
    ],
    [
      "NaN in an event",
      (e) => [e, { emits: [{ target: null, event: { ...newEvent("e"), data: { x: NaN } } }] }],
      /changes\.emits\[0\]\.event\.data\.x is NaN/,
      TypeError,
    ],
    [
      "a function in a spawn context",
      (e) => [e, { spawns: [{ childId: "c", rootPath: "r", context: { f: () => 1 } }] }],
      /changes\.spawns\[0\]\.context\.f is a function/,
      TypeError,
    ],
    [
      "a NaN fireAt",
      (e) => [e, { timers: [{ action: "schedule", path: "p", fireAt: NaN }] }],
      /changes\.timers\[0\]\.fireAt must be a finite number of seconds >= 0, got NaN/,
      RangeError,
    ],
    [
      "an Infinity fireAt",
      (e) => [e, { timers: [{ action: "schedule", path: "p", fireAt: Infinity }] }],
      /fireAt must be a finite/,
      RangeError,
    ],
    [
      "a negative fireAt",
      (e) => [e, { timers: [{ action: "schedule", path: "p", fireAt: -1 }] }],
      /fireAt must be a finite number of seconds >= 0, got -1/,
      RangeError,
    ],
    [
      "an unknown timer action",
      (e) => [e, { timers: [{ action: "snooze", path: "p" } as never] }],
      /action must be "schedule" or "cancel", got "snooze"/,
      TypeError,
    ],
    ["an empty execution id", (e) => [{ ...e, id: "" }], /exe\.id must not be empty/, TypeError],
    [
      "an execution id over 2048 bytes",
      (e) => [{ ...e, id: "é".repeat(1025) }],
      /exe\.id is 2050 bytes of UTF-8; DynamoDB keys allow at most 2048/,
      RangeError,
    ],
    [
      "a lone surrogate in the id",
      (e) => [{ ...e, id: "a\uD800b" }],
      /exe\.id contains a lone UTF-16 surrogate/,
      TypeError,
    ],
    [
      "an empty processedEventId",
      (e) => [e, { processedEventId: "" }],
      /processedEventId must not be empty/,
      TypeError,
    ],
    [
      "an empty timer path",
      (e) => [e, { timers: [{ action: "cancel", path: "" }] }],
      /changes\.timers\[0\]\.path must not be empty/,
      TypeError,
    ],
    [
      "a timer path over 1024 bytes",
      (e) => [e, { timers: [{ action: "cancel", path: big(1025) }] }],
      /at most 1024/,
      RangeError,
    ],
    [
      "an empty emit target",
      (e) => [e, { emits: [{ target: "", event: newEvent("e") }] }],
      /changes\.emits\[0\]\.target must not be empty/,
      TypeError,
    ],
    [
      "an event without an id",
      (e) => [e, { emits: [{ target: null, event: { kind: "e", data: {} } as never }] }],
      /changes\.emits\[0\]\.event\.id must be a string, got undefined/,
      TypeError,
    ],
    [
      "an empty spawn childId",
      (e) => [e, { spawns: [{ childId: "", rootPath: "r", context: {} }] }],
      /childId must not be empty/,
      TypeError,
    ],
    [
      "a negative version",
      (e) => [{ ...e, version: -1 }],
      /exe\.version must be an integer from 0/,
      RangeError,
    ],
    [
      "a fractional version",
      (e) => [{ ...e, version: 1.5 }],
      /exe\.version must be an integer/,
      RangeError,
    ],
    [
      "emits that are not an array",
      (e) => [e, { emits: "x" as never }],
      /changes\.emits must be an array/,
      TypeError,
    ],
  ];
  for (const [name, make, message, type] of cases) {
    await t.step(`${name}: ${type.name}`, async () => {
      const [input, changes] = make(structuredClone({ ...exe, context: {} }) as Execution);
      const version = input.version;
      const sent = calls.length;
      await assert.rejects(store.commit(input, changes), (error: Error) => {
        assert.ok(error instanceof type, `${error.name}: ${error.message}`);
        assert.match(error.message, message);
        return true;
      });
      assert.equal(calls.length, sent, "nothing was sent");
      assert.equal(input.version, version);
    });
  }
  assert.deepEqual(await snapshotStore(store, [exe.id]), before);
});

Deno.test("a lone surrogate inside a JSON document is refused, naming the path (harel's pydantic refuses it)", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "d", context: { odd: "a\uDC00b" } });
  await assert.rejects(store.save(exe), /exe\.context\.odd holds a lone UTF-16 surrogate/);
  assert.equal(await store.load(exe.id), null, "nothing was written");
  const pair = newExecution({ definition_id: "d", context: { ok: "a\uD83D\uDE00b" } });
  await store.save(pair);
  assert.equal((await store.load(pair.id))?.context.ok, "a😀b");
});

Deno.test("constructors refuse bad options", () => {
  using counting = countingClient();
  const { client } = counting;
  assert.throws(
    () => new DynamoDBStore(client, { traceMax: -1 }),
    /traceMax must be an integer from 0/,
  );
  assert.throws(() => new DynamoDBStore(client, { traceMax: 2.5 }), RangeError);
  assert.throws(
    () => new DynamoDBStore(client, { prefix: "bad prefix!" }),
    /prefix must be 1 to 200 characters/,
  );
  assert.throws(() => new DynamoDBStore(client, { prefix: "" }), TypeError);
  assert.throws(() => new DynamoDBStore(client, { processedTtlSeconds: 0 }), RangeError);
  assert.throws(() => new DynamoDBStore({} as never), /client must be a DynamoDB client/);
  assert.throws(
    () => new DynamoDBStateStore(client, { tableName: "x" }),
    /tableName must be 3 to 255/,
  );
  assert.throws(() => new DynamoDBStateStore(client, { tableName: "no/slash" }), TypeError);
});

Deno.test("listExecutions() refuses forged cursors with InvalidCursor and bad filters with a clear error", async () => {
  await using store = await freshStore();
  await store.save(newExecution({ definition_id: "d" }));
  const b64 = (text: string) =>
    new TextEncoder().encode(text).toBase64({ alphabet: "base64url", omitPadding: true });
  const random = crypto.getRandomValues(new Uint8Array(24)).toBase64({ alphabet: "base64url" });
  const forged = {
    "not base64url": "!!not*base64!!",
    "random bytes": random,
    "valid base64url of non-JSON": b64("hello"),
    "JSON of the wrong shape": b64("[1,2,3]"),
    "an id that is not a string": b64('{"id":5}'),
    "an extra field": b64('{"id":"a","x":1}'),
    "a key of another table": b64('{"execution_id":"a","path":"p"}'),
    "an empty id": b64('{"id":""}'),
  };
  for (const [name, cursor] of Object.entries(forged)) {
    await assert.rejects(store.listExecutions({ cursor }), (error: Error) => {
      assert.ok(error instanceof InvalidCursor, `${name}: ${error}`);
      assert.equal(error.name, "InvalidCursor");
      return true;
    });
  }
  await assert.rejects(
    store.listExecutions({ limit: 0 }),
    /limit must be an integer from 1 to 1000/,
  );
  await assert.rejects(
    store.listExecutions({ status: "SLEEPING" as never }),
    /status must be one of/,
  );
});

Deno.test("reads refuse bad keys and times before sending", async () => {
  await using store = await freshStore();
  await assert.rejects(store.load(""), /id must not be empty/);
  await assert.rejects(store.load(5 as never), /id must be a string, got 5/);
  await assert.rejects(store.dueTimers(NaN), /now must be a finite number/);
  await assert.rejects(store.deleteTimer("e", "p", -5), /fireAt must be a finite/);
  await assert.rejects(store.ackOutbox([1, 1.5]), /seq\[1\] must be an integer/);
  await assert.rejects(store.appendTrace("e", { x: 1n }), /entry\.x is 1n/);
});

Deno.test("the state store refuses hostile input with clear errors and stores nothing", async () => {
  using counting = countingClient();
  const { client, calls } = counting;
  const state = new DynamoDBStateStore(client, { tableName: uniqueName("hostile") });
  await state.ensureTable();
  const sent = calls.length;
  await assert.rejects(state.set("", 1), /key must not be empty/);
  await assert.rejects(
    state.set("k".repeat(2049), 1),
    /key is 2049 bytes of UTF-8; DynamoDB keys allow at most 2048/,
  );
  await assert.rejects(state.set("a\uD800", 1), /lone UTF-16 surrogate/);
  await assert.rejects(state.set("k", undefined), /value is undefined, which JSON cannot carry/);
  await assert.rejects(state.set("k", { n: NaN }), /value\.n is NaN/);
  await assert.rejects(
    state.set("k", 1, { ttl: -5 }),
    /options\.ttl must be a finite number of seconds >= 0, got -5/,
  );
  await assert.rejects(state.set("k", 1, { ttl: 0 }), /options\.ttl must be more than 0 seconds/);
  await assert.rejects(state.hset("k", "", 1), /field must not be empty/);
  await assert.rejects(state.hset("k", "f", 10n), /value is 10n \(a BigInt\)/);
  await assert.rejects(state.hdel("k", "ok", ""), /fields\[1\] must not be empty/);
  await assert.rejects(state.expire("k", NaN), /seconds must be a finite number/);
  await assert.rejects(state.keys(5 as never), /pattern must be a glob string/);
  assert.equal(calls.length, sent, "nothing was sent");
  assert.deepEqual(await state.keys(), []);

  // Regex metacharacters are literal, and a 10,000-character field is just a field.
  await state.set("a.b", 1);
  await state.set("a+b", 1);
  for (const pattern of [".*", "a.+", "^a", "a|b", "(a)", "a{1}", "$", "\\d"]) {
    assert.deepEqual(await state.keys(pattern), [], pattern);
  }
  assert.deepEqual(await state.keys("a.b"), ["a.b"]);
  const long = "f".repeat(10_000);
  assert.equal(await state.hset("h", long, 1), 1);
  assert.equal(await state.hget("h", long), 1);
});

// Values at the limits and the mistakes a Deno user makes, on both backends.
// Each test fails on the code it was written against and names the behaviour a fix must give.
Deno.test("dueTimers() takes any limit checkLimit accepts", async (t) => {
  await using store = await freshStore();
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
  // new sockets on it and every call goes on working (DynamoDBStore refuses: a closed store).
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
  // A change made `set(k, v, null)` mean "no options"; the constructors still read a property
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
  // traceMax and the rest are checked; consistentReads is sent as it is (a string
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
