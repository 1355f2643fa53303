// A session in one call: hset(key, fields, { ttl }) writes N fields and the key's expiry in
// one UpdateItem, so a crash between them cannot leave a session that never expires, and a lost
// answer leaves all of it or none of it.
import assert from "node:assert/strict";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStateStore, OutcomeUnknown } from "../../mod.ts";
import { countingClient, endpoint, freshStateStore } from "../_support/env.ts";
import { capacityClient } from "../_support/capacity.ts";
import { type Fault, FaultProxy } from "../_support/fault_proxy.ts";

const SESSION = Object.fromEntries(
  Array.from({ length: 10 }, (_, i) => [`field${i}`, { n: i, text: `value ${i}` }]),
);
const WRITES = ["PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"];

Deno.test("a 10-field session with a TTL, on an existing hash, is one UpdateItem of 1 write unit", async () => {
  await using direct = await freshStateStore();
  const { client, capacity } = capacityClient();
  await using store = new DynamoDBStateStore(client, { tableName: direct.tableName });
  try {
    await store.hset("session:1", "user", "ann");
    capacity.calls.length = 0;
    capacity.units = 0;
    assert.equal(await store.hset("session:1", SESSION, { ttl: 1800 }), 10);
    assert.deepEqual(capacity.calls, ["UpdateItemCommand"]);
    assert.equal(capacity.units, 1);
    // Renewed on the next request: one call again, no field new.
    capacity.calls.length = 0;
    assert.equal(await store.hset("session:1", { ...SESSION, user: "ann" }, { ttl: 1800 }), 0);
    assert.deepEqual(capacity.calls, ["UpdateItemCommand"]);
    assert.deepEqual({ ...await direct.hgetall("session:1") }, { ...SESSION, user: "ann" });
    assert.ok((await direct.ttl("session:1"))! >= 1799);
  } finally {
    client.destroy();
  }
});

Deno.test("a new session with a TTL is the update that finds no hash, then one Put", async () => {
  await using direct = await freshStateStore();
  const { client, calls } = countingClient();
  await using store = new DynamoDBStateStore(client, { tableName: direct.tableName });
  try {
    assert.equal(await store.hset("session:new", SESSION, { ttl: 60 }), 10);
    assert.deepEqual(calls, ["UpdateItemCommand", "PutItemCommand"]);
    assert.deepEqual({ ...await direct.hgetall("session:new") }, SESSION);
    const left = await direct.ttl("session:new");
    assert.ok(left === 59 || left === 60, `ttl ${left}`);
  } finally {
    client.destroy();
  }
});

Deno.test("the most fields one hset takes (230) fit one UpdateItem on DynamoDB; one more is refused before sending", async () => {
  await using store = await freshStateStore();
  await store.hset("wide", "seed", 0);
  const fields = (n: number) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`field-${i}`, i]));
  assert.equal(await store.hset("wide", fields(230), { ttl: 600 }), 230);
  assert.equal(Object.keys(await store.hgetall("wide")).length, 231);
  await assert.rejects(
    store.hset("wide", fields(231), { ttl: 600 }),
    /at most 230 fit in one write/,
  );
});

/** What the table holds of `key`: its hash's field names and whether it has a TTL. */
async function stored(client: DynamoDBClient, table: string, key: string) {
  const { Item } = await client.send(
    new GetItemCommand({ TableName: table, Key: { pk: { S: key } }, ConsistentRead: true }),
  );
  return { fields: Object.keys(Item?.hash?.M ?? {}).sort(), ttl: Item?.ttl?.N };
}

const FAULTS: Fault[] = [
  { kind: "drop-response" },
  { kind: "truncate", bytes: 20 },
  { kind: "reset" },
];

for (const existing of [true, false]) {
  for (const fault of FAULTS) {
    Deno.test(
      `a 10-field session with a TTL on ${
        existing ? "an existing" : "a new"
      } key, its write met by ${fault.kind}, is all there or not at all`,
      async () => {
        await using direct = await freshStateStore();
        const proxy = new FaultProxy(endpoint());
        const client = new DynamoDBClient({
          endpoint: proxy.endpoint,
          region: "us-east-1",
          credentials: { accessKeyId: "test", secretAccessKey: "test" },
          maxAttempts: 1, // no SDK retry: what the first copy did is what the table shows
        });
        const lossy = new DynamoDBStateStore(client, { tableName: direct.tableName });
        try {
          if (existing) await direct.hset("s", "user", "ann");
          const before = await stored(client, direct.tableName, "s");
          let seen = 0;
          proxy.script = {
            request: ({ operation }) =>
              WRITES.includes(operation) && ++seen === (existing ? 1 : 2)
                ? fault
                : { kind: "pass" },
          };
          const outcome = await lossy.hset("s", SESSION, { ttl: 900 }).then(
            (count) => `answered ${count}`,
            (error) =>
              `${error instanceof OutcomeUnknown ? "unknown" : "failed"}: ${error.message}`,
          );
          proxy.script = { request: () => ({ kind: "pass" }) };
          const after = await stored(client, direct.tableName, "s");
          const all = [...Object.keys(SESSION), ...(existing ? ["user"] : [])].sort();
          if (after.fields.length === before.fields.length) {
            assert.deepEqual(after, before, `none of it (${outcome})`);
          } else {
            assert.deepEqual(after.fields, all, `all of it (${outcome})`);
            assert.ok(after.ttl !== undefined, `and its expiry (${outcome})`);
          }
          if (fault.kind === "drop-response") {
            assert.deepEqual(after.fields, all, "DynamoDB applied the write whose answer was lost");
          }
        } finally {
          client.destroy();
          await proxy.close();
        }
      },
    );
  }
}
