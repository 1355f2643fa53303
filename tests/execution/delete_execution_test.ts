// deleteExecution against DynamoDB Local: what is left in each table (nothing of the
// execution), the calls it takes, a commit racing it, other writers' items, and the CLI.
import assert from "node:assert/strict";
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newEvent, newExecution, StoreConflict } from "../../mod.ts";
import { main } from "../../src/cli.ts";
import {
  countingClient,
  endpoint,
  freshStore,
  pause,
  testClient,
  uniqueName,
} from "../_support/env.ts";
import { seedAppendTrace, seedPutExecution } from "../_support/seed.ts";
import { putAll } from "../_support/put_all.ts";

/** How many items each per-execution table holds for `id`, read straight from the tables. */
async function leftOf(store: DynamoDBStore, id: string) {
  using client = testClient();
  const count = async (table: string, key: string) =>
    (await client.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: "#k = :id",
        ExpressionAttributeNames: { "#k": key },
        ExpressionAttributeValues: { ":id": { S: id } },
        Select: "COUNT",
        ConsistentRead: true,
      }),
    )).Count;
  const t = store.tables;
  return {
    executions: await count(t.executions.name, "id"),
    timers: await count(t.timers.name, "execution_id"),
    trace: await count(t.trace.name, "execution_id"),
    processed: await count(t.processed.name, "execution_id"),
  };
}

const NOTHING = { executions: 0, timers: 0, trace: 0, processed: 0 };

Deno.test("deleteExecution() leaves nothing of an execution with 60 timers, 130 trace steps and 1,100 dedupe marks, in 1 + 3 + ceil(n / 25) calls", async () => {
  using counting = countingClient();
  const { client, calls } = counting;
  const store = new DynamoDBStore(client, {
    prefix: uniqueName("delete"),
    traceMax: 0,
  });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "big", status: "RUNNING" });
  const other = newExecution({ definition_id: "big", status: "RUNNING" });
  const schedule = (from: number) =>
    Array.from({ length: 30 }, (_, i) => ({
      action: "schedule" as const,
      path: `p.${from + i}`,
      fireAt: 1_700_000_000 + from + i,
    }));
  await store.commit(exe, {
    timers: schedule(0),
    emits: [{ target: null, event: newEvent("stays") }],
    spawns: [{ childId: "c", rootPath: "r", context: {} }],
  });
  await store.commit(exe, { timers: schedule(30), trace: { n: 0 } });
  await store.commit(other, { timers: schedule(0), processedEventId: "e", trace: { n: 0 } });
  // The rest as other writers leave them: seed-algorithm trace steps and plain marks.
  await putAll(
    client,
    store.tables.trace.name,
    Array.from({ length: 129 }, (_, i) => ({
      execution_id: { S: exe.id },
      idx: { N: String(i + 1) },
      entry: { S: JSON.stringify({ n: i + 1 }) },
    })),
    8,
  );
  await putAll(
    client,
    store.tables.processed.name,
    Array.from({ length: 1100 }, (_, i) => ({
      execution_id: { S: exe.id },
      event_id: { S: `event-${i}` },
    })),
    8,
  );
  assert.deepEqual(await leftOf(store, exe.id), {
    executions: 1,
    timers: 60,
    trace: 130,
    processed: 1100,
  });
  const otherBefore = await leftOf(store, other.id);

  calls.length = 0;
  const removed = await store.deleteExecution(exe.id);
  assert.deepEqual(removed, { execution: true, timers: 60, trace: 130, processed: 1100 });
  const count = (name: string) => calls.filter((c) => c === name).length;
  assert.deepEqual(
    { delete: count("TransactWriteItemsCommand"), query: count("QueryCommand"), all: calls.length },
    { delete: 1, query: 3, all: 1 + 3 + Math.ceil(60 / 25) + Math.ceil(130 / 25) + 1100 / 25 },
  );
  assert.equal(count("BatchWriteItemCommand"), 3 + 6 + 44);

  assert.deepEqual(await leftOf(store, exe.id), NOTHING);
  assert.deepEqual(await leftOf(store, other.id), otherBefore, "another execution keeps all");
  assert.equal((await store.pendingOutbox()).length, 1, "outbox entries stay for the relay");
  assert.equal((await store.pendingSpawns()).length, 1, "spawns stay for the relay");
  calls.length = 0;
  assert.deepEqual(await store.deleteExecution(exe.id), {
    execution: false,
    timers: 0,
    trace: 0,
    processed: 0,
  });
  assert.deepEqual(calls.sort(), [...Array(3).fill("QueryCommand"), "TransactWriteItemsCommand"]);
});

Deno.test("a commit racing deleteExecution() is removed with it or fails with StoreConflict; nothing of it is left", async () => {
  await using store = await freshStore({ traceMax: 5 });
  await using writer = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix: store.tables.executions.name.replace(/_executions$/, ""),
    traceMax: 5,
  });
  for (let round = 0; round < 24; round++) {
    const exe = newExecution({ definition_id: "race", status: "RUNNING" });
    await writer.commit(exe, {
      processedEventId: "first",
      timers: [{ action: "schedule", path: "a", fireAt: 1 }],
      trace: { n: 0 },
    });
    const commit = (async () => {
      await pause(round % 6);
      return await writer.commit(exe, {
        processedEventId: `racing-${round}`,
        timers: [{ action: "schedule", path: `b${round}`, fireAt: 2 }],
        trace: { n: 1 },
      });
    })();
    const deletion = (async () => {
      await pause((round * 7) % 5);
      return await store.deleteExecution(exe.id);
    })();
    const [committed, deleted] = await Promise.allSettled([commit, deletion]);
    assert.equal(deleted.status, "fulfilled", String((deleted as PromiseRejectedResult).reason));
    if (committed.status === "rejected") {
      assert.ok(committed.reason instanceof StoreConflict, String(committed.reason));
      assert.equal(committed.reason.found, null);
    }
    assert.deepEqual(await leftOf(store, exe.id), NOTHING, `round ${round}`);
  }
  // Both outcomes are legal (runs here see both, e.g. 16 removed and 8 conflicted); which one a
  // round takes depends on whether the commit's transaction lands before the DeleteItem.
});

Deno.test("deleteExecution() removes what Python-store writers left: a whole-item Put execution and seed trace steps", async () => {
  await using store = await freshStore();
  using client = testClient();
  const exe = newExecution({ definition_id: "py", status: "DONE", version: 3 });
  await seedPutExecution(client, store.tables.executions.name, exe);
  for (let n = 0; n < 4; n++) {
    await seedAppendTrace(client, store.tables.trace.name, exe.id, { by: "py", n }, 200);
  }
  assert.deepEqual(await store.deleteExecution(exe.id), {
    execution: true,
    timers: 0,
    trace: 4,
    processed: 0,
  });
  assert.deepEqual(await leftOf(store, exe.id), NOTHING);
});

Deno.test("deleteExecution() of an expired execution removes its item and what it left, and says no live execution was there", async () => {
  let now = Date.now();
  await using store = await freshStore({ finishedTtlSeconds: 60, now: () => now });
  const exe = newExecution({ definition_id: "old", status: "DONE" });
  await store.commit(exe, { processedEventId: "last", trace: { n: 0 } });
  now += 61_000;
  assert.equal(await store.load(exe.id), null);
  assert.deepEqual(await store.deleteExecution(exe.id), {
    execution: false,
    timers: 0,
    trace: 1,
    processed: 1,
  });
  assert.deepEqual(await leftOf(store, exe.id), NOTHING);
});

Deno.test("the CLI's delete asks for --yes (not with --json), then deletes the execution whole", async (t) => {
  await using store = await freshStore();
  const prefix = store.tables.executions.name.replace(/_executions$/, "");
  const run = async (...args: string[]) => {
    const out: string[] = [], err: string[] = [];
    const code = await main([...args, "--prefix", prefix, "--endpoint", endpoint()], {
      out: (line) => out.push(line),
      err: (line) => err.push(line),
    });
    return { code, out: out.join("\n"), err: err.join("\n") };
  };
  const exe = newExecution({ definition_id: "cli", status: "FAILED" });
  await store.commit(exe, {
    processedEventId: "e",
    timers: [{ action: "schedule", path: "retry", fireAt: 1 }],
    trace: { n: 0 },
  });

  await t.step("without --yes: a usage error, and nothing is deleted", async () => {
    const refused = await run("delete", exe.id);
    assert.equal(refused.code, 2);
    assert.match(refused.err, /run it again with --yes/);
    assert.deepEqual(await leftOf(store, exe.id), {
      executions: 1,
      timers: 1,
      trace: 1,
      processed: 1,
    });
  });
  await t.step("with --yes: deleted, and says what went", async () => {
    const done = await run("delete", exe.id, "--yes");
    assert.equal(done.code, 0, done.err);
    assert.match(
      done.out,
      new RegExp(`deleted execution ${exe.id}; removed 1 timer, 1 trace step, 1 dedupe mark `),
    );
    assert.deepEqual(await leftOf(store, exe.id), NOTHING);
  });
  await t.step("--json needs no --yes and prints what was removed (idempotent)", async () => {
    const again = await run("delete", exe.id, "--json");
    assert.equal(again.code, 0, again.err);
    assert.deepEqual(JSON.parse(again.out), {
      id: exe.id,
      execution: false,
      timers: 0,
      trace: 0,
      processed: 0,
    });
  });
  await t.step("usage errors: no id, two ids, a flag of another command, a bad id", async () => {
    assert.equal((await run("delete", "--yes")).code, 2);
    assert.equal((await run("delete", "a", "b", "--yes")).code, 2);
    assert.match((await run("delete", exe.id, "--due")).err, /--due does not apply to delete/);
    assert.equal((await run("delete", "x".repeat(3000), "--yes")).code, 2);
  });
});
