// DynamoDBStateStore against what other writers leave in its table: the Python seed's legacy
// JSON values (its json.dumps dialect) and its lazy migration, and native Maps of any writer.
import assert from "node:assert/strict";
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { DynamoDBStateStore, StateStore } from "../../mod.ts";
import { freshStateStore, testClient } from "../_support/env.ts";
import { MemoryStateStore } from "../../src/testing.ts";
import { stateEntries } from "../../src/state/_state_values.ts";

type Item = Record<string, AttributeValue>;

async function withTable(
  body: (state: DynamoDBStateStore, client: DynamoDBClient) => Promise<void>,
): Promise<void> {
  await using state = await freshStateStore();
  using client = testClient();
  await body(state, client);
}

const put = (client: DynamoDBClient, table: string, item: Item) =>
  client.send(new PutItemCommand({ TableName: table, Item: item }));

const raw = async (client: DynamoDBClient, table: string, pk: string) =>
  (await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: pk } } }))).Item;

/** The seed's own lazy migration: copies the legacy fields into a Map, leaves `value`. */
const seedMigration = (client: DynamoDBClient, table: string, pk: string, seed: Item) =>
  client.send(
    new UpdateItemCommand({
      TableName: table,
      Key: { pk: { S: pk } },
      UpdateExpression: "SET #h = if_not_exists(#h, :seed)",
      ExpressionAttributeNames: { "#h": "hash" },
      ExpressionAttributeValues: { ":seed": { M: seed } },
    }),
  );

Deno.test("a field deleted after the seed's migration never comes back from the stale value", async () => {
  await withTable(async (state, client) => {
    await put(client, state.tableName, {
      pk: { S: "k" },
      value: { S: JSON.stringify({ a: 1, b: 2 }) },
      updated_at: { N: "1" },
    });
    await seedMigration(client, state.tableName, "k", { a: { N: "1" }, b: { N: "2" } });
    assert.equal(await state.hdel("k", "b"), 1);
    assert.equal(await state.hget("k", "b"), null);
    assert.equal(await state.hdel("k", "b"), 0);
    assert.deepEqual({ ...await state.hgetall("k") }, { a: 1 });
    assert.equal(await state.hset("k", "b", 3), 1, "b is new again");
    assert.equal(await state.hget("k", "b"), 3);
    // The seed's REMOVE of a field straight on the Map is seen the same way.
    await client.send(
      new UpdateItemCommand({
        TableName: state.tableName,
        Key: { pk: { S: "k" } },
        UpdateExpression: "REMOVE #h.#f",
        ExpressionAttributeNames: { "#h": "hash", "#f": "a" },
      }),
    );
    assert.equal(await state.hget("k", "a"), null);
    assert.equal(await state.hset("k", "a", 5), 1);
  });
});

Deno.test("legacy field names that are Object.prototype members read as plain fields", async () => {
  await withTable(async (state, client) => {
    await put(client, state.tableName, {
      pk: { S: "legacy" },
      value: { S: '{"a": 1, "__proto__": {"x": 1}}' },
    });
    assert.equal(await state.hget("legacy", "toString"), null);
    assert.equal(await state.hget("legacy", "constructor"), null);
    assert.deepEqual(await state.hget("legacy", "__proto__"), { x: 1 });
    assert.equal(await state.hdel("legacy", "toString"), 0);
    const item = await raw(client, state.tableName, "legacy");
    assert.deepEqual(item?.hash?.M, { a: { N: "1" }, ["__proto__"]: { M: { x: { N: "1" } } } });
  });
});

Deno.test("numbers another writer stored read as the nearest JS number and never throw", async () => {
  await withTable(async (state, client) => {
    await put(client, state.tableName, {
      pk: { S: "foreign" },
      hash: {
        M: {
          id: { N: "12345678901234567890" },
          big: { N: "123456789012345678901.5" },
          precise: { N: "0.12345678901234567890123456789012345678" },
          list: { L: [{ N: "99999999999999999999999999999999999999" }] },
          ns: { NS: ["1", "12345678901234567890"] },
          ss: { SS: ["a"] },
        },
      },
    });
    const id = await state.hget("foreign", "id");
    assert.equal(typeof id, "number");
    assert.equal(id, 12345678901234567890);
    const all = await state.hgetall("foreign");
    assert.equal(all.big, 123456789012345678901.5);
    assert.equal(all.precise, 0.12345678901234568);
    assert.deepEqual(all.list, [1e38]);
    assert.deepEqual(all.ns, [1, 12345678901234567890]);
    assert.deepEqual(all.ss, ["a"]);
    JSON.stringify(all); // no BigInt anywhere
    assert.equal(await state.hset("foreign", "x", 1), 1);
    const item = await raw(client, state.tableName, "foreign");
    assert.equal(item?.hash?.M?.id?.N, "12345678901234567890", "untouched fields keep digits");
  });
});

Deno.test("hash numbers beyond 2^53 are stored as their exact decimal digits", async () => {
  await withTable(async (state, client) => {
    await state.hset("h", "n", 2 ** 60);
    await state.hset("h", "e", 1e21);
    const item = await raw(client, state.tableName, "h");
    assert.equal(item?.hash?.M?.n?.N, "1152921504606846976");
    assert.equal(item?.hash?.M?.e?.N, "1000000000000000000000");
    // A legacy key holding a big id migrates, keeping the id's digits for other readers.
    await put(client, state.tableName, {
      pk: { S: "legacy" },
      value: { S: '{"id": 12345678901234567890, "n": 1}' },
    });
    assert.equal(await state.hset("legacy", "n", 2), 0);
    const migrated = await raw(client, state.tableName, "legacy");
    assert.equal(migrated?.hash?.M?.id?.N, "12345678901234567890");
    assert.equal(migrated?.value, undefined);
  });
});

Deno.test("a legacy value in Python's json.dumps dialect reads its fields and migrates", async () => {
  await withTable(async (state, client) => {
    const text = '{"step": "planning", "score": NaN, "hi": Infinity, "lo": -Infinity, ' +
      '"note": "NaN and Infinity in a string stay", "list": [1, NaN]}';
    await put(client, state.tableName, { pk: { S: "py" }, value: { S: text } });
    const expected = {
      step: "planning",
      score: null,
      hi: null,
      lo: null,
      note: "NaN and Infinity in a string stay",
      list: [1, null],
    };
    assert.deepEqual({ ...await state.hgetall("py") }, expected);
    assert.equal(await state.hget("py", "step"), "planning");
    assert.deepEqual(await state.get("py"), expected);
    assert.equal(await state.hset("py", "step", "acting"), 0);
    assert.deepEqual({ ...await state.hgetall("py") }, { ...expected, step: "acting" });
    const item = await raw(client, state.tableName, "py");
    assert.deepEqual(item?.hash?.M?.score, { NULL: true });
    assert.equal(item?.value, undefined);
    // A raw (non-JSON) legacy string stays that string.
    await put(client, state.tableName, { pk: { S: "rawnan" }, value: { S: "NaN" } });
    assert.equal(await state.get("rawnan"), "NaN");
  });
});

Deno.test("an item left with an empty Map and no value is absent for every method", async () => {
  await withTable(async (state, client) => {
    const future = Math.floor(Date.now() / 1000) + 10_000;
    await put(client, state.tableName, {
      pk: { S: "empty" },
      hash: { M: {} },
      ttl: { N: String(future) },
    });
    await put(client, state.tableName, { pk: { S: "bare" }, updated_at: { N: "1" } });
    for (const key of ["empty", "bare"]) {
      assert.equal(await state.exists(key), false, key);
      assert.equal(await state.ttl(key), null, key);
      assert.equal(await state.expire(key, 100), false, key);
      assert.equal(await state.delete(key), false, key);
    }
    await put(client, state.tableName, {
      pk: { S: "empty" },
      hash: { M: {} },
      ttl: { N: String(future) },
    });
    assert.deepEqual(await state.keys(), []);
    assert.equal(await state.hdel("empty", "a"), 0);
    assert.equal(await state.hset("empty", "a", 1), 1);
    assert.equal(await state.ttl("empty"), null, "a later hset starts afresh, without TTL");
    assert.deepEqual(await state.keys(), ["empty"]);
    assert.equal(await state.hdel("empty", "a"), 1);
    assert.equal(await raw(client, state.tableName, "empty"), undefined, "the item is deleted");
  });
});

Deno.test("hset() on an expired item whose Map has a __proto__ field starts afresh", async () => {
  await withTable(async (state, client) => {
    // The SDK cannot parse such an item back out of a failed condition: the store re-reads.
    await put(client, state.tableName, {
      pk: { S: "old" },
      hash: { M: { y: { M: JSON.parse('{"__proto__": {"N": "1"}}') } } },
      ttl: { N: String(Math.floor(Date.now() / 1000) - 100) },
    });
    assert.equal(await state.hset("old", "a", 1), 1);
    assert.deepEqual({ ...await state.hgetall("old") }, { a: 1 });
    await state.hset("old", "__proto__", { __proto__: 1 } as unknown);
    assert.equal(await state.expire("old", 1000), true);
    assert.equal(await state.hdel("old", "a"), 1);
  });
});

// Legacy hashes another writer left that a native DynamoDB Map cannot hold.
// Each test fails on the code it was written against and names the behaviour a fix must give.
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
