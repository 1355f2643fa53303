// A commit DynamoDB keeps cancelling for a reason that is not a lost race throws the typed
// CommitCancelled (each failing item's role and code), not a plain Error; other failures that
// used to be plain Errors are named too.
import assert from "node:assert/strict";
import { DynamoDBStore, IndexNotFound, newExecution } from "../../mod.ts";
import { CommitCancelled } from "../../mod.ts";
import { bareTables, endpoint, testClient, uniqueName } from "../_support/env.ts";

Deno.test("a commit whose trace ring keeps moving throws CommitCancelled naming the execution and trace items", async () => {
  const prefix = uniqueName("cc");
  await using writer = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
    conflictRetries: 0,
  });
  await using other = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
  const exe = newExecution({ definition_id: "d" });
  await writer.commit(exe, { trace: { step: 1 } }); // caches where the ring ends
  await other.appendTrace(exe.id, { note: "outside a commit" }); // moves it
  const error = await writer.commit(exe, { trace: { step: 2 } }).then(
    () => assert.fail("the commit went through"),
    (error: unknown) => error,
  );
  assert.ok(error instanceof CommitCancelled, `got ${error}`);
  assert.equal(error.name, "CommitCancelled");
  assert.equal(error.executionId, exe.id);
  assert.deepEqual(error.items.map((item) => [item.role, item.code]), [
    ["execution", "ConditionalCheckFailed"],
    ["trace", "ConditionalCheckFailed"], // the step appended outside took the index
    ["trace", "RingKeptMoving"],
  ]);
  assert.equal(exe.version, 1);
  assert.equal((await writer.load(exe.id))?.version, 1);
});

Deno.test("dueTimers() on tables made without the relay index throws IndexNotFound", async () => {
  const prefix = uniqueName("cc");
  using client = testClient();
  await bareTables(client, prefix);
  const indexed = new DynamoDBStore(client, { prefix });
  const error = await indexed.dueTimers(1000).then(
    () => assert.fail("dueTimers answered"),
    (error: unknown) => error,
  );
  assert.ok(error instanceof IndexNotFound, `got ${error}`);
  assert.equal(error.index, "relay_part-relay_order");
  assert.equal(error.table, indexed.tables.timers.name);
  assert.match(error.message, /run ensureTables\(\) once \(it adds the relay index/);
});
