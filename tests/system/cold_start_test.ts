// A cold start that goes straight to work: every request a fresh process sends, counted by
// an HTTP proxy in front of DynamoDB Local (so the calls create() makes count too).
import assert from "node:assert/strict";
import {
  DynamoDBStateStore,
  DynamoDBStore,
  newEvent,
  newExecution,
  TableNotFound,
} from "../../mod.ts";
import { endpoint, uniqueName } from "../_support/env.ts";
import { countingProxy } from "../_support/counting_proxy.ts";

Deno.test("a cold DynamoDBStore.create({ ensureTables: false }) makes 1 call, its first commit 2", async (t) => {
  const prefix = uniqueName("cold");
  // Deploy time: the tables are created once, by another process.
  await (await DynamoDBStore.create({ endpoint: endpoint(), prefix })).close();
  const { calls, url, server } = countingProxy();
  await using _server = server;
  await using store = await DynamoDBStore.create({ endpoint: url, prefix, ensureTables: false });
  await t.step("create(): one DescribeTable", () => {
    assert.deepEqual(calls, ["DescribeTable"]);
  });
  await t.step(
    "the first untraced commit with emits: a seq block and the transaction",
    async () => {
      calls.length = 0;
      const exe = newExecution({ definition_id: "cold" });
      await store.commit(exe, { emits: [{ target: null, event: newEvent("hello") }] });
      assert.deepEqual(calls, ["UpdateItem", "TransactWriteItems"]);
    },
  );
  await t.step("the next commit: the transaction alone", async () => {
    calls.length = 0;
    const exe = newExecution({ definition_id: "cold" });
    await store.commit(exe, { emits: [{ target: "x", event: newEvent("again") }] });
    assert.deepEqual(calls, ["TransactWriteItems"]);
  });
});

Deno.test("a cold store's first untraced commit without emits or spawns is 1 call", async () => {
  const prefix = uniqueName("cold");
  await (await DynamoDBStore.create({ endpoint: endpoint(), prefix })).close();
  const { calls, url, server } = countingProxy();
  await using _server = server;
  await using store = await DynamoDBStore.create({ endpoint: url, prefix, ensureTables: false });
  calls.length = 0;
  await store.save(newExecution({ definition_id: "cold" }));
  assert.deepEqual(calls, ["TransactWriteItems"]);
});

Deno.test("a cold DynamoDBStateStore.create({ ensureTable: false }) makes 1 call", async () => {
  const tableName = uniqueName("state");
  await (await DynamoDBStateStore.create({ endpoint: endpoint(), tableName })).close();
  const { calls, url, server } = countingProxy();
  await using _server = server;
  await using state = await DynamoDBStateStore.create({
    endpoint: url,
    tableName,
    ensureTable: false,
  });
  assert.deepEqual(calls, ["DescribeTable"]);
  calls.length = 0;
  await state.set("k", 1);
  assert.deepEqual(calls, ["PutItem"]);
});

Deno.test("a missing table is an immediate TableNotFound naming it and how to create it", async (t) => {
  const { calls, url, server } = countingProxy();
  await using _server = server;
  await t.step("DynamoDBStore", async () => {
    const prefix = uniqueName("missing");
    const started = Date.now();
    const error = await DynamoDBStore.create({ endpoint: url, prefix, ensureTables: false })
      .then(() => null, (e: unknown) => e);
    assert.ok(error instanceof TableNotFound, String(error));
    assert.equal(error.table, `${prefix}_executions`);
    assert.match(error.message, new RegExp(`table ${prefix}_executions does not exist`));
    assert.match(error.message, /ensureTables\(\)/);
    assert.ok(Date.now() - started < 2_000, "no wait for the 30 s deadline");
    assert.deepEqual(calls, ["DescribeTable"]);
  });
  await t.step("DynamoDBStateStore", async () => {
    calls.length = 0;
    const tableName = uniqueName("missing");
    const error = await DynamoDBStateStore.create({ endpoint: url, tableName, ensureTable: false })
      .then(() => null, (e: unknown) => e);
    assert.ok(error instanceof TableNotFound, String(error));
    assert.equal(error.table, tableName);
    assert.match(error.message, /ensureTable\(\)/);
    assert.deepEqual(calls, ["DescribeTable"]);
  });
});

Deno.test("create({ ensureTables: false }) retries the DescribeTable only while DynamoDB does not answer", async () => {
  const prefix = uniqueName("cold");
  await (await DynamoDBStore.create({ endpoint: endpoint(), prefix })).close();
  const { calls, url, server } = countingProxy(4);
  await using _server = server;
  await using _store = await DynamoDBStore.create({
    endpoint: url,
    prefix,
    ensureTables: false,
    backoff: { minDelayMs: 10, maxDelayMs: 50 },
  });
  // The SDK tries a 503 three times: four of them fail one create() attempt (3 requests),
  // and the next attempt succeeds on its second request.
  assert.deepEqual(calls, Array(5).fill("DescribeTable"));
});

Deno.test("a bad ensureTables / ensureTable is refused before anything is sent", async () => {
  const { calls, url, server } = countingProxy();
  await using _server = server;
  await assert.rejects(
    DynamoDBStore.create({ endpoint: url, ensureTables: "no" as unknown as boolean }),
    /ensureTables must be true or false/,
  );
  await assert.rejects(
    DynamoDBStateStore.create({ endpoint: url, ensureTable: 0 as unknown as boolean }),
    /ensureTable must be true or false/,
  );
  assert.deepEqual(calls, []);
});
