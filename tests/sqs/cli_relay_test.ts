// The operator CLI's `relay`: one pass publishing the outbox and due timers to moto's SQS, as
// FleetClient.relay() does, for a cron outside Deno Deploy.
import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newEvent, newExecution } from "../../mod.ts";
import { cli, ok } from "../_support/cli.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";
import { freshQueue, readQueue, sqsEndpoint } from "../_support/sqs.ts";

Deno.test("the CLI's relay publishes the outbox and due timers to SQS", async () => {
  const prefix = uniqueName("t");
  // A mixed fleet's tables (streams on): the relay finds the timer another writer put.
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
    otherWriters: true,
  });
  await using queue = await freshQueue();
  const queueName = queue.url.split("/").pop()!;
  const exe = newExecution({ definition_id: "order", status: "RUNNING", active_path: "main" });
  await store.save(exe);
  const event = newEvent("order.shipped");
  await store.commit(exe, { emits: [{ target: exe.id, event }] });
  using client = testClient();
  await client.send(
    new PutItemCommand({
      TableName: store.tables.timers.name,
      Item: { execution_id: { S: exe.id }, path: { S: "main" }, fire_at: { N: "1700000001" } },
    }),
  );
  const run = (...args: string[]) => cli("relay", "--prefix", prefix, ...args);
  const printed = ok(await run("--queue", queueName, "--sqs-endpoint", sqsEndpoint()));
  assert.match(printed, /outbox: 1 published, 0 failed/);
  assert.match(printed, /timers: 1 published, 0 failed/);
  const read = await readQueue(queue);
  assert.deepEqual(
    read.map((m) => [m.group, m.event.kind]).sort(),
    [[exe.id, "Timeout"], [exe.id, "order.shipped"]],
  );
  assert.deepEqual(await store.pendingOutbox(), []);
  const again = JSON.parse(
    ok(await run("--queue", queueName, "--sqs-endpoint", sqsEndpoint(), "--json")),
  );
  assert.deepEqual([again.outbox.delivered, again.timers.delivered], [0, 0]);

  const notFifo = await run("--queue", "plain", "--sqs-endpoint", sqsEndpoint());
  assert.equal(notFifo.code, 2);
  assert.match(notFifo.stderr, /is not a FIFO queue/);
  const misplaced = await cli("outbox", "--prefix", prefix, "--queue", queueName);
  assert.equal(misplaced.code, 2);
  assert.match(misplaced.stderr, /--queue does not apply to outbox/);
});
