// Follow-ups to the hostile tests: the reads and guards their fixes touch that they do not
// exercise (loadForEvent and the CLI on Python's NaN; deleteTimer's guard at a tie; options
// that are not an object).
import assert from "node:assert/strict";
import { DeleteItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newExecution } from "../../mod.ts";
import { main } from "../../src/cli.ts";
import { MemoryStore } from "../../src/testing.ts";
import { endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";

Deno.test("loadForEvent() and the CLI read what a Python worker wrote with NaN, as null", async (t) => {
  const prefix = uniqueName("py");
  await using store = await DynamoDBStore.create({ endpoint: endpoint(), prefix });
  using client = testClient();
  const exe = newExecution({ definition_id: "py" });
  await client.send(
    new PutItemCommand({
      TableName: store.tables.executions.name,
      Item: {
        id: { S: exe.id },
        data: {
          S: JSON.stringify({ ...exe, version: 1 }).replace(
            '"context":{}',
            '"context": {"score": NaN, "top": Infinity}',
          ),
        },
        version: { N: "1" },
        definition_id: { S: "py" },
      },
    }),
  );
  await client.send(
    new PutItemCommand({
      TableName: store.tables.outbox.name,
      Item: {
        seq: { N: "7" },
        target_id: { S: "b" },
        event: { S: '{"id": "py-1", "kind": "scored", "data": {"score": -Infinity}}' },
      },
    }),
  );
  await t.step("loadForEvent()", async () => {
    const { execution } = await store.loadForEvent(exe.id, "e1");
    assert.deepEqual(execution?.context, { score: null, top: null });
  });
  await t.step("the CLI's show and outbox", async () => {
    for (const args of [["show", exe.id], ["outbox", "--json"]]) {
      const out: string[] = [], err: string[] = [];
      const code = await main([...args, "--prefix", prefix, "--endpoint", endpoint()], {
        out: (line) => out.push(line),
        err: (line) => err.push(line),
      });
      assert.equal(code, 0, err.join("\n"));
      if (args[0] === "outbox") {
        assert.equal(JSON.parse(out.join("\n")).oldest[0].event.kind, "scored");
      }
    }
  });
});

Deno.test("deleteTimer() claims exactly the stored fire_at values that read back as its double", async (t) => {
  await using store = await freshStore();
  const client = testClient();
  const put = (fireAt: string) =>
    client.send(
      new PutItemCommand({
        TableName: store.tables.timers.name,
        Item: { execution_id: { S: "x" }, path: { S: "p" }, fire_at: { N: fireAt } },
      }),
    );
  try {
    // 1700000000.1 + 2 ** -22 has an odd last bit: the decimal halfway between it and the
    // next double up reads back as that next (even) double, so it is not this timer's.
    const odd = 1_700_000_000.1 + 2 ** -22, even = odd + 2 ** -22;
    const halfway = "1700000000.10000026226043701171875";
    assert.equal(Number(halfway), even);
    await t.step("a tie belongs to the even neighbour", async () => {
      await put(halfway);
      assert.equal(await store.deleteTimer("x", "p", odd), false);
      assert.equal(await store.deleteTimer("x", "p", even), true);
    });
    await t.step("a re-scheduled timer (a different double) is not claimed", async () => {
      await put("1700000001.1");
      assert.equal(await store.deleteTimer("x", "p", 1_700_000_000.1), false);
      assert.equal(await store.deleteTimer("x", "p", 1_700_000_001.1), true);
    });
    await t.step("a small time (bounds past 38 digits) keeps the exact equality", async () => {
      await put("5");
      assert.equal(await store.deleteTimer("x", "p", 5 + 2 ** -50), false);
      assert.equal(await store.deleteTimer("x", "p", 5), true);
    });
  } finally {
    await client.send(
      new DeleteItemCommand({
        TableName: store.tables.timers.name,
        Key: { execution_id: { S: "x" }, path: { S: "p" } },
      }),
    );
    client.destroy();
  }
});

Deno.test("options that are not an object are refused with a TypeError naming options", () => {
  using client = testClient();
  assert.throws(() => new DynamoDBStore(client, 5 as never), /options must be an object/);
  assert.throws(() => new MemoryStore("x" as never), /options must be an object/);
  assert.throws(
    () => new DynamoDBStore(client, { timerIndex: true, consistentReads: 0 as never }),
    /consistentReads must be a boolean, got 0/,
  );
});
