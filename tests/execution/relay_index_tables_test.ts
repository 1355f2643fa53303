// Timers through the relay index: a sweep reads what is due, not every armed timer;
// ensureTables adds the index to existing tables and adopts the timers already there.
// Costs are asserted in the capacity units DynamoDB reports (ReturnConsumedCapacity), not time.
import assert from "node:assert/strict";
import {
  DeleteItemCommand,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
} from "@aws-sdk/client-dynamodb";
import {
  type CommitChanges,
  DynamoDBStore,
  type DynamoDBStoreOptions,
  newExecution,
  sweepTimers,
} from "../../mod.ts";
import { capacityClient } from "../_support/capacity.ts";
import { bareTables, countingClient, testClient, uniqueName } from "../_support/env.ts";

const NOT_DUE = 2e9; // 2033: armed, never due in these tests
type TimerChange = NonNullable<CommitChanges["timers"]>[number];

/** Arms `count` timers (`due` of them due at 1000 + i) over executions of up to 90 timers each. */
async function arm(store: DynamoDBStore, count: number, due = 0, tag = "t"): Promise<void> {
  const changes: TimerChange[] = Array.from({ length: count }, (_, i) => ({
    action: "schedule",
    path: `${tag}.${i}`,
    fireAt: i < due ? 1000 + i : NOT_DUE + i,
  }));
  const commits = [];
  for (let i = 0; i < changes.length; i += 90) {
    commits.push(
      store.commit(newExecution({ definition_id: "d" }), { timers: changes.slice(i, i + 90) }),
    );
  }
  await Promise.all(commits);
}

// DynamoDB Local keeps one database per access key and region, and adding an index to an
// existing table there takes time that grows with that whole database (over a minute once the
// rest of the suite has filled it): these tests keep a database of their own.
const REGION = "eu-west-3";

/**
 * Stores on one client and one fresh prefix, the first with its tables ensured. Not create():
 * its deadline counts the table creation, which a loaded DynamoDB Local can take long over.
 */
async function storesOn(
  ...options: DynamoDBStoreOptions[]
): Promise<{ stores: DynamoDBStore[]; prefix: string } & AsyncDisposable> {
  const client = testClient(REGION);
  const prefix = uniqueName("tix");
  const stores = options.map((each) => new DynamoDBStore(client, { prefix, ...each }));
  await stores[0]!.ensureTables();
  return { stores, prefix, [Symbol.asyncDispose]: () => Promise.resolve(client.destroy()) };
}

Deno.test("dueTimers() costs O(due): more armed timers do not raise its read capacity", async () => {
  const { client, capacity } = capacityClient(REGION);
  const store = new DynamoDBStore(client, { prefix: uniqueName("tix") });
  try {
    await store.ensureTables();
    await arm(store, 400, 10);
    const sweep = async (scan: boolean) => {
      capacity.units = 0;
      const due = await store.dueTimers(5000, { scan });
      return { units: capacity.units, due };
    };
    const indexed = await sweep(false);
    const scanned = await sweep(true);
    assert.equal(indexed.due.length, 10);
    assert.deepEqual(indexed.due, scanned.due);

    await arm(store, 1200, 0, "more");
    const indexedMore = await sweep(false);
    const scannedMore = await sweep(true);
    assert.deepEqual(indexedMore.due, indexed.due);
    // The scan pays for every armed timer; the index only for the due ones (plus at most one
    // rounding step per shard and state).
    assert.ok(scannedMore.units > scanned.units * 3, JSON.stringify({ scanned, scannedMore }));
    assert.ok(indexedMore.units <= indexed.units + 1, JSON.stringify({ indexed, indexedMore }));
    // 10 due timers read again from the table (one unit each, strongly consistent), and the
    // index entries (at most one rounding unit per shard read).
    assert.ok(indexedMore.units <= 10 + 8, JSON.stringify({ indexedMore }));
  } finally {
    client.destroy();
  }
});

Deno.test("dueTimers() returns the limit earliest due timers, earliest first", async (t) => {
  const { client, calls } = countingClient(REGION);
  const store = new DynamoDBStore(client, { prefix: uniqueName("tix") });
  try {
    await store.ensureTables();
    const exe = newExecution({ definition_id: "d" });
    // 40 due timers over every shard, fire_at falling as the path number rises; one exactly now.
    await store.commit(exe, {
      timers: Array.from({ length: 40 }, (_, i) => ({
        action: "schedule" as const,
        path: `p${i}`,
        fireAt: 1040 - i,
      })),
    });
    await store.commit(exe, { timers: [{ action: "schedule", path: "later", fireAt: 1041 }] });

    await t.step(
      "one Query per shard of the pending and the waiting timers, one BatchGetItem of the bodies (the timers this store wrote a moment ago are taken as written, not read)",
      async () => {
        calls.length = 0;
        assert.equal((await store.dueTimers(1040)).length, 40);
        assert.deepEqual(calls, [...Array(16).fill("QueryCommand"), "BatchGetItemCommand"]);
      },
    );
    await t.step("limit 5: the 5 earliest", async () => {
      const due = await store.dueTimers(1040, { limit: 5 });
      assert.deepEqual(due.map((x) => x.path), ["p39", "p38", "p37", "p36", "p35"]);
      assert.deepEqual(due[0], { executionId: exe.id, path: "p39", fireAt: 1001 });
    });
    await t.step("limit Infinity: all of them, and fire_at <= now is inclusive", async () => {
      const due = await store.dueTimers(1041, { limit: Infinity });
      assert.equal(due.length, 41);
      assert.deepEqual(due.map((x) => x.fireAt), Array.from({ length: 41 }, (_, i) => 1001 + i));
    });
    await t.step("a bad limit or now is refused before anything is sent", async () => {
      calls.length = 0;
      await assert.rejects(() => store.dueTimers(1040, { limit: 0 }), RangeError);
      await assert.rejects(() => store.dueTimers(1040, { limit: 1.5 }), RangeError);
      await assert.rejects(() => store.dueTimers(NaN), RangeError);
      assert.deepEqual(calls, []);
    });
  } finally {
    client.destroy();
  }
});

Deno.test("a stale index listing loses to deleteTimer()'s fire_at guard", async () => {
  await using env = await storesOn({}, {});
  const [sweeper, writer] = env.stores as [DynamoDBStore, DynamoDBStore];
  const exe = newExecution({ definition_id: "d" });
  await writer.commit(exe, {
    timers: [
      { action: "schedule", path: "moved", fireAt: 1000 },
      { action: "schedule", path: "cancelled", fireAt: 1001 },
      { action: "schedule", path: "kept", fireAt: 1002 },
    ],
  });
  const listed = await sweeper.dueTimers(1500);
  assert.deepEqual(listed.map((x) => x.path), ["moved", "cancelled", "kept"]);
  // After the listing (as an index that lags would still show them), another writer moves one
  // timer and cancels another.
  await writer.commit(exe, {
    timers: [
      { action: "schedule", path: "moved", fireAt: 3000 },
      { action: "cancel", path: "cancelled" },
    ],
  });
  const won = [];
  for (const timer of listed) {
    won.push(await sweeper.deleteTimer(timer.executionId, timer.path, timer.fireAt));
  }
  assert.deepEqual(won, [false, false, true]);
  assert.deepEqual(await sweeper.dueTimers(5000), [
    { executionId: exe.id, path: "moved", fireAt: 3000 },
  ]);
});

Deno.test("ensureTables() adds the relay index to existing tables and adopts the timers already there", async (t) => {
  using tables = testClient(REGION);
  const prefix = uniqueName("tix");
  // Tables as the Python store makes them: keys only, no index.
  await bareTables(tables, prefix);
  const before = new DynamoDBStore(tables, { prefix });
  const raw = testClient(REGION);
  try {
    const put = (execution_id: string, path: string, fireAt: number) =>
      raw.send(
        new PutItemCommand({
          TableName: before.tables.timers.name,
          Item: {
            execution_id: { S: execution_id },
            path: { S: path },
            fire_at: { N: String(fireAt) },
          },
        }),
      );
    // As the Python store writes them: no relay index attributes.
    for (let i = 0; i < 30; i++) await put(`py-${i}`, "wait", 1000 + i);
    // As this module writes them (with the index attributes, whether or not the index exists).
    const exe = newExecution({ definition_id: "d" });
    await before.commit(exe, { timers: [{ action: "schedule", path: "wait", fireAt: 999 }] });

    // A re-schedule and a cancel that land while the adoption runs, just before its writes.
    using counting = countingClient(REGION);
    const { client, calls } = counting;
    let raced = false;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { TableName?: string };
        if (
          context.commandName === "UpdateItemCommand" && !raced &&
          input.TableName === before.tables.timers.name
        ) {
          raced = true;
          await put("py-3", "wait", 5000);
          await raw.send(
            new DeleteItemCommand({
              TableName: before.tables.timers.name,
              Key: { execution_id: { S: "py-4" }, path: { S: "wait" } },
            }),
          );
        }
        return next(args);
      },
      { step: "initialize", name: "race" },
    );
    const after = new DynamoDBStore(client, { prefix }); // a default store: no stream is added
    await assert.rejects(
      () => after.dueTimers(2000),
      /has no index relay_part-relay_order: run ensureTables\(\) once/,
    );
    await after.ensureTables();
    // The relay index on the three relay tables, and the status index on the executions table
    // (no stream: a default store).
    assert.equal(calls.filter((name) => name === "UpdateTableCommand").length, 4);
    for (const table of [after.tables.outbox, after.tables.spawns, after.tables.timers]) {
      const { Table } = await raw.send(new DescribeTableCommand({ TableName: table.name }));
      assert.deepEqual(
        Table?.GlobalSecondaryIndexes?.map((gsi) => [gsi.IndexName, gsi.IndexStatus]),
        [["relay_part-relay_order", "ACTIVE"]],
      );
    }

    await t.step("every timer is listed by the index, except the one a race moved", async () => {
      const due = await after.dueTimers(2000);
      const expected = [
        `${exe.id}:999`,
        ...Array.from({ length: 30 }, (_, i) => `py-${i}:${1000 + i}`).filter((x) =>
          !x.startsWith("py-3:") && !x.startsWith("py-4:")
        ),
      ];
      assert.deepEqual(due.map((x) => `${x.executionId}:${x.fireAt}`), expected);
    });
    await t.step(
      "the raced re-schedule is not clobbered, the cancelled timer not revived",
      async () => {
        const get = (id: string) =>
          raw.send(
            new GetItemCommand({
              TableName: after.tables.timers.name,
              Key: { execution_id: { S: id }, path: { S: "wait" } },
              ConsistentRead: true,
            }),
          );
        assert.equal((await get("py-3")).Item?.fire_at?.N, "5000");
        assert.equal((await get("py-4")).Item, undefined);
      },
    );
    await t.step(
      "a second ensureTables adds nothing; adoptRows takes what the race left",
      async () => {
        calls.length = 0;
        await after.ensureTables();
        assert.ok(!calls.includes("UpdateTableCommand"));
        assert.ok(!calls.includes("ScanCommand"), "no scan of the tables on every ensureTables");
        assert.deepEqual(await after.dueTimers(6000).then((due) => due.length), 29);
        assert.equal(await after.adoptRows("timers"), 1);
        assert.deepEqual(
          (await after.dueTimers(6000)).filter((x) => x.executionId === "py-3"),
          [{ executionId: "py-3", path: "wait", fireAt: 5000 }],
        );
      },
    );
    await t.step(
      "a timer written without the attributes is found at once by a scan, then adopted by a sweep of a store with otherWriters: true once its tables have their streams (a default store's sweep never looks)",
      async () => {
        await put("py-late", "wait", 1);
        assert.equal((await after.dueTimers(2)).length, 0);
        assert.deepEqual(await after.dueTimers(2, { scan: true }), [
          { executionId: "py-late", path: "wait", fireAt: 1 },
        ]);
        const fired: string[] = [];
        const fire = (timer: { executionId: string }) =>
          Promise.resolve(void fired.push(timer.executionId));
        await sweepTimers(after, fire, { now: 2 });
        assert.deepEqual(fired, [], "a default store adopts nothing");
        // A mixed store finds other writers' rows through the tables' streams: its
        // ensureTables() turns them on, and its feed's one-off backfill finds what was written before.
        await using mixed = new DynamoDBStore(raw, { prefix, otherWriters: true });
        await mixed.ensureTables();
        for (let pass = 0; pass < 5 && fired.length === 0; pass++) {
          await sweepTimers(mixed, fire, { now: 2 });
        }
        assert.deepEqual(fired, ["py-late"], "the sweep's feed adopted it, then it fired");
      },
    );
  } finally {
    raw.destroy();
  }
});

Deno.test("ensureTables() adding the relay index is safe when several processes run it at once", async () => {
  using client = testClient(REGION);
  const prefix = uniqueName("tix");
  await bareTables(client, prefix);
  const stores = Array.from(
    { length: 3 },
    () => new DynamoDBStore(client, { prefix }),
  );
  await stores[0]!.commit(newExecution({ definition_id: "d" }), {
    timers: [{ action: "schedule", path: "a", fireAt: 1 }],
  });
  // Tables made without the relay index: all three add it (and adopt the rows) at once.
  await Promise.all(stores.map((store) => store.ensureTables()));
  for (const store of stores) assert.equal((await store.dueTimers(1)).length, 1);
});

Deno.test("ensureTables() creates new tables with their indexes, no UpdateTable", async () => {
  using counting = countingClient(REGION);
  const { client, calls } = counting;
  const store = new DynamoDBStore(client, { prefix: uniqueName("tix") });
  await store.ensureTables();
  assert.ok(!calls.includes("UpdateTableCommand"), calls.join(", "));
  assert.equal(calls.filter((name) => name === "CreateTableCommand").length, 7);
  const { Table } = await client.send(
    new DescribeTableCommand({ TableName: store.tables.timers.name }),
  );
  assert.deepEqual(
    Table?.GlobalSecondaryIndexes?.map((index) => [index.IndexName, index.IndexStatus]).sort(),
    [["relay_part-relay_order", "ACTIVE"]],
  );
  // A second run finds everything in place: no table or index is created again.
  calls.length = 0;
  await store.ensureTables();
  assert.ok(
    !calls.includes("CreateTableCommand") && !calls.includes("UpdateTableCommand"),
    calls.join(),
  );
});
