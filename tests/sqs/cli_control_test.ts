// The operator CLI's control verbs (suspend, resume, cancel, terminate) on DynamoDB Local; then
// the fleet's relay publishes the cancel's Cancel to moto's SQS.
import assert from "node:assert/strict";
import { DynamoDBStore, newExecution } from "../../mod.ts";
import { FleetClient } from "../../src/sqs.ts";
import { cli, ok } from "../_support/cli.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";
import { freshQueue, readQueue } from "../_support/sqs.ts";

Deno.test("the CLI suspends, resumes, cancels and terminates an execution by harel's rules", async (t) => {
  const prefix = uniqueName("t");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
  const exe = newExecution({ definition_id: "order", status: "RUNNING", active_path: "main" });
  await store.save(exe);
  const status = async () => (await store.load(exe.id))?.status;
  const run = (...args: string[]) => cli(...args, "--prefix", prefix);

  await t.step("suspend and resume", async () => {
    assert.match(ok(await run("suspend", exe.id)), /is now SUSPENDED/);
    assert.equal(await status(), "SUSPENDED");
    assert.match(ok(await run("suspend", exe.id)), /harel's rules leave it as it is/);
    const resumed = JSON.parse(ok(await run("resume", exe.id, "--json")));
    assert.deepEqual(resumed, { id: exe.id, changed: true, status: "RUNNING" });
  });
  await t.step("cancel and terminate need --yes", async () => {
    const refused = await run("cancel", exe.id);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /run it again with --yes/);
    assert.equal(await status(), "RUNNING");
    const bad = await run("cancel", exe.id, "--reason", "[1]", "--yes");
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--reason must be a JSON object/);
  });
  await t.step(
    "cancel puts a Cancel with the reason in the outbox; the relay publishes it",
    async () => {
      const said = ok(await run("cancel", exe.id, "--reason", '{"by":"ops"}', "--yes"));
      assert.match(said, /is now CANCELLING \(its Cancel event is in the outbox/);
      await using queue = await freshQueue();
      // The fleet's side: a store of the mixed fleet on the same tables (no stream here: its
      // feeds' rounds are skipped, its own rows go out all the same).
      using client = testClient();
      const fleetSide = new DynamoDBStore(client, { prefix, otherWriters: true });
      const report = await new FleetClient({ store: fleetSide, queue }).relay();
      assert.equal(report.outbox.delivered, 1);
      const [message] = await readQueue(queue);
      assert.equal(message?.group, exe.id);
      assert.equal(message?.event.kind, "Cancel");
      assert.deepEqual(message?.event.data, { by: "ops" });
    },
  );
  await t.step("terminate", async () => {
    assert.match(ok(await run("terminate", exe.id, "--yes")), /is now CANCELLED/);
    assert.equal(await status(), "CANCELLED");
  });
  await t.step("a missing execution is a runtime error", async () => {
    const missing = await run("suspend", "nobody");
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no execution "nobody": nothing done/);
  });
});
