// The status feed (#34) against a hostile fleet: the stream turned off and on, rows that cannot
// take an index entry, an id deleted and written again, a relay that must not wait for it.
import assert from "node:assert/strict";
import { DynamoDBStore, type Execution, newExecution } from "../../mod.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";

async function ids(store: DynamoDBStore, status: Execution["status"]): Promise<string[]> {
  return (await store.listExecutions({ status, limit: 1000 })).items.map((s) => s.id);
}

Deno.test("catchUpStatusIndex() passes over an execution too big to take its index entry", async () => {
  using client = testClient();
  const prefix = uniqueName("sfh");
  await using store = await DynamoDBStore.create({ endpoint: endpoint(), prefix });
  const table = store.tables.executions.name;
  await store.catchUpStatusIndex();
  // Python's Put of an item just under 400 KB: the two attributes of its entry do not fit.
  const big = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
  const bare = JSON.stringify({ ...big, context: { pad: "" } }).length;
  for (let size = 409_600 - 2;; size -= 8) {
    big.context = { pad: "x".repeat(size - bare - 61) };
    try {
      await seedPutExecution(client, table, big);
      break;
    } catch (error) {
      if (size < 409_000) throw error;
    }
  }
  const small = newExecution({ definition_id: "d", status: "RUNNING", version: 1 });
  await seedPutExecution(client, table, small);
  const round = await store.catchUpStatusIndex();
  assert.equal(round.indexed, 1);
  assert.deepEqual(await ids(store, "RUNNING"), [small.id]);
  // Read once: the next round goes on past it (it only reads the entry written above).
  assert.equal((await store.catchUpStatusIndex()).indexed, 0);
  assert.ok((await store.listExecutions({ scan: true })).items.some((s) => s.id === big.id));
});
