// The operator CLI's bulk actions on dead letters and its adoption of other writers' rows
//: `deno run src/cli.ts ...` against the test DynamoDB.
import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { newEvent, newExecution, relayOutbox, relaySpawns } from "../../mod.ts";
import { freshStore, testClient } from "../_support/env.ts";
import { cli } from "../_support/cli.ts";

Deno.test("cli retry/drop KIND --all act on every dead letter of a queue, or of one outbox target, with --yes", async (t) => {
  await using store = await freshStore();
  const prefix = store.tables.executions.name.replace(/_executions$/, "");
  const exe = newExecution({ definition_id: "cli" });
  await store.commit(exe, {
    emits: [
      { target: "a", event: newEvent("a1") },
      { target: "a", event: newEvent("a2") },
      { target: "b", event: newEvent("b1") },
    ],
    spawns: [{ childId: "c1", rootPath: "r", context: {} }, {
      childId: "c2",
      rootPath: "r",
      context: {},
    }],
  });
  const fail = () => Promise.reject(new Error("down"));
  await relayOutbox(store, fail, { maxAttempts: 1 }); // a1 and b1 dead, a2 held behind a1
  await relaySpawns(store, fail, { maxAttempts: 1 });
  assert.deepEqual((await store.deadLetters("outbox")).map((d) => d.item?.event.kind), [
    "a1",
    "b1",
  ]);

  await t.step("without --yes it says what it would do, and does nothing (exit 2)", async () => {
    const run = await cli("retry", "outbox", "--all", "--prefix", prefix);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /retry --all makes every dead letter of outbox due again: .*--yes/);
    assert.equal((await store.deadLetters("outbox")).length, 2);
  });
  await t.step(
    "usage errors: a key with --all, --target for spawns, --target without --all",
    async () => {
      for (
        const args of [
          ["retry", "outbox", "7", "--all", "--yes"],
          ["drop", "spawns", "--all", "--target", "a", "--yes"],
          ["retry", "outbox", "--target", "a"],
          ["retry", "outbox"],
        ]
      ) {
        const run = await cli(...args, "--prefix", prefix);
        assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
      }
    },
  );
  await t.step(
    "retry outbox --all --target a: a's dead letter, then a's held entry go out",
    async () => {
      const run = await cli(
        "retry",
        "outbox",
        "--all",
        "--target",
        "a",
        "--yes",
        "--prefix",
        prefix,
      );
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /^retried 1 dead outbox entry in [\d.]+ s$/m);
      const delivered: string[] = [];
      await relayOutbox(store, (e) => Promise.resolve(void delivered.push(e.event.kind)));
      assert.deepEqual(delivered, ["a1", "a2"], "in order; b stays dead");
      assert.deepEqual((await store.deadLetters("outbox")).map((d) => d.item?.event.kind), ["b1"]);
    },
  );
  await t.step("drop spawns --all --yes --json says how many, for scripts", async () => {
    const run = await cli("drop", "spawns", "--all", "--yes", "--json", "--prefix", prefix);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout).done, 2);
    assert.deepEqual(await store.deadLetters("spawns"), []);
  });
});

Deno.test("cli adopt takes into the relay index the rows a Python worker wrote without its attributes", async () => {
  await using store = await freshStore();
  const prefix = store.tables.executions.name.replace(/_executions$/, "");
  using client = testClient();
  await client.send(
    new PutItemCommand({
      TableName: store.tables.outbox.name,
      Item: {
        seq: { N: "5" },
        target_id: { S: "py" },
        event: { S: JSON.stringify(newEvent("from.python")) },
      },
    }),
  );
  assert.deepEqual(await store.pendingOutbox(), [], "not in the index yet");
  const run = await cli("adopt", "outbox", "--prefix", prefix);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^outbox: adopted 1 row into the relay index$/m);
  assert.deepEqual((await store.pendingOutbox()).map((e) => e.event.kind), ["from.python"]);
  const again = await cli("adopt", "--prefix", prefix, "--json");
  assert.deepEqual(JSON.parse(again.stdout), { outbox: 0, spawns: 0, timers: 0 });
});
