import assert from "node:assert/strict";
import { BatchWriteItemCommand, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStateStore, globMatch } from "../mod.ts";
import { freshStateStore, pause, testClient } from "./_env.ts";

Deno.test("set() and get() round-trip every JSON type with its type", async () => {
  await using state = await freshStateStore();
  const values: [string, unknown][] = [
    ["object", { a: 1, nested: { list: [1, "two", null, true] } }],
    ["array", [1, 2, { three: 3 }]],
    ["int", 42],
    ["float", -0.125],
    ["true", true],
    ["false", false],
    ["string-42", "42"],
    ["empty", ""],
    ["null", null],
  ];
  for (const [key, value] of values) await state.set(key, value);
  for (const [key, value] of values) assert.deepEqual(await state.get(key), value, key);
  assert.equal(typeof await state.get("string-42"), "string");
  assert.equal(await state.get("missing"), null);
});

Deno.test("a legacy raw, non-JSON string reads back as that string", async () => {
  await using state = await freshStateStore();
  const client = testClient();
  try {
    await client.send(
      new PutItemCommand({
        TableName: state.tableName,
        Item: { pk: { S: "raw" }, value: { S: "not json {" }, updated_at: { N: "1" } },
      }),
    );
    assert.equal(await state.get("raw"), "not json {");
  } finally {
    client.destroy();
  }
});

Deno.test("an expired key is absent on every read path", async () => {
  await using state = await freshStateStore();
  await state.set("short", { v: 1 }, { ttl: 1 });
  await state.hset("hshort", "f", 1);
  assert.equal(await state.expire("hshort", 1), true);
  assert.deepEqual(await state.get("short"), { v: 1 });
  assert.equal(await state.exists("short"), true);
  await pause(2100);
  assert.equal(await state.get("short"), null);
  assert.equal(await state.exists("short"), false);
  assert.deepEqual(await state.keys("*short"), []);
  assert.equal(await state.ttl("short"), null);
  assert.equal(await state.hget("hshort", "f"), null);
  assert.deepEqual(await state.hgetall("hshort"), {});
  assert.equal(await state.hdel("hshort", "f"), 0);
  assert.equal(await state.expire("short", 100), false);
  assert.equal(await state.delete("short"), false);
});

Deno.test("ttl() gives whole seconds left, and null without a TTL or key", async () => {
  await using state = await freshStateStore();
  await state.set("k", 1, { ttl: 100 });
  const left = await state.ttl("k");
  assert.ok(left === 99 || left === 100, `ttl ${left}`);
  await state.set("forever", 1);
  assert.equal(await state.ttl("forever"), null);
  assert.equal(await state.ttl("missing"), null);
  await state.set("k", 2); // SET replaces the whole item, TTL included
  assert.equal(await state.ttl("k"), null);
});

Deno.test("expire() on a live key, a missing key, and with seconds <= 0", async () => {
  await using state = await freshStateStore();
  await state.set("k", "v");
  assert.equal(await state.expire("k", 50), true);
  const left = await state.ttl("k");
  assert.ok(left !== null && left >= 49 && left <= 50);
  assert.equal(await state.expire("missing", 50), false);
  assert.equal(await state.exists("missing"), false, "expire must not create a key");
  assert.equal(await state.expire("k", 0), true);
  assert.equal(await state.exists("k"), false);
  assert.equal(await state.expire("k", -1), false);
});

Deno.test("delete() reports whether a live key was removed", async () => {
  await using state = await freshStateStore();
  await state.set("k", 1);
  assert.equal(await state.delete("k"), true);
  assert.equal(await state.delete("k"), false);
  assert.equal(await state.get("k"), null);
});

Deno.test("keys() matches globs over more than one scan page and never as a regex", async () => {
  await using state = await freshStateStore();
  const client = testClient();
  try {
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
  } finally {
    client.destroy();
  }
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

Deno.test("hset() returns 1 for a new field and 0 for an update; hget and hgetall read them", async () => {
  await using state = await freshStateStore();
  assert.equal(await state.hset("h", "a", 1), 1);
  assert.equal(await state.hset("h", "b", { deep: [1, 2] }), 1);
  assert.equal(await state.hset("h", "a", "one"), 0);
  assert.equal(await state.hget("h", "a"), "one");
  assert.deepEqual(await state.hget("h", "b"), { deep: [1, 2] });
  assert.equal(await state.hget("h", "c"), null);
  assert.equal(await state.hget("missing", "a"), null);
  assert.deepEqual(await state.hgetall("h"), { a: "one", b: { deep: [1, 2] } });
  assert.deepEqual(await state.hgetall("missing"), {});
  assert.equal(await state.get("h"), null, "a key holding only a hash has no value");
});

Deno.test("the hash is a native DynamoDB Map, and a native map from another writer reads as is", async () => {
  await using state = await freshStateStore();
  await state.hset("h", "n", 5);
  const client = testClient();
  try {
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
    assert.deepEqual(await state.hgetall("other"), { x: "1", y: [true] });
    assert.equal(await state.hset("other", "x", 2), 0);
  } finally {
    client.destroy();
  }
});

Deno.test("hdel() counts exactly, absent fields and missing keys included", async () => {
  await using state = await freshStateStore();
  await state.hset("h", "a", 1);
  await state.hset("h", "b", 2);
  await state.hset("h", "c", 3);
  assert.equal(await state.hdel("h", "a", "zz", "a"), 1);
  assert.equal(await state.hdel("h", "b", "c"), 2);
  assert.equal(await state.hdel("h", "b"), 0);
  assert.equal(await state.hdel("missing", "a"), 0);
  assert.deepEqual(await state.hgetall("h"), {});
  await assert.rejects(state.hdel("h"), TypeError);
});

Deno.test("40 concurrent hsets on different fields keep all 40, on an existing and on a brand-new key", async () => {
  await using state = await freshStateStore();
  await state.hset("existing", "seed", 0);
  for (const key of ["existing", "brand-new"]) {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => state.hset(key, `f${i}`, i)),
    );
    assert.deepEqual(results, Array(40).fill(1));
    const all = await state.hgetall(key);
    for (let i = 0; i < 40; i++) assert.equal(all[`f${i}`], i, `${key} f${i}`);
  }
});

Deno.test("10 concurrent hdels of one field count 1 in total", async () => {
  await using state = await freshStateStore();
  await state.hset("h", "f", 1);
  await state.hset("h", "keep", 1);
  const counts = await Promise.all(Array.from({ length: 10 }, () => state.hdel("h", "f")));
  assert.equal(counts.reduce((a, b) => a + b, 0), 1);
  assert.deepEqual(await state.hgetall("h"), { keep: 1 });
});

Deno.test("a legacy item reads through hget/hgetall, then migrates on hset into a native Map keeping its fields", async () => {
  await using state = await freshStateStore();
  const client = testClient();
  try {
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
    assert.deepEqual(await state.hgetall("legacy"), { step: 3, name: "ada" });
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
  } finally {
    client.destroy();
  }
});

Deno.test("an expired hash restarts fresh on hset, without a TTL", async () => {
  await using state = await freshStateStore();
  await state.hset("h", "old", 1);
  await state.expire("h", 1);
  await pause(2100);
  assert.equal(await state.hset("h", "new", 2), 1);
  assert.deepEqual(await state.hgetall("h"), { new: 2 });
  assert.equal(await state.ttl("h"), null);
});

Deno.test("special field names are plain names", async () => {
  await using state = await freshStateStore();
  const fields = [
    "a.b",
    "#x",
    ":y",
    "ttl",
    "value",
    "hash",
    "with space",
    "pk",
    "[0]",
    "ü\u{1F600}",
    "f".repeat(10_000),
  ];
  for (const [i, field] of fields.entries()) {
    assert.equal(await state.hset("h", field, i), 1, field);
  }
  for (const [i, field] of fields.entries()) assert.equal(await state.hget("h", field), i, field);
  assert.deepEqual(Object.keys(await state.hgetall("h")).sort(), [...fields].sort());
  assert.equal(await state.ttl("h"), null, "a field named ttl is not the key's TTL");
  assert.equal(await state.hdel("h", "a.b", "#x"), 2);
});

Deno.test("hash writes refuse to overwrite a plain value; set() replaces a hash", async () => {
  await using state = await freshStateStore();
  await state.set("plain", "text");
  await assert.rejects(state.hset("plain", "f", 1), /holds a value, not a hash/);
  assert.equal(await state.get("plain"), "text");
  await state.hset("h", "f", 1);
  await state.set("h", [1]);
  assert.deepEqual(await state.get("h"), [1]);
  assert.deepEqual(await state.hgetall("h"), {});
});

Deno.test("ensureTable() is idempotent and the constructor sends nothing", async () => {
  await using state = await freshStateStore();
  await state.ensureTable();
  const client = testClient();
  try {
    const again = new DynamoDBStateStore(client, { tableName: state.tableName });
    await again.ensureTable();
    assert.equal(await again.get("nothing"), null);
  } finally {
    client.destroy();
  }
});
