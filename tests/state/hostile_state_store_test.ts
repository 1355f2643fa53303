// Hostile tests: legacy hashes another writer left that a native DynamoDB Map cannot hold.
// Each test fails on the code it was written against and names the behaviour a fix must give.
import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { StateStore } from "../../mod.ts";
import { MemoryStateStore } from "../../src/testing.ts";
import { stateEntries } from "../../src/state/_state_values.ts";
import { freshStateStore, testClient } from "../_support/env.ts";

let deep: unknown = "bottom";
for (let i = 0; i < 40; i++) deep = { d: deep };

// Python dicts happily hold these; json.dumps writes them into the legacy `value`.
const LEGACY: Record<string, string> = {
  "an empty field name": '{"": 1, "b": 2}',
  "a field nested 40 levels deep": JSON.stringify({ b: 2, deep }),
};

type Outcome = { ok: unknown } | { refused: string };

async function outcome(work: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: await work() };
  } catch (error) {
    // A refusal must be ours (TypeError/RangeError naming the field), not DynamoDB's.
    assert.ok(
      error instanceof TypeError || error instanceof RangeError,
      `expected a TypeError or RangeError, got ${(error as Error).name}: ${
        (error as Error).message
      }`,
    );
    return { refused: error.constructor.name };
  }
}

Deno.test("a legacy hash a native Map cannot hold gets the same answer from DynamoDBStateStore and MemoryStateStore, never DynamoDB's ValidationException", async (t) => {
  await using dynamo = await freshStateStore();
  const memory = new MemoryStateStore();
  using client = testClient();
  const writeLegacy = async (key: string, json: string) => {
    await client.send(
      new PutItemCommand({
        TableName: dynamo.tableName,
        Item: { pk: { S: key }, value: { S: json }, updated_at: { N: "1700000000" } },
      }),
    );
    stateEntries.get(memory)!.set(key, { value: json });
  };
  for (const [what, json] of Object.entries(LEGACY)) {
    for (
      const [op, run] of [
        ["hset", (s: StateStore, k: string) => s.hset(k, "new", 1)],
        ["hdel", (s: StateStore, k: string) => s.hdel(k, "b")],
      ] as const
    ) {
      await t.step(`${op} on ${what}`, async () => {
        const key = `${op}:${what}`;
        await writeLegacy(key, json);
        const got = await outcome(() => run(dynamo, key));
        const want = await outcome(() => run(memory, key));
        assert.deepEqual(got, want, "the twin and DynamoDB disagree");
        // Whatever the answer, the fields stay readable and agree.
        assert.deepEqual(await dynamo.hgetall(key), await memory.hgetall(key));
      });
    }
  }
});

Deno.test("hset() refuses a value nested as deep as DynamoDB refuses with a RangeError, on both stores", async (t) => {
  // The check refuses from 33 levels; DynamoDB already refuses 31 and 32 (the `hash` Map is a
  // level of its own), as a raw ValidationException, while the twin takes them.
  await using dynamo = await freshStateStore();
  const stores: [string, StateStore][] = [
    ["DynamoDBStateStore", dynamo],
    ["MemoryStateStore", new MemoryStateStore()],
  ];
  const nested = (levels: number, wrap: (v: unknown) => unknown) => {
    let value: unknown = 1;
    for (let i = 0; i < levels; i++) value = wrap(value);
    return value;
  };
  for (const levels of [31, 32]) {
    for (
      const [shape, wrap] of [["maps", (v: unknown) => ({ d: v })], [
        "lists",
        (v: unknown) => [v],
      ]] as const
    ) {
      for (const [name, store] of stores) {
        await t.step(`${name}: ${levels} ${shape}`, async () => {
          await assert.rejects(
            () => store.hset(`deep:${levels}:${shape}`, "f", nested(levels, wrap)),
            RangeError,
          );
        });
      }
    }
  }
});

Deno.test("hset() takes an array with holes as set() does (holes as null), on both stores", async (t) => {
  // One rule for values: JSON's view of them. set() stores [1, , 3] as [1,null,3]; hset() on
  // DynamoDB sends the hole as a missing AttributeValue (a raw ValidationException), while the
  // twin stores [1,null,3]. `new Array(3)` and `a[5] = x` make such arrays.
  await using dynamo = await freshStateStore();
  const stores: [string, StateStore][] = [
    ["DynamoDBStateStore", dynamo],
    ["MemoryStateStore", new MemoryStateStore()],
  ];
  const holey: unknown[] = [1];
  holey[2] = 3;
  for (const [name, store] of stores) {
    await t.step(name, async () => {
      await store.set("v", holey);
      assert.deepEqual(await store.get("v"), [1, null, 3]);
      assert.equal(await store.hset("h", "f", holey), 1);
      assert.deepEqual(await store.hget("h", "f"), [1, null, 3]);
      assert.equal(await store.hset("h", "g", { nested: new Array(2) }), 1);
      assert.deepEqual(await store.hget("h", "g"), { nested: [null, null] });
    });
  }
});

Deno.test("hdel() of many fields gets the same answer from both stores, never DynamoDB's expression-size ValidationException", async (t) => {
  // `hdel(key, ...Object.keys(await hgetall(key)))` on a big hash: one UpdateExpression naming
  // every field passes DynamoDB's 4 KB expression limit near 370 fields (and the names' total
  // size limit with long field names); the twin takes any number.
  await using dynamo = await freshStateStore();
  const memory = new MemoryStateStore();
  const cases: [string, string[]][] = [
    ["1000 short fields", Array.from({ length: 1000 }, (_, i) => `f${i}`)],
    ["40 fields of 60 KB", Array.from({ length: 40 }, (_, i) => String(i).padEnd(60_000, "x"))],
  ];
  for (const [what, fields] of cases) {
    await t.step(what, async () => {
      const key = `many:${what}`;
      for (const store of [dynamo, memory]) {
        await store.hset(key, "f0", 1);
        await store.hset(key, "keep", 1);
      }
      const got = await outcome(() => dynamo.hdel(key, ...fields));
      const want = await outcome(() => memory.hdel(key, ...fields));
      assert.deepEqual(got, want, "the twin and DynamoDB disagree");
      assert.deepEqual(await dynamo.hgetall(key), await memory.hgetall(key));
    });
  }
});
