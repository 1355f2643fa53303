// The `otherWriters` option: a default store pays nothing for writers that keep none of this
// module's attributes (no stream, no scan, no read of the seq counters beyond reserving seqs, no
// Streams call), and says once when it reads an execution such a writer committed.
import assert from "node:assert/strict";
import { DescribeTableCommand, GetItemCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  newEvent,
  newExecution,
  relayOutbox,
  relaySpawns,
  sweepTimers,
} from "../../mod.ts";
import { endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";
import { countingProxy } from "../_support/counting_proxy.ts";
import { seedPutExecution } from "../_support/seed.ts";

Deno.test("a default store's tables have no stream; otherWriters: true streams the executions table", async () => {
  using client = testClient();
  await using plain = await freshStore();
  for (const spec of Object.values(plain.tables)) {
    const table = (await client.send(new DescribeTableCommand({ TableName: spec.name }))).Table;
    assert.equal(table?.StreamSpecification, undefined, `${spec.name} has a stream`);
  }
  await using mixed = await freshStore({ otherWriters: true });
  const executions = await client.send(
    new DescribeTableCommand({ TableName: mixed.tables.executions.name }),
  );
  assert.equal(executions.Table?.StreamSpecification?.StreamEnabled, true);
});

/** The counters items a request reads by key (`outbox`, `spawn`, ...), from its JSON body. */
function countersRead(body: string, countersTable: string): string[] {
  const input = JSON.parse(body) as {
    TableName?: string;
    Key?: { id?: { S?: string } };
    RequestItems?: Record<string, { Keys?: { id?: { S?: string } }[] }>;
  };
  if (input.TableName === countersTable) return [input.Key?.id?.S ?? "?"];
  return (input.RequestItems?.[countersTable]?.Keys ?? []).map((key) => key.id?.S ?? "?");
}

Deno.test("a default store's commits, relay passes, sweeps and listings make no Scan, no read of the seq counters and no Streams call", async () => {
  const proxy = countingProxy();
  try {
    await using store = await DynamoDBStore.create({
      endpoint: proxy.url,
      prefix: uniqueName("ow"),
    });
    const counters = store.tables.counters.name;
    proxy.requests.length = 0;
    const due = Date.now() / 1000 - 1;
    for (let i = 0; i < 3; i++) {
      const exe = newExecution({ definition_id: "ow", status: "RUNNING" });
      await store.commit(exe, {
        emits: [{ target: "t", event: newEvent("e") }, { target: null, event: newEvent("f") }],
        spawns: [{ childId: `c${i}`, rootPath: "r", context: {} }],
        timers: [{ action: "schedule", path: "a", fireAt: due }],
      });
    }
    // A commit from a store that never reserved: a block of its own.
    const fresh = await DynamoDBStore.create({ endpoint: proxy.url, prefix: storePrefix(store) });
    await fresh.commit(newExecution({ definition_id: "ow" }), {
      emits: [{ target: "t", event: newEvent("g") }],
    });
    await fresh.close();
    assert.equal((await relayOutbox(store, () => {})).delivered, 7);
    assert.equal((await relaySpawns(store, () => {})).delivered, 3);
    assert.equal((await sweepTimers(store, () => {})).delivered, 3);
    await relayOutbox(store, () => Promise.reject(new Error("down")));
    await store.pendingOutbox();
    await store.backlog("outbox");
    await store.backlog("spawns");
    assert.equal((await store.listExecutions({ status: "RUNNING" })).items.length, 3);
    const caughtUp = await store.catchUpStatusIndex();
    const calls = proxy.requests.map((r) => r.call);
    assert.ok(calls.includes("TransactWriteItems") && calls.includes("Query"), calls.join());
    assert.deepEqual(calls.filter((call) => call === "Scan"), [], "no Scan");
    assert.deepEqual(calls.filter((call) => call.startsWith("DynamoDBStreams")), [], "no Streams");
    const seqReads = proxy.requests.filter(({ call, body }) =>
      call !== "UpdateItem" &&
      countersRead(body, counters).some((id) => /^(outbox|spawn)$/.test(id))
    );
    assert.deepEqual(seqReads, [], "no read of the counters items outbox and spawn");
    // Reserving seqs is one plain ADD: no condition, no recorded block.
    const reservations = proxy.requests.filter(({ call, body }) =>
      call === "UpdateItem" &&
      countersRead(body, counters).some((id) => /^(outbox|spawn)$/.test(id))
    );
    assert.equal(
      reservations.length,
      3,
      "an outbox and a spawn block, and the fresh store's outbox block",
    );
    for (const { body } of reservations) {
      const input = JSON.parse(body);
      assert.equal(input.UpdateExpression, "ADD #n :k");
      assert.equal(input.ConditionExpression, undefined);
      assert.equal(input.ReturnValues, "UPDATED_NEW");
    }
    assert.deepEqual(caughtUp, {
      records: 0,
      indexed: 0,
      scanned: 0,
      behind: false,
      skipped: "off",
    });
  } finally {
    await proxy.server.shutdown();
  }
});

function storePrefix(store: DynamoDBStore): string {
  return store.tables.executions.name.replace(/_executions$/, "");
}

Deno.test("the counters item stays small after 300 commits each from a fresh store", async () => {
  using client = testClient();
  await using first = await freshStore();
  const prefix = storePrefix(first);
  for (let i = 0; i < 300; i++) {
    const store = new DynamoDBStore(client, { prefix });
    await store.commit(newExecution({ definition_id: "c" }), {
      emits: [{ target: null, event: newEvent("e") }],
      spawns: [{ childId: `c${i}`, rootPath: "r", context: {} }],
    });
    await store.close();
  }
  for (const id of ["outbox", "spawn"]) {
    const item = (await client.send(
      new GetItemCommand({
        TableName: first.tables.counters.name,
        Key: { id: { S: id } },
        ConsistentRead: true,
      }),
    )).Item!;
    assert.deepEqual(Object.keys(item).sort(), ["id", "n"], `${id}: ${Object.keys(item)}`);
    assert.equal(item.n?.N, String(300 * 1000));
    assert.ok(JSON.stringify(item).length < 4096);
  }
});

/** Runs `f` with console.warn recorded. */
async function warnings(f: () => Promise<unknown>): Promise<string[]> {
  const said: string[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => said.push(args.map(String).join(" "));
  try {
    await f();
  } finally {
    console.warn = warn;
  }
  return said;
}

Deno.test("a default store says once that it reads an execution another writer committed; otherWriters: true says nothing", async (t) => {
  using client = testClient();
  await using ours = await freshStore();
  const prefix = storePrefix(ours);
  const mine = newExecution({ definition_id: "w", status: "RUNNING" });
  await ours.save(mine);
  const python = newExecution({ definition_id: "w", status: "RUNNING", version: 1 });
  await seedPutExecution(client, ours.tables.executions.name, python);

  await t.step("its own executions: nothing said, whatever reads them", async () => {
    const said = await warnings(async () => {
      await ours.load(mine.id);
      await ours.loadForEvent(mine.id, "e");
      await ours.listExecutions({ status: "RUNNING" });
    });
    assert.deepEqual(said, []);
  });
  for (
    const [how, read] of [
      ["load", (s: DynamoDBStore) => s.load(python.id)],
      ["loadForEvent", (s: DynamoDBStore) => s.loadForEvent(python.id, "e")],
      ["a listing", (s: DynamoDBStore) => s.listExecutions({ definitionId: "w" })],
    ] as const
  ) {
    await t.step(`${how} of the other writer's execution: said once per store`, async () => {
      const store = new DynamoDBStore(client, { prefix });
      const said = await warnings(async () => {
        await read(store);
        await read(store);
        await store.load(python.id);
        await store.listExecutions({ definitionId: "w" });
      });
      assert.equal(said.length, 1, said.join("\n"));
      assert.match(said[0]!, /otherWriters: true/);
      assert.match(said[0]!, new RegExp(python.id));
      assert.match(said[0]!, /outbox entries, spawns and timers/);
    });
  }
  await t.step("a store built with otherWriters: true says nothing", async () => {
    const store = new DynamoDBStore(client, { prefix, otherWriters: true });
    const said = await warnings(async () => {
      await store.load(python.id);
      await store.loadForEvent(python.id, "e");
    });
    assert.deepEqual(said, []);
    await store.close();
  });
});

Deno.test("otherWriters is checked like the other options: a boolean, and its near misses and the removed statusFeed and adoptRows are refused by name", async () => {
  using client = testClient();
  assert.throws(
    () => new DynamoDBStore(client, { otherWriters: "yes" as never }),
    (error: Error) =>
      error instanceof TypeError && /otherWriters must be a boolean/.test(error.message),
  );
  assert.throws(
    () => new DynamoDBStore(client, { otherwriters: true } as never),
    (error: Error) => error instanceof TypeError && /otherWriters/.test(error.message),
  );
  for (const removed of ["statusFeed", "adoptRows"]) {
    assert.throws(
      () => new DynamoDBStore(client, { [removed]: false } as never),
      (error: Error) => error instanceof TypeError && error.message.includes(removed),
    );
  }
  await assert.rejects(
    DynamoDBStore.create({ endpoint: endpoint(), otherWriters: 1 as never }),
    /otherWriters must be a boolean/,
  );
});
