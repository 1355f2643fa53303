// deleteExecutions against DynamoDB Local: reads through the status index (no scan), a run
// that stops half-way finished by the next, a commit racing it, lost answers, and executions the
// Python store wrote.
import assert from "node:assert/strict";
import { BatchWriteItemCommand, DynamoDBClient, QueryCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newExecution, OutcomeUnknown } from "../../mod.ts";
import type { DynamoDBSender } from "../../src/dynamo/_dynamo.ts";
import { countingClient, endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";
import { fillExecutions } from "../_support/executions.ts";
import { FaultProxy } from "../_support/fault_proxy.ts";

const YEAR_AGO = Date.now() / 1000 - 365 * 86_400;
const CUTOFF = YEAR_AGO + 1000;

/** The items each table holds under `ids`, read straight from the tables. */
async function leftOf(store: DynamoDBStore, ids: string[]): Promise<number> {
  using client = testClient();
  let total = 0;
  const t = store.tables;
  for (const id of ids) {
    for (
      const [table, key] of [[t.executions.name, "id"], [t.timers.name, "execution_id"], [
        t.trace.name,
        "execution_id",
      ], [t.processed.name, "execution_id"]] as const
    ) {
      total += (await client.send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: "#k = :id",
          ExpressionAttributeNames: { "#k": key },
          ExpressionAttributeValues: { ":id": { S: id } },
          Select: "COUNT",
          ConsistentRead: true,
        }),
      )).Count!;
    }
  }
  return total;
}

/** Old finished executions, each with a timer, a trace step and a dedupe mark. */
async function oldFinished(store: DynamoDBStore, count: number): Promise<string[]> {
  using client = testClient();
  const exes = await fillExecutions(client, store.tables.executions.name, count, {
    status: "DONE",
    from: YEAR_AGO,
  });
  // What commits leave besides the execution: written as other writers would.
  for (const exe of exes) {
    const t = store.tables;
    await client.send(
      new BatchWriteItemCommand({
        RequestItems: {
          [t.timers.name]: [{
            PutRequest: {
              Item: { execution_id: { S: exe.id }, path: { S: "p" }, fire_at: { N: "9" } },
            },
          }],
          [t.trace.name]: [{
            PutRequest: {
              Item: { execution_id: { S: exe.id }, idx: { N: "0" }, entry: { S: "{}" } },
            },
          }],
          [t.processed.name]: [{
            PutRequest: { Item: { execution_id: { S: exe.id }, event_id: { S: "e" } } },
          }],
        },
      }),
    );
  }
  return exes.map((exe) => exe.id);
}

Deno.test("deleteExecutions() reads through the status index: 16 Queries to find 10 among 1,010, no scan", async () => {
  using counting = countingClient();
  const store = new DynamoDBStore(counting.client, {
    prefix: uniqueName("bulk"),
  });
  await store.ensureTables();
  const old = await oldFinished(store, 10);
  await fillExecutions(counting.client, store.tables.executions.name, 1000, {
    status: "DONE",
    from: CUTOFF + 10,
  });
  counting.calls.length = 0;
  assert.equal(await store.deleteExecutions({ status: "DONE", updatedBefore: CUTOFF }), 10);
  const count = (name: string) => counting.calls.filter((c) => c === name).length;
  // The index: one Query per shard; then each execution: its retirement, three sweeps (a Query
  // and a BatchWriteItem each) and its DeleteItem.
  assert.deepEqual(
    {
      scan: count("ScanCommand"),
      query: count("QueryCommand"),
      retire: count("TransactWriteItemsCommand"),
      delete: count("DeleteItemCommand"),
    },
    { scan: 0, query: 16 + 3 * 10, retire: 10, delete: 10 },
  );
  assert.equal(await leftOf(store, old), 0);
  assert.equal((await store.listExecutions({ status: "DONE", limit: 1000 })).items.length, 1000);
});

/** A client that fails (as a crash would) on the first request `crash` picks. */
function crashingOn(client: DynamoDBSender, crash: (command: object) => boolean): DynamoDBSender {
  let crashed = false;
  return {
    send: ((command: object) => {
      if (!crashed && crash(command)) {
        crashed = true;
        return Promise.reject(new Error("the process died here"));
      }
      return client.send(command as never);
    }) as DynamoDBSender["send"],
  };
}

Deno.test("a deleteExecutions() run that stops after retiring an execution is finished by the next run: nothing of it is left", async () => {
  await using store = await freshStore();
  using client = testClient();
  const old = await oldFinished(store, 6);
  const prefix = store.tables.executions.name.replace(/_executions$/, "");
  const trace = store.tables.trace.name;
  const dying = new DynamoDBStore(
    crashingOn(
      client,
      (c) => c instanceof QueryCommand && c.input.TableName === trace,
    ),
    { prefix },
  );
  await assert.rejects(
    dying.deleteExecutions({ status: "DONE", updatedBefore: CUTOFF }),
    /the process died here/,
  );
  // Six ran at once: five went whole; the one that died is retired (absent to every read) and
  // its item and what it left are still there.
  assert.deepEqual((await store.listExecutions({ status: "DONE" })).items, []);
  assert.ok(await leftOf(store, old) >= 2, "the retired execution's item and trace step stay");
  assert.equal(
    await store.deleteExecutions({ status: "DONE", updatedBefore: CUTOFF }),
    0,
    "the next run finishes it and counts only what it removes itself",
  );
  assert.equal(await leftOf(store, old), 0);
  assert.equal(await store.deleteExecutions({ status: "DONE", updatedBefore: CUTOFF }), 0);
});

Deno.test("deleteExecutions() leaves an execution committed after it was listed", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "d", status: "DONE" });
  await store.save(exe);
  const cutoff = Date.now() / 1000 + 1;
  using client = testClient();
  const prefix = store.tables.executions.name.replace(/_executions$/, "");
  let committed = false;
  const racing = new DynamoDBStore({
    send: (async (command: object) => {
      if (command.constructor.name === "TransactWriteItemsCommand" && !committed) {
        committed = true;
        exe.status = "RUNNING"; // reopened between the listing and the delete
        await store.save(exe);
      }
      return await client.send(command as never);
    }) as DynamoDBSender["send"],
  }, { prefix });
  assert.equal(await racing.deleteExecutions({ status: "DONE", updatedBefore: cutoff }), 0);
  assert.equal((await store.load(exe.id))?.status, "RUNNING");
});

Deno.test("deleteExecutions() counts exactly when the answer of a retirement is lost, and throws OutcomeUnknown when every answer is", async () => {
  await using store = await freshStore();
  const prefix = store.tables.executions.name.replace(/_executions$/, "");
  const old = await oldFinished(store, 3);
  const proxy = new FaultProxy(endpoint());
  const client = new DynamoDBClient({
    endpoint: proxy.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  try {
    let lost = 0;
    const lose = (times: number) => {
      let seen = 0;
      proxy.script = {
        request: ({ operation }) =>
          operation === "TransactWriteItems" && seen++ < times
            ? (lost++, { kind: "drop-response" })
            : { kind: "pass" },
      };
    };
    lose(1);
    const lossy = new DynamoDBStore(client, { prefix, ambiguousRetries: 2 });
    assert.equal(await lossy.deleteExecutions({ status: "DONE", updatedBefore: CUTOFF }), 3);
    assert.ok(lost >= 1);
    assert.equal(await leftOf(store, old), 0);

    const more = await oldFinished(store, 2);
    lose(100);
    const hopeless = new DynamoDBStore(client, { prefix, ambiguousRetries: 1 });
    await assert.rejects(
      hopeless.deleteExecutions({ status: "DONE", updatedBefore: CUTOFF }),
      (error) => error instanceof OutcomeUnknown && error.operation === "deleteExecutions",
    );
    proxy.script = { request: () => ({ kind: "pass" }) };
    await store.deleteExecutions({ status: "DONE", updatedBefore: CUTOFF });
    assert.equal(await leftOf(store, more), 0);
  } finally {
    client.destroy();
    await proxy.close();
  }
});

Deno.test("deleteExecutions() with scan and includeUndated takes finished executions the Python store wrote", async () => {
  await using store = await freshStore();
  using client = testClient();
  const table = store.tables.executions.name;
  const python = newExecution({ definition_id: "py", status: "DONE", version: 4 });
  const open = newExecution({ definition_id: "py", status: "RUNNING", version: 2 });
  await seedPutExecution(client, table, python);
  await seedPutExecution(client, table, open);
  const now = Date.now() / 1000;
  assert.equal(await store.deleteExecutions({ status: "DONE", updatedBefore: now }), 0);
  assert.equal(
    await store.deleteExecutions({ status: "DONE", updatedBefore: now, scan: true }),
    0,
    "undated: its age is unknown",
  );
  assert.equal(
    await store.deleteExecutions({
      status: "DONE",
      updatedBefore: now,
      scan: true,
      includeUndated: true,
    }),
    1,
  );
  assert.equal(await store.load(python.id), null);
  assert.equal((await store.load(open.id))?.status, "RUNNING");
});
