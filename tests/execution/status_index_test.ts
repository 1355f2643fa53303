// The status index against DynamoDB Local: what a commit writes for it (nothing unless the status
// changes), what a listing reads as the table grows (capacity units as DynamoDB reports them),
// and the executions the Python store leaves without its attributes.
import assert from "node:assert/strict";
import { CreateTableCommand, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, IndexNotFound, newExecution } from "../../mod.ts";
import { capacityClient } from "../_support/capacity.ts";
import { countingClient, freshStore, ownRegion, testClient, uniqueName } from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";
import { fillExecutions } from "../_support/executions.ts";

const YEAR_AGO = Date.now() / 1000 - 365 * 86_400;

Deno.test("listExecutions({ status }) reads as much at 3,000 executions as at 300 (within 2×), where a scan reads ten times more", async () => {
  const { client, capacity } = capacityClient();
  const store = new DynamoDBStore(client, { prefix: uniqueName("six") });
  try {
    await store.ensureTables();
    const table = store.tables.executions.name;
    const running = await fillExecutions(client, table, 10, { status: "RUNNING", from: YEAR_AGO });
    await fillExecutions(client, table, 290, { status: "DONE", from: YEAR_AGO + 100 });
    const measure = async (options: Parameters<DynamoDBStore["listExecutions"]>[0]) => {
      capacity.units = 0;
      capacity.calls.length = 0;
      const page = await store.listExecutions(options);
      return { units: capacity.units, calls: capacity.calls.length, items: page.items };
    };
    const cost = async () => ({
      status: await measure({ status: "RUNNING", limit: 10 }),
      page: await measure({ limit: 20 }),
      scan: await measure({ status: "RUNNING", limit: 10, scan: true }),
    });
    const small = await cost();
    assert.deepEqual(small.status.items.map((s) => s.id), running.map((e) => e.id).reverse());
    assert.equal(small.page.items.length, 20);
    await fillExecutions(client, table, 2700, { status: "DONE", from: YEAR_AGO + 1000 });
    const large = await cost();
    assert.deepEqual(large.status.items, small.status.items);
    assert.equal(large.page.items.length, 20);
    const figures = JSON.stringify({ small, large }, (k, v) => k === "items" ? undefined : v);
    assert.ok(large.status.units <= Math.max(small.status.units * 2, 1), figures);
    assert.ok(large.status.calls <= small.status.calls * 2, figures);
    assert.ok(large.page.units <= Math.max(small.page.units * 2, 1), figures);
    assert.ok(large.scan.units > small.scan.units * 5, figures);
  } finally {
    client.destroy();
  }
});

Deno.test("a commit stays one TransactWriteItems and leaves the status index's attributes on the execution", async () => {
  using counting = countingClient();
  const store = new DynamoDBStore(counting.client, {
    prefix: uniqueName("six"),
  });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "order", status: "RUNNING", active_path: "a.b" });
  await store.save(exe);
  counting.calls.length = 0;
  const before = Date.now() / 1000;
  exe.status = "DONE";
  await store.save(exe);
  assert.deepEqual(counting.calls, ["TransactWriteItemsCommand"]);
  const item = (await counting.client.send(
    new GetItemCommand({
      TableName: store.tables.executions.name,
      Key: { id: { S: exe.id } },
      ConsistentRead: true,
    }),
  )).Item!;
  assert.match(item.status_shard!.S!, /^DONE#([0-9]|1[0-5])$/);
  const updatedAt = Number(item.updated_at!.N);
  assert.ok(updatedAt >= before - 1 && updatedAt <= Date.now() / 1000 + 1);
  assert.equal(item.status_at?.N, item.updated_at!.N, "it entered DONE with this commit");
  assert.equal(item.summary, undefined, "the index projects no summary: items decide");
  const listed = await store.listExecutions({ status: "DONE" });
  assert.deepEqual(listed.items.map((s) => [s.id, s.updated_at]), [[exe.id, updatedAt]]);
});

Deno.test("a commit that keeps the status writes nothing to the status index, and keeps the time it entered it", async () => {
  const { client, capacity } = capacityClient(undefined, "INDEXES");
  const prefix = uniqueName("six");
  const store = new DynamoDBStore(client, { prefix });
  try {
    await store.ensureTables();
    const exe = newExecution({ definition_id: "order", status: "RUNNING" });
    await store.save(exe);
    const read = async () =>
      (await client.send(
        new GetItemCommand({
          TableName: store.tables.executions.name,
          Key: { id: { S: exe.id } },
          ConsistentRead: true,
        }),
      )).Item!;
    const entered = (await read()).status_at!.N;
    capacity.indexUnits = 0;
    exe.context = { step: 1 };
    await store.save(exe);
    assert.equal(capacity.indexUnits, 0, "no index write for a commit that keeps the status");
    // A store that never read it does not know its status: the commit keeps the time too.
    const other = new DynamoDBStore(client, { prefix });
    exe.context = { step: 2 };
    await other.save(exe);
    assert.equal(capacity.indexUnits, 0);
    assert.equal((await read()).status_at!.N, entered);
    // ...and one that changes it moves the entry, also from a store that did not know it.
    exe.status = "SUSPENDED";
    await new DynamoDBStore(client, { prefix }).save(exe);
    assert.ok(capacity.indexUnits > 0);
    const moved = await read();
    assert.match(moved.status_shard!.S!, /^SUSPENDED#/);
    assert.ok(Number(moved.status_at!.N) > Number(entered));
    assert.deepEqual(
      (await store.listExecutions({ status: "SUSPENDED" })).items.map((s) => s.id),
      [exe.id],
    );
    assert.deepEqual((await store.listExecutions({ status: "RUNNING" })).items, []);
  } finally {
    client.destroy();
  }
});

Deno.test("an execution the Python store wrote (a whole-item Put drops the attributes) is found with scan: true, its updated_at unknown", async () => {
  await using store = await freshStore();
  using client = testClient();
  const table = store.tables.executions.name;
  const exe = newExecution({ definition_id: "py", status: "RUNNING" });
  await store.save(exe);
  const done = { ...exe, status: "DONE" as const, version: 2 };
  await seedPutExecution(client, table, done);
  assert.deepEqual((await store.listExecutions({ status: "RUNNING" })).items, []);
  assert.deepEqual((await store.listExecutions({ status: "DONE" })).items, []);
  const scanned = await store.listExecutions({ status: "DONE", scan: true });
  assert.deepEqual(scanned.items.map((s) => [s.id, s.status, s.version, s.updated_at]), [
    [exe.id, "DONE", 2, null],
  ]);
  const dated = { status: "DONE" as const, scan: true, updatedBefore: Date.now() / 1000 };
  assert.deepEqual((await store.listExecutions(dated)).items, [], "undated: not before anything");
  assert.equal(
    (await store.listExecutions({ ...dated, includeUndated: true })).items[0]?.id,
    exe.id,
  );
  assert.equal((await store.inspectExecution(exe.id))?.updatedAt, null);
  // The next commit of this module puts it back in the index.
  const loaded = (await store.load(exe.id))!;
  await store.save(loaded);
  assert.equal((await store.listExecutions({ status: "DONE" })).items[0]?.id, exe.id);
});

Deno.test("listExecutions({ status }) on a table without the status index is an IndexNotFound naming it; ensureTables() adds it", async () => {
  // A database of its own (another region): adding an index to a table of DynamoDB Local takes
  // time that grows with everything else in that database.
  using client = testClient(ownRegion("noidx"));
  const prefix = uniqueName("noidx");
  await client.send(
    new CreateTableCommand({
      TableName: `${prefix}_executions`,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
    }),
  );
  const store = new DynamoDBStore(client, { prefix });
  const exe = newExecution({ definition_id: "d", status: "FAILED" });
  await store.save(exe);
  const error = await store.listExecutions({ status: "FAILED" }).catch((e) => e);
  assert.ok(error instanceof IndexNotFound, String(error));
  assert.equal(error.index, "status_shard-status_at");
  assert.match(error.message, /run ensureTables\(\) once.*scan: true/);
  assert.equal((await store.listExecutions({ status: "FAILED", scan: true })).items.length, 1);
  await store.ensureTables();
  assert.deepEqual(
    (await store.listExecutions({ status: "FAILED" })).items.map((s) => s.id),
    [exe.id],
  );
});

Deno.test("listExecutions(), deleteExecutions() and inspectExecution() refuse bad input before anything is sent", async () => {
  using counting = countingClient();
  const store = new DynamoDBStore(counting.client, {
    prefix: uniqueName("six"),
  });
  const cases: [object, RegExp][] = [
    [{ status: "RUNNING", updatedBefore: Date.now() }, /updatedBefore .*epoch seconds/],
    [{ status: "RUNNING", updatedBefore: "yesterday" }, /updatedBefore must be a finite number/],
    [{ status: [] }, /selects nothing/],
    [{ status: "RUNNING", scan: "yes" }, /scan must be a boolean/],
    [{ status: "RUNNING", updatedbefore: 1 }, /did you mean "updatedBefore"/],
  ];
  for (const [options, message] of cases) {
    await assert.rejects(store.listExecutions(options as never), message, JSON.stringify(options));
  }
  const deletes: [object, RegExp][] = [
    [{ updatedBefore: 1e9 }, /needs a status/],
    [{ status: "DONE" }, /needs updatedBefore/],
    [{ status: ["DONE", "PENDING"], updatedBefore: 1e9 }, /PENDING is open: pass allowOpen/],
    [{ status: "DONE", updatedBefore: 1e9, definitonId: "d" }, /did you mean "definitionId"/],
    [{ status: "DONE", updatedBefore: 1e9, onProgress: "yes" }, /onProgress must be a function/],
  ];
  for (const [options, message] of deletes) {
    await assert.rejects(store.deleteExecutions(options as never), message);
  }
  await assert.rejects(store.inspectExecution("x".repeat(2049)), /at most 2048/);
  assert.deepEqual(counting.calls, []);
});
