// `cli show ID` lists an execution's outbox: what it emitted that is not delivered yet,
// what to it failed or is held, with the relay's state of each, for people and as JSON.
import assert from "node:assert/strict";
import { DynamoDBStore, newEvent, newExecution, relayOutbox } from "../../mod.ts";
import { endpoint, uniqueName } from "../_support/env.ts";
import { cli, ok } from "../_support/cli.ts";

Deno.test("cli show lists the outbox entries an execution emitted and those to it that are dead or held", async () => {
  const prefix = uniqueName("clieo");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
  const target = newExecution({ definition_id: "target" });
  await store.save(target);
  const source = newExecution({ definition_id: "source" });
  const { outbox: [a, b] } = await store.commit(source, {
    emits: [
      { target: target.id, event: newEvent("invoice.requested") },
      { target: target.id, event: newEvent("invoice.reminded") },
    ],
  });
  for (let pass = 0; pass < 2; pass++) {
    await relayOutbox(store, () => Promise.reject(new Error("HTTP 503")), { maxAttempts: 1 });
  }

  const text = ok(await cli("show", source.id, "--prefix", prefix));
  assert.match(text, /outbox entries it emitted, not delivered yet \(2\):\n/);
  assert.match(
    text,
    new RegExp(
      `\\n  ${a}\\s+${target.id}\\s+invoice\\.requested\\s+\\w+\\s+dead \\(1 attempt\\)\\n`,
    ),
  );
  assert.match(
    text,
    new RegExp(`\\n  ${b}\\s+${target.id}\\s+invoice\\.reminded\\s+\\w+\\s+held behind ${a}\\n`),
  );
  assert.match(text, /outbox entries to it that failed or are held \(0\):\n/);
  assert.match(text, /`retry outbox SEQ` makes one due again/);

  const to = ok(await cli("show", target.id, "--prefix", prefix));
  assert.match(to, /outbox entries to it that failed or are held \(2\):\n/);
  assert.match(to, new RegExp(`\\n  ${a}\\s+${source.id}\\s+invoice\\.requested\\s+\\w+\\s+dead`));

  const json = JSON.parse(ok(await cli("show", target.id, "--prefix", prefix, "--json")));
  assert.deepEqual(
    json.outbox.targeting.map((e: { seq: number; state: string }) => [e.seq, e.state]),
    [[a, "dead"], [b, "held"]],
  );
});
