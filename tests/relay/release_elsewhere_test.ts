// A release must not rest on what a store instance remembers: on Deno Deploy the pass that
// hands out a head whose retry is due, and the call that acknowledges it, may run in different
// isolates. What was set apart behind that head comes back all the same, with no later entry to
// its target to trigger it.
import assert from "node:assert/strict";
import { DynamoDBStore, newEvent, newExecution, relayOutbox } from "../../mod.ts";
import { endpoint, uniqueName } from "../_support/env.ts";
import { passOutbox } from "../_support/passes.ts";

Deno.test("entries set apart behind a head come back when another store instance acknowledges the head, with no later entry to its target", async () => {
  const prefix = uniqueName("elsewhere");
  const clock = { ms: Date.now() };
  const open = (ensureTables = false) =>
    DynamoDBStore.create({ endpoint: endpoint(), prefix, ensureTables, now: () => clock.ms });
  await using first = await open(true);
  const { outbox: [e, f] } = await first.commit(newExecution({ definition_id: "elsewhere" }), {
    emits: [{ target: "a", event: newEvent("e") }, { target: "a", event: newEvent("f") }],
  });
  await first.recordFailure("outbox", e!, {
    attempts: 1,
    retryAt: clock.ms / 1000 + 10,
    error: "x",
  });
  // A pass sets f apart behind e (e waits for its retry).
  await using setting = await open();
  const apart = await relayOutbox(setting, () => {
    throw new Error("nothing is due");
  });
  assert.deepEqual([apart.delivered, apart.failed], [0, 0]);

  // e's retry comes: one instance hands it out, another acknowledges it.
  clock.ms += 11_000;
  await using handing = await open();
  const batch = await passOutbox(handing, { limit: 1 });
  assert.deepEqual(batch.items.map(({ item }) => item.seq), [e]);
  await using acking = await open();
  await acking.ackOutbox(e!);

  // Later passes, each in a fresh instance, and nothing new to target a: f comes back and goes.
  clock.ms += 61_000;
  const delivered: number[] = [];
  for (let pass = 0; pass < 3 && !delivered.includes(f!); pass++) {
    await using fresh = await open();
    await relayOutbox(fresh, (entry) => void delivered.push(entry.seq));
  }
  assert.deepEqual(delivered, [f], "f, set apart behind e, must come back once e is gone");
});
