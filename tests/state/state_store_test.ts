import assert from "node:assert/strict";
import { BatchWriteItemCommand, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStateStore, globMatch } from "../../mod.ts";
import { freshStateStore, testClient } from "../_support/env.ts";

Deno.test("a legacy raw, non-JSON string reads back as that string", async () => {
  await using state = await freshStateStore();
  using client = testClient();
  await client.send(
    new PutItemCommand({
      TableName: state.tableName,
      Item: { pk: { S: "raw" }, value: { S: "not json {" }, updated_at: { N: "1" } },
    }),
  );
  assert.equal(await state.get("raw"), "not json {");
});

Deno.test("keys() matches globs over more than one scan page and never as a regex", async () => {
  await using state = await freshStateStore();
  using client = testClient();
  // 1,200 items of ~1 KB: more than the 1 MB one Scan page returns.
  const pad = "x".repeat(1000);
  const requests = Array.from({ length: 1200 }, (_, i) => ({
    PutRequest: {
      Item: {
        pk: { S: i % 100 === 0 ? `user.${i / 100}` : `session:${i}` },
        value: { S: JSON.stringify(pad) },
      },
    },
  }));
  for (let i = 0; i < requests.length; i += 25) {
    await client.send(
      new BatchWriteItemCommand({
        RequestItems: { [state.tableName]: requests.slice(i, i + 25) },
      }),
    );
  }
  await state.set("userx1", 1);
  await state.set("a+b", 1);
  await state.set("(a|b)", 1);
  assert.equal((await state.keys()).length, 1203);
  assert.equal((await state.keys("session:*")).length, 1188);
  assert.deepEqual((await state.keys("session:?")).sort(), [
    "session:1",
    "session:2",
    "session:3",
    "session:4",
    "session:5",
    "session:6",
    "session:7",
    "session:8",
    "session:9",
  ]);
  assert.deepEqual(
    (await state.keys("user.[0-9]")).sort(),
    Array.from({ length: 10 }, (_, i) => `user.${i}`),
  );
  assert.deepEqual((await state.keys("user.1*")).sort(), ["user.1", "user.10", "user.11"]);
  assert.deepEqual(await state.keys("a+b"), ["a+b"]);
  assert.deepEqual(await state.keys("(a|b)"), ["(a|b)"]);
  assert.deepEqual(await state.keys(".*"), []);
});

Deno.test("globMatch() handles classes, negation, escapes and metacharacters", () => {
  assert.equal(globMatch("h?llo", "hello"), true);
  assert.equal(globMatch("h[ae]llo", "hallo"), true);
  assert.equal(globMatch("h[^e]llo", "hello"), false);
  assert.equal(globMatch("h[!e]llo", "hallo"), true);
  assert.equal(globMatch("h[a-b]llo", "hbllo"), true);
  assert.equal(globMatch("h\\*llo", "h*llo"), true);
  assert.equal(globMatch("h\\*llo", "hello"), false);
  assert.equal(globMatch("*a*b*", "xxaxxbxx"), true);
  assert.equal(globMatch("^$.+()|{}", "^$.+()|{}"), true);
  assert.equal(globMatch("[unclosed", "[unclosed"), true);
  assert.equal(globMatch("*", ""), true);
  assert.equal(globMatch("?", ""), false);
  assert.equal(globMatch("a*".repeat(30) + "b", "a".repeat(60)), false);
});

Deno.test("the hash is a native DynamoDB Map, and a native map from another writer reads as is", async () => {
  await using state = await freshStateStore();
  await state.hset("h", "n", 5);
  using client = testClient();
  const raw = await client.send(
    new GetItemCommand({ TableName: state.tableName, Key: { pk: { S: "h" } } }),
  );
  assert.deepEqual(raw.Item?.hash, { M: { n: { N: "5" } } });
  await client.send(
    new PutItemCommand({
      TableName: state.tableName,
      Item: { pk: { S: "other" }, hash: { M: { x: { S: "1" }, y: { L: [{ BOOL: true }] } } } },
    }),
  );
  assert.deepEqual({ ...await state.hgetall("other") }, { x: "1", y: [true] });
  assert.equal(await state.hset("other", "x", 2), 0);
});

Deno.test("a legacy item reads through hget/hgetall, then migrates on hset into a native Map keeping its fields", async () => {
  await using state = await freshStateStore();
  using client = testClient();
  const put = (pk: string) =>
    client.send(
      new PutItemCommand({
        TableName: state.tableName,
        Item: {
          pk: { S: pk },
          value: { S: JSON.stringify({ step: 3, name: "ada" }) },
          updated_at: { N: "1" },
        },
      }),
    );
  await put("legacy");
  assert.equal(await state.hget("legacy", "step"), 3);
  assert.deepEqual({ ...await state.hgetall("legacy") }, { step: 3, name: "ada" });
  assert.equal(await state.hset("legacy", "step", 4), 0);
  assert.equal(await state.hset("legacy", "extra", true), 1);
  const raw = await client.send(
    new GetItemCommand({ TableName: state.tableName, Key: { pk: { S: "legacy" } } }),
  );
  assert.equal(raw.Item?.value, undefined, "the legacy JSON string is gone");
  assert.deepEqual(raw.Item?.hash?.M, {
    step: { N: "4" },
    name: { S: "ada" },
    extra: { BOOL: true },
  });

  await put("legacy2");
  assert.equal(await state.hdel("legacy2", "name", "nope"), 1);
  const raw2 = await client.send(
    new GetItemCommand({ TableName: state.tableName, Key: { pk: { S: "legacy2" } } }),
  );
  assert.equal(raw2.Item?.value, undefined);
  assert.deepEqual(raw2.Item?.hash?.M, { step: { N: "3" } });

  await put("legacy3");
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => state.hset("legacy3", `f${i}`, i)),
  );
  assert.deepEqual(results, Array(20).fill(1));
  const all = await state.hgetall("legacy3");
  assert.equal(
    Object.keys(all).length,
    22,
    "concurrent migrations lose neither old nor new fields",
  );
});

Deno.test("ensureTable() is idempotent and the constructor sends nothing", async () => {
  await using state = await freshStateStore();
  await state.ensureTable();
  using client = testClient();
  const again = new DynamoDBStateStore(client, { tableName: state.tableName });
  await again.ensureTable();
  assert.equal(await again.get("nothing"), null);
});
