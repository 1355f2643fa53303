import assert from "node:assert/strict";
import {
  type CommitChanges,
  DynamoDBStateStore,
  DynamoDBStore,
  type Execution,
  InvalidCursor,
  newEvent,
  newExecution,
} from "../../mod.ts";
import { snapshotStore } from "../../src/testing.ts";
import { countingClient, freshStore, uniqueName } from "../_support/env.ts";

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

Deno.test("a lone surrogate inside a JSON document round-trips", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "d", context: { odd: "a\uDC00b" } });
  await store.save(exe);
  assert.equal((await store.load(exe.id))?.context.odd, "a\uDC00b");
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
