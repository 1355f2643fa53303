// The state stores at DynamoDB's limits and after close(): what a hostile review found (see also
// state_store_writers_test.ts and ../execution/bad_input_test.ts), checked at each edge and on
// both stores.
import assert from "node:assert/strict";
import { DescribeTableCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStateStore, type StateStore, StoreClosed } from "../../mod.ts";
import { MemoryStateStore } from "../../src/testing.ts";
import { stateEntries } from "../../src/state/_state_values.ts";
import { countingClient, freshStateStore, testClient, uniqueName } from "../_support/env.ts";

/** Every method of a StateStore, called with good input. */
const CALLS: [string, (state: StateStore) => Promise<unknown>][] = [
  ["get", (state) => state.get("k")],
  ["set", (state) => state.set("k", 1)],
  ["delete", (state) => state.delete("k")],
  ["exists", (state) => state.exists("k")],
  ["keys", (state) => state.keys()],
  ["ttl", (state) => state.ttl("k")],
  ["expire", (state) => state.expire("k", 10)],
  ["hget", (state) => state.hget("h", "f")],
  ["hgetall", (state) => state.hgetall("h")],
  ["hset", (state) => state.hset("h", "f", 1)],
  ["hdel", (state) => state.hdel("h", "f")],
];

Deno.test("a closed state store refuses every method with StoreClosed naming it, and an injected client stays the caller's", async (t) => {
  using client = testClient();
  const dynamo = new DynamoDBStateStore(client, { tableName: uniqueName("closed") });
  await dynamo.ensureTable();
  const stores: [string, StateStore][] = [
    ["DynamoDBStateStore", dynamo],
    ["MemoryStateStore", new MemoryStateStore()],
  ];
  for (const [name, state] of stores) {
    await state.hset("h", "f", 1);
    await state.close();
    await state.close(); // idempotent
    for (const [method, call] of CALLS) {
      await t.step(`${name}.${method}`, async () => {
        await assert.rejects(
          () => call(state),
          (error) =>
            error instanceof StoreClosed &&
            error.message.startsWith(`${name}.${method}() was called after the store was closed`),
        );
      });
    }
  }
  await t.step("ensureTable() too", async () => {
    await assert.rejects(() => dynamo.ensureTable(), StoreClosed);
  });
  await t.step("the caller's client still works, and so does a new store on it", async () => {
    await client.send(new DescribeTableCommand({ TableName: dynamo.tableName }));
    const again = new DynamoDBStateStore(client, { tableName: dynamo.tableName });
    assert.equal(await again.hget("h", "f"), 1);
  });
});

Deno.test("state store options: null is none, and an option of the wrong type is refused by name", async (t) => {
  using client = testClient();
  await t.step("null options take the defaults", () => {
    assert.equal(new DynamoDBStateStore(client, null as never).tableName, "harel_state");
    new MemoryStateStore(null as never);
  });
  const refused: [string, RegExp, () => unknown][] = [
    ["DynamoDBStateStore options 5", /options/, () => new DynamoDBStateStore(client, 5 as never)],
    [
      "DynamoDBStateStore tableName 5",
      /tableName/,
      () => new DynamoDBStateStore(client, { tableName: 5 as never }),
    ],
    [
      "DynamoDBStateStore consistentReads 1",
      /consistentReads/,
      () => new DynamoDBStateStore(client, { consistentReads: 1 as never }),
    ],
    ["MemoryStateStore options 'x'", /options/, () => new MemoryStateStore("x" as never)],
    ["MemoryStateStore now 5", /now/, () => new MemoryStateStore({ now: 5 as never })],
  ];
  for (const [what, names, attempt] of refused) {
    await t.step(what, () => {
      assert.throws(attempt, (error) => error instanceof TypeError && names.test(error.message));
    });
  }
  await t.step("create() refuses options that are not an object before connecting", async () => {
    await assert.rejects(
      () => DynamoDBStateStore.create(5 as never),
      (error) => error instanceof TypeError && /options/.test(error.message),
    );
  });
});

function nested(levels: number, wrap: (v: unknown) => unknown, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < levels; i++) value = wrap(value);
  return value;
}

Deno.test("hset() takes a value nested 30 levels and refuses an empty key inside it, on both stores", async (t) => {
  await using dynamo = await freshStateStore();
  const stores: [string, StateStore][] = [
    ["DynamoDBStateStore", dynamo],
    ["MemoryStateStore", new MemoryStateStore()],
  ];
  for (const [name, state] of stores) {
    await t.step(`${name}: 30 levels of maps, lists and an empty map innermost`, async () => {
      const values = [
        nested(30, (v) => ({ d: v })),
        nested(30, (v) => [v]),
        nested(29, (v) => ({ d: v }), {}),
      ];
      for (const [i, value] of values.entries()) {
        assert.equal(await state.hset("deep", `f${i}`, value), 1);
        assert.deepEqual(await state.hget("deep", `f${i}`), value);
      }
      await assert.rejects(
        () => state.hset("deep", "g", nested(30, (v) => ({ d: v }), {})),
        (error) =>
          error instanceof RangeError && /"g"/.test(error.message) &&
          /30 levels/.test(error.message),
      );
    });
    await t.step(`${name}: an empty key inside the value`, async () => {
      for (const value of [{ "": 1 }, [{ a: { "": [1] } }]]) {
        await assert.rejects(
          () => state.hset("empty", "f", value),
          (error) => error instanceof TypeError && /empty key/.test(error.message),
        );
      }
      assert.equal(await state.exists("empty"), false);
    });
  }
});

Deno.test("a legacy hash a Map cannot hold is refused naming the field and the limit, and migrates once hdel() takes that field", async (t) => {
  await using dynamo = await freshStateStore();
  const memory = new MemoryStateStore();
  using client = testClient();
  const stores: [string, StateStore, (key: string, json: string) => Promise<void>][] = [
    ["DynamoDBStateStore", dynamo, async (key, json) => {
      await client.send(
        new PutItemCommand({
          TableName: dynamo.tableName,
          Item: { pk: { S: key }, value: { S: json }, updated_at: { N: "1700000000" } },
        }),
      );
    }],
    ["MemoryStateStore", memory, (key, json) => {
      stateEntries.get(memory)!.set(key, { value: json });
      return Promise.resolve();
    }],
  ];
  const legacy: [string, string, RegExp, string][] = [
    [
      "nested 31 levels",
      JSON.stringify({ b: 2, bad: nested(31, (v) => ({ d: v })) }),
      /30 levels/,
      "bad",
    ],
    ["an empty key inside a field", '{"b": 2, "bad": {"": 1}}', /empty key/, "bad"],
    ["an empty field name", '{"b": 2, "": 1}', /empty/, ""],
  ];
  for (const [name, state, writeLegacy] of stores) {
    for (const [what, json, limit, bad] of legacy) {
      await t.step(`${name}: ${what}`, async () => {
        const key = `legacy:${what}`;
        await writeLegacy(key, json);
        await assert.rejects(
          () => state.hset(key, "new", 1),
          (error) =>
            (error instanceof TypeError || error instanceof RangeError) &&
            error.message.includes(`legacy field ${JSON.stringify(bad)}`) &&
            limit.test(error.message),
        );
        await assert.rejects(() => state.hdel(key, "b"), limit);
        assert.deepEqual({ ...await state.hgetall(key) }, JSON.parse(json), "nothing changed");
        if (bad !== "") {
          // Taking the field that cannot migrate lets the rest migrate.
          assert.equal(await state.hdel(key, bad), 1);
          assert.equal(await state.hset(key, "new", 1), 1);
          assert.deepEqual({ ...await state.hgetall(key) }, { b: 2, new: 1 });
        }
      });
    }
  }
});

Deno.test("hdel() of more fields than one write can name removes them in batches, counting each field once", async (t) => {
  using counting = countingClient();
  const { client, calls } = counting;
  const dynamo = new DynamoDBStateStore(client, { tableName: uniqueName("batches") });
  const memory = new MemoryStateStore();
  await dynamo.ensureTable();
  const present = Array.from({ length: 1000 }, (_, i) => `f${i}`);
  const asked = [...present, ...Array.from({ length: 200 }, (_, i) => `absent${i}`), "f0"];
  const hash = Object.fromEntries(present.map((f) => [f, 1]));
  await t.step(
    "a native hash: 3 UpdateItems of at most 4 KB, then the emptied key goes",
    async () => {
      await client.send(
        new PutItemCommand({
          TableName: dynamo.tableName,
          Item: {
            pk: { S: "native" },
            hash: { M: Object.fromEntries(present.map((f) => [f, { N: "1" }])) },
          },
        }),
      );
      for (const f of present) await memory.hset("native", f, 1);
      calls.length = 0;
      assert.equal(await dynamo.hdel("native", ...asked), 1000);
      assert.deepEqual(calls, [
        "UpdateItemCommand",
        "UpdateItemCommand",
        "UpdateItemCommand",
        "DeleteItemCommand",
      ]);
      assert.equal(await memory.hdel("native", ...asked), 1000);
      for (const state of [dynamo, memory]) assert.equal(await state.exists("native"), false);
    },
  );
  await t.step("a legacy hash migrates once, without every asked field", async () => {
    await dynamo.set("legacy", { ...hash, keep: 1 });
    await memory.set("legacy", { ...hash, keep: 1 });
    calls.length = 0;
    assert.equal(await dynamo.hdel("legacy", ...asked), 1000);
    assert.deepEqual(calls, ["UpdateItemCommand", "UpdateItemCommand"]);
    assert.equal(await memory.hdel("legacy", ...asked), 1000);
    for (const state of [dynamo, memory]) {
      assert.deepEqual({ ...await state.hgetall("legacy") }, { keep: 1 });
    }
  });
  await t.step(
    "fields of 60 KB: some 16 a write, within the 1 MB a substituted expression may be",
    async () => {
      const long = Array.from({ length: 40 }, (_, i) => String(i).padEnd(60_000, "x"));
      for (const state of [dynamo, memory]) {
        for (const f of long.slice(0, 5)) await state.hset("long", f, 1);
        await state.hset("long", "keep", 1);
      }
      calls.length = 0;
      assert.equal(await dynamo.hdel("long", ...long), 5);
      assert.deepEqual(calls, ["UpdateItemCommand", "UpdateItemCommand", "UpdateItemCommand"]);
      assert.equal(await memory.hdel("long", ...long), 5);
      for (const state of [dynamo, memory]) {
        assert.deepEqual({ ...await state.hgetall("long") }, { keep: 1 });
      }
    },
  );
});
