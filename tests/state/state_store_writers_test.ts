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
import type { DynamoDBStateStore } from "../../mod.ts";
import { freshStateStore, testClient } from "../_support/env.ts";

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
