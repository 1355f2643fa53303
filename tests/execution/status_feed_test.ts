// The status feed: executions another writer committed last (the Python store's whole-item
// Put drops the status index's attributes) are listed by status again, from the table's stream.
import assert from "node:assert/strict";
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, type Execution, newExecution } from "../../mod.ts";
import { endpoint, ownRegion, pause, testClient, uniqueName } from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";
import { capacityClient } from "../_support/capacity.ts";
import { fillExecutions } from "../_support/executions.ts";
import { seedWrite } from "../_support/seed_writer.ts";

/** These tables have streams: a database of this file's own (see `ownRegion`). */
const REGION = ownRegion("sf");

/** The Python store's commit of `exe`: the next version, as a whole-item Put. */
async function pythonCommit(
  client: ReturnType<typeof testClient>,
  store: DynamoDBStore,
  exe: Execution,
  change: Partial<Execution> = {},
): Promise<Execution> {
  const next = { ...exe, ...change, version: exe.version + 1 };
  await seedPutExecution(client, store.tables.executions.name, next);
  return next;
}

async function ids(store: DynamoDBStore, status: Execution["status"]): Promise<string[]> {
  return (await store.listExecutions({ status, limit: 1000 })).items.map((s) => s.id);
}

/**
 * The ids listed in `status` once they are `expected` (sorted), within 5 s: on AWS (and through
 * the index lag proxy, HAREL_INDEX_LAG_MS) the index shows an entry a moment after its write.
 */
async function listed(store: DynamoDBStore, status: Execution["status"], expected: string[]) {
  const want = [...expected].sort();
  let got: string[] = [];
  for (const deadline = Date.now() + 5000; Date.now() < deadline; await pause(100)) {
    got = (await ids(store, status)).sort();
    if (JSON.stringify(got) === JSON.stringify(want)) return;
  }
  assert.deepEqual(got, want, `listed in ${status}`);
}

Deno.test("listExecutions() lists by status the executions the Python store committed last", async (t) => {
  using client = testClient(REGION);
  const prefix = uniqueName("sf");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });

  await t.step("one this store started and Python went on with", async () => {
    const exe = newExecution({ definition_id: "orders", status: "RUNNING" });
    await store.commit(exe);
    const python = await pythonCommit(client, store, exe);
    await store.catchUpStatusIndex();
    await listed(store, "RUNNING", [python.id]);
    const [summary] = (await store.listExecutions({ status: "RUNNING" })).items;
    assert.equal(summary!.version, python.version);
  });

  await t.step("one Python started, and one Python moved to DONE", async () => {
    const started = newExecution({ definition_id: "orders", status: "RUNNING", version: 1 });
    await seedPutExecution(client, store.tables.executions.name, started);
    const [running] = (await ids(store, "RUNNING")).filter((id) => id !== started.id);
    const moved = await store.load(running!);
    await pythonCommit(client, store, moved!, { status: "DONE", outcome: "ok" });
    const round = await store.catchUpStatusIndex();
    assert.equal(round.skipped, null);
    assert.equal(round.indexed, 2);
    await listed(store, "RUNNING", [started.id]);
    await listed(store, "DONE", [running!]);
  });

  await t.step("a listing catches up on its own", async () => {
    const exe = newExecution({ definition_id: "orders", status: "SUSPENDED", version: 1 });
    await seedPutExecution(client, store.tables.executions.name, exe);
    // A store that has not read the feed yet reads it in its first listing.
    await using other = new DynamoDBStore(testClient(REGION), { prefix, otherWriters: true });
    await listed(other, "SUSPENDED", [exe.id]);
  });

  await t.step("a status kept by Python keeps the time it entered it", async () => {
    const exe = newExecution({ definition_id: "orders", status: "PENDING" });
    await store.commit(exe);
    const key = { id: { S: exe.id } };
    const at = async () =>
      (await client.send(
        new GetItemCommand({ TableName: store.tables.executions.name, Key: key }),
      )).Item?.status_at?.N;
    const entered = await at();
    assert.notEqual(entered, undefined);
    await pause(1100);
    let python = await pythonCommit(client, store, exe);
    python = await pythonCommit(client, store, python);
    await store.catchUpStatusIndex();
    assert.equal(await at(), entered);
    // And our next commit, still PENDING, keeps it too.
    const loaded = (await store.load(exe.id))!;
    await store.commit(loaded);
    assert.equal(await at(), entered);
  });

  await t.step("nothing is written when the execution moved on since the record", async () => {
    const exe = newExecution({ definition_id: "orders", status: "RUNNING" });
    await store.commit(exe);
    const python = await pythonCommit(client, store, exe);
    const ours = (await store.load(python.id))!;
    ours.status = "CANCELLED";
    await store.commit(ours);
    await store.catchUpStatusIndex();
    await listed(store, "CANCELLED", [exe.id]);
    assert.ok(!(await ids(store, "RUNNING")).includes(exe.id));
  });
});

Deno.test("an execution the Python store committed is listed at its commit time: below one of ours committed after it", async () => {
  const prefix = uniqueName("sf");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  await store.catchUpStatusIndex(); // the one-off scan of an empty table
  const [python] = (await seedWrite({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    commits: 0,
  })).executions;
  await pause(1100);
  const ours = newExecution({ definition_id: "orders", status: "RUNNING" });
  await store.commit(ours);
  // The round comes later still: its own time is no one's commit time.
  await pause(1100);
  assert.equal((await store.catchUpStatusIndex()).indexed, 1);
  assert.deepEqual(await ids(store, "RUNNING"), [ours.id, python!.id]);
});

Deno.test("catchUpStatusIndex() finds once the rows written before the stream was on", async () => {
  using client = testClient(REGION);
  const prefix = uniqueName("sf");
  {
    // A fleet that never turned the feed on: the table has no stream.
    await using off = await DynamoDBStore.create({
      endpoint: endpoint(),
      region: REGION,
      prefix,
    });
    assert.deepEqual(await off.catchUpStatusIndex(), {
      records: 0,
      indexed: 0,
      scanned: 0,
      behind: false,
      skipped: "off",
    });
  }
  const exes = Array.from(
    { length: 5 },
    () => newExecution({ definition_id: "d", status: "RUNNING", version: 1 }),
  );
  for (const exe of exes) await seedPutExecution(client, `${prefix}_executions`, exe);
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  const round = await store.catchUpStatusIndex();
  assert.equal(round.indexed, 5);
  assert.equal(round.scanned, 5);
  await listed(store, "RUNNING", exes.map((e) => e.id));
  const again = await store.catchUpStatusIndex();
  assert.equal(again.scanned, 0, "the scan is done once");
  assert.equal(again.indexed, 0);
});

Deno.test("one store at a time reads the feed: another's round is skipped as leased", async () => {
  const prefix = uniqueName("sf");
  await using a = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  await using b = new DynamoDBStore(testClient(REGION), { prefix, otherWriters: true });
  const [one, two] = await Promise.all([a.catchUpStatusIndex(), b.catchUpStatusIndex()]);
  assert.deepEqual([one.skipped, two.skipped].sort(), ["leased", null].sort());
  // The lease is given back at the end of a round: the next one runs.
  assert.equal((await b.catchUpStatusIndex()).skipped, null);
});

Deno.test("catchUpStatusIndex() refuses options it does not know", async () => {
  await using store = new DynamoDBStore(testClient(REGION), { prefix: uniqueName("sf") });
  await assert.rejects(
    store.catchUpStatusIndex({ signl: AbortSignal.timeout(1) } as never),
    /signl/,
  );
  assert.throws(
    () => new DynamoDBStore(testClient(REGION), { otherWriters: "yes" as never }),
    TypeError,
  );
});

Deno.test("the feed's cost: per other writer's commit, and a RUNNING page at 300 and 3,000 rows", async () => {
  const { client, capacity } = capacityClient(REGION);
  const prefix = uniqueName("sf");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  await using measured = new DynamoDBStore(client, { prefix, otherWriters: true });
  await measured.catchUpStatusIndex(); // the one-off scan of an empty table
  using writer = testClient(REGION);
  const table = store.tables.executions.name;
  const commits = 60;
  const page = async () => {
    capacity.units = 0;
    await measured.listExecutions({ status: "RUNNING", limit: 50 });
    return capacity.units;
  };
  const perCommit: number[] = [];
  const pages: number[] = [];
  for (const rows of [300, 3000]) {
    const have = (await store.listExecutions({ status: "DONE", limit: 1 })).items.length;
    await fillExecutions(writer, table, rows - (have ? 300 : 0), { status: "DONE", from: 1e9 });
    const running = Array.from(
      { length: commits },
      () => newExecution({ definition_id: "d", status: "RUNNING", version: 1 }),
    );
    for (const exe of running) await seedPutExecution(writer, table, exe);
    // The rows filled (this module's commits, in the index already) cost their records only.
    while ((await measured.catchUpStatusIndex()).records > commits);
    for (const exe of running) await seedPutExecution(writer, table, { ...exe, version: 2 });
    capacity.units = 0;
    const round = await measured.catchUpStatusIndex();
    assert.equal(round.indexed, commits, JSON.stringify(round));
    perCommit.push(capacity.units / commits);
    pages.push(await page());
  }
  console.log(`write units per other writer's commit: ${perCommit}; page of 50: ${pages}`);
  // An item under 1 KB: one write unit to put it back and one for its index entry; the
  // round's lease and checkpoint (a write unit each) are shared by the records it reads.
  for (const units of perCommit) assert.ok(units <= 2.1, `${units} units a commit`);
  assert.ok(pages[1]! <= pages[0]! * 1.1, `a page costs ${pages} at 300 and 3,000 rows`);
  await client.send(new PutItemCommand({ TableName: table, Item: { id: { S: "x" } } }));
  client.destroy();
});
