// FleetClient against DynamoDB Local and moto's SQS, with a Python worker that follows harel's
// rules (tests/_support/sqs_consumer.py) running the executions it starts.
import assert from "node:assert/strict";
import {
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  StoreConflict,
  timeoutEvent,
} from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { SQSClient } from "@aws-sdk/client-sqs";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { ExecutionExists, ExecutionNotFound, FleetClient, SqsQueue } from "../../src/sqs.ts";
import { messageBody } from "../../src/sqs/_wire.ts";
import { testClient, uniqueName } from "../_support/env.ts";
import { FLEET_REGION, fleetStore, freshQueue, readQueue, runWorker } from "../_support/sqs.ts";

interface Fleet extends AsyncDisposable {
  store: DynamoDBStore;
  queue: SqsQueue;
  prefix: string;
  fleet: FleetClient;
}

async function freshFleet(): Promise<Fleet> {
  const prefix = uniqueName("t");
  // Python workers commit: a store of the mixed fleet.
  const store = await fleetStore({ prefix });
  const queue = await freshQueue();
  return {
    store,
    queue,
    prefix,
    fleet: new FleetClient({ store, queue }),
    async [Symbol.asyncDispose]() {
      await queue.close();
      await store.close();
    },
  };
}

async function status(store: DynamoDBStore, id: string): Promise<string | undefined> {
  return (await store.load(id))?.status;
}

Deno.test("create() commits a PENDING execution and a harel worker starts it from its Start", async () => {
  await using f = await freshFleet();
  const exe = await f.fleet.create("order", { context: { total: 42 }, id: "order-1" });
  assert.equal(exe.status, "PENDING");
  assert.equal(exe.version, 1);
  assert.deepEqual((await f.store.pendingOutbox()).length, 0, "the Start was published and acked");
  const handled = await runWorker(f.queue, f.prefix);
  assert.deepEqual(handled.map((h) => [h.kind, h.action]), [["Start", "processed"]]);
  const started = await f.store.load("order-1");
  assert.equal(started?.status, "RUNNING");
  assert.deepEqual(started?.context, { total: 42 });
  await assert.rejects(f.fleet.create("order", { id: "order-1" }), ExecutionExists);
  assert.deepEqual(await readQueue(f.queue), [], "a taken id published no second Start");
});

Deno.test("a Start published twice (relay after a lost ack) is handled once", async () => {
  await using f = await freshFleet();
  const exe = await f.fleet.create("order");
  const [first] = await readQueue(f.queue);
  assert.equal(first?.event.kind, "Start");
  // The same Start again, as a relay that re-publishes an entry whose ack was lost would.
  await f.queue.publish(exe.id, first!.event as never);
  await f.queue.publish(exe.id, first!.event as never);
  const handled = await runWorker(f.queue, f.prefix);
  assert.deepEqual(handled.map((h) => h.action), ["processed", "deduped"]);
  assert.equal((await f.store.load(exe.id))?.processed_events, 1);
});

Deno.test("send() publishes to the execution's group; a missing execution sends nothing", async () => {
  await using f = await freshFleet();
  const exe = await f.fleet.create("order");
  await f.fleet.send(exe.id, newEvent("order.paid", { amount: 42 }));
  await assert.rejects(f.fleet.send("no-such-execution", newEvent("lost")), ExecutionNotFound);
  await assert.rejects(f.fleet.send(exe.id, newEvent("bad", { n: NaN })), /event\.data\.n/);
  const handled = await runWorker(f.queue, f.prefix);
  assert.deepEqual(handled.map((h) => [h.group, h.kind]), [[exe.id, "Start"], [
    exe.id,
    "order.paid",
  ]]);
  assert.deepEqual((await f.store.load(exe.id))?.context.seen, ["order.paid"]);
});

Deno.test("suspend() holds an execution's events until resume()", async () => {
  await using f = await freshFleet();
  const exe = await f.fleet.create("order");
  await runWorker(f.queue, f.prefix);
  assert.deepEqual(await f.fleet.suspend(exe.id), { changed: true, status: "SUSPENDED" });
  assert.deepEqual(await f.fleet.suspend(exe.id), { changed: false, status: "SUSPENDED" });
  await f.fleet.send(exe.id, newEvent("while.suspended"));
  const held = await runWorker(f.queue, f.prefix, 0.5);
  assert.ok(held.length >= 1 && held.every((h) => h.action === "nacked"), JSON.stringify(held));
  assert.deepEqual(await f.fleet.resume(exe.id), { changed: true, status: "RUNNING" });
  assert.deepEqual(await f.fleet.resume(exe.id), { changed: false, status: "RUNNING" });
  const handled = await runWorker(f.queue, f.prefix, 2.5);
  assert.deepEqual(handled.filter((h) => h.action === "processed").map((h) => h.kind), [
    "while.suspended",
  ]);
  assert.deepEqual((await f.store.load(exe.id))?.context.seen, ["while.suspended"]);
});

Deno.test("suspend() leaves an execution that is not RUNNING alone", async () => {
  await using f = await freshFleet();
  const exe = await f.fleet.create("order"); // PENDING: no worker ran it yet
  assert.deepEqual(await f.fleet.suspend(exe.id), { changed: false, status: "PENDING" });
  assert.deepEqual(await f.fleet.resume(exe.id), { changed: false, status: "PENDING" });
  await assert.rejects(f.fleet.suspend("missing"), ExecutionNotFound);
});

Deno.test("cancel() publishes its Cancel at once and the worker cancels", async () => {
  await using f = await freshFleet();
  const exe = await f.fleet.create("order");
  await runWorker(f.queue, f.prefix);
  assert.deepEqual(await f.fleet.cancel(exe.id, { reason: { by: "support" } }), {
    changed: true,
    status: "CANCELLING",
  });
  assert.deepEqual(await f.store.pendingOutbox(), [], "published and acknowledged");
  await f.fleet.send(exe.id, newEvent("after.cancel"));
  const handled = await runWorker(f.queue, f.prefix);
  assert.deepEqual(handled.map((h) => [h.kind, h.action]), [
    ["Cancel", "processed"],
    ["after.cancel", "dropped"], // harel: a CANCELLED execution takes nothing
  ]);
  assert.equal(await status(f.store, exe.id), "CANCELLED");
});

Deno.test("cancel() of an execution that never started terminates it", async () => {
  await using f = await freshFleet();
  const exe = await f.fleet.create("order");
  assert.deepEqual(await f.fleet.cancel(exe.id), { changed: true, status: "CANCELLED" });
  assert.deepEqual(await f.store.pendingOutbox(), []);
  const handled = await runWorker(f.queue, f.prefix);
  assert.deepEqual(handled.map((h) => [h.kind, h.action]), [["Start", "dropped"]]);
});

/** A parent with two children and a grandchild, all RUNNING (one child DONE). */
async function family(store: DynamoDBStore): Promise<Record<string, Execution>> {
  const exes: Record<string, Execution> = {};
  const make = (id: string, children: string[], status: Execution["status"] = "RUNNING") => {
    exes[id] = newExecution({
      id,
      definition_id: "fork",
      status,
      active_path: "main",
      children: Object.fromEntries(children.map((c) => [c, {
        root_path: c,
        finished: false,
        result: {},
        submachine: false,
        key: c,
      }])),
    });
  };
  const root = uniqueName("p");
  make(root, [`${root}:A`, `${root}:B`]);
  make(`${root}:A`, [`${root}:A:x`]);
  make(`${root}:B`, [], "DONE");
  make(`${root}:A:x`, []);
  for (const exe of Object.values(exes)) await store.save(exe);
  return exes;
}

Deno.test("the control plane propagates to children by harel's status rules", async (t) => {
  await using f = await freshFleet();
  const exes = await family(f.store);
  const [root, a, b, x] = Object.keys(exes) as [string, string, string, string];
  const statuses = () => Promise.all([root, a, b, x].map((id) => status(f.store, id)));
  await t.step("suspend: every RUNNING descendant; DONE stays DONE", async () => {
    await f.fleet.suspend(root);
    assert.deepEqual(await statuses(), ["SUSPENDED", "SUSPENDED", "DONE", "SUSPENDED"]);
  });
  await t.step("resume: back to RUNNING", async () => {
    await f.fleet.resume(root);
    assert.deepEqual(await statuses(), ["RUNNING", "RUNNING", "DONE", "RUNNING"]);
  });
  await t.step("cancel: the root CANCELLING with its Cancel, the children CANCELLED", async () => {
    await f.fleet.cancel(root);
    assert.deepEqual(await statuses(), ["CANCELLING", "CANCELLED", "CANCELLED", "CANCELLED"]);
    const read = await readQueue(f.queue);
    assert.deepEqual(read.map((m) => [m.group, m.event.kind]), [[root, "Cancel"]]);
  });
  await t.step("terminate: CANCELLED, with no Cancel event", async () => {
    await f.fleet.terminate(root);
    assert.deepEqual(await statuses(), ["CANCELLED", "CANCELLED", "CANCELLED", "CANCELLED"]);
    assert.deepEqual(await readQueue(f.queue, 0.5), [], "no event");
  });
});

Deno.test("a status change retries a lost race and gives up after five", async () => {
  const store = new MemoryStore();
  const exe = newExecution({ definition_id: "d", status: "RUNNING", active_path: "main" });
  await store.save(exe);
  let races = 0;
  const racing = new Proxy(store, {
    get(target, name) {
      if (name === "commit") {
        return async (e: Execution, changes: unknown) => {
          if (races-- > 0) {
            const theirs = (await target.load(e.id))!;
            await target.commit(theirs); // another writer wins this round
          }
          return target.commit(e, changes as never);
        };
      }
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const fleet = new FleetClient({ store: racing, queue: { publish: async () => {} } });
  races = 3;
  assert.deepEqual(await fleet.suspend(exe.id), { changed: true, status: "SUSPENDED" });
  races = 5;
  await assert.rejects(fleet.resume(exe.id), StoreConflict);
  assert.equal((await store.load(exe.id))?.status, "SUSPENDED");
});

Deno.test("relay() publishes emits to their targets' groups and due timers as harel's Timeout", async () => {
  await using f = await freshFleet();
  const exe = newExecution({ definition_id: "order", status: "RUNNING", active_path: "main" });
  await f.store.save(exe);
  const toSelf = newEvent("self.step");
  const toOther = newEvent("other.step");
  const broadcast = newEvent("no.target");
  await f.store.commit(exe, {
    emits: [
      { target: exe.id, event: toSelf },
      { target: "other-exe", event: toOther },
      { target: null, event: broadcast },
    ],
    timers: [{ action: "schedule", path: "main", fireAt: 1_700_000_001 }],
  });
  const report = await f.fleet.relay();
  assert.equal(report.outbox.delivered, 3, "the no-target entry is acknowledged too");
  assert.equal(report.timers.delivered, 1);
  assert.deepEqual(await f.store.pendingOutbox(), []);
  assert.deepEqual(await f.store.dueTimers(2_000_000_000), []);
  const read = await readQueue(f.queue);
  const sent = read.map((m) => [m.group, m.event.id]).sort();
  assert.deepEqual(
    sent,
    [
      [exe.id, toSelf.id],
      [exe.id, timeoutEvent(exe.id, "main", 1_700_000_001).id],
      ["other-exe", toOther.id],
    ].sort(),
  );
  const timeout = read.find((m) => m.event.kind === "Timeout");
  assert.equal(timeout?.event.id, `timeout:${exe.id}:main:1700000001.0`);
  assert.deepEqual(timeout?.event.data, { path: "main" });
});

Deno.test("relay() keeps what it could not publish and publishes it on the next pass", async () => {
  await using f = await freshFleet();
  const exe = newExecution({ definition_id: "d", status: "RUNNING" });
  await f.store.save(exe);
  const event = newEvent("retry.me");
  await f.store.commit(exe, { emits: [{ target: exe.id, event }] });
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close(); // SQS is down: every SendMessage is refused
  const down = new SQSClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 1,
  });
  try {
    const offline = new FleetClient({
      store: f.store,
      queue: new SqsQueue(down, `http://127.0.0.1:${port}/123456789012/q.fifo`),
    });
    const first = await offline.relay({ outbox: { backoff: { minSeconds: 0, maxSeconds: 0 } } });
    assert.deepEqual([first.outbox.delivered, first.outbox.failed], [0, 1]);
  } finally {
    down.destroy();
  }
  assert.equal((await f.store.pendingOutbox()).length, 1, "not acknowledged");
  const second = await f.fleet.relay();
  assert.equal(second.outbox.delivered, 1);
  assert.deepEqual(await f.store.pendingOutbox(), []);
  assert.deepEqual((await readQueue(f.queue)).map((m) => m.event.id), [event.id]);
});

Deno.test("FleetClient refuses bad input before anything is sent", async () => {
  const store = new MemoryStore();
  await using queue = await freshQueue();
  const fleet = new FleetClient({ store, queue });
  await assert.rejects(fleet.create("d", { id: "x".repeat(129) }), /id is 129 characters/);
  await assert.rejects(fleet.create("d", { context: { n: 1n } }), /context\.n/);
  await assert.rejects(fleet.create("", {}), /definitionId must be a non-empty string/);
  await assert.rejects(fleet.create("d", { contxt: {} } as never), /did you mean "context"\?/);
  await assert.rejects(fleet.cancel("missing"), ExecutionNotFound);
  await assert.rejects(
    fleet.cancel("e", { reason: "why" as never }),
    /reason must be a JSON object/,
  );
  await assert.rejects(fleet.terminate("missing"), ExecutionNotFound);
  await assert.rejects(fleet.resume("missing"), ExecutionNotFound);
  assert.throws(() => new FleetClient({ store, queue: {} as never }), /queue must be an SqsQueue/);
  // A DynamoDB store that would never find the Python workers' rows.
  using client = testClient();
  const plain = new DynamoDBStore(client, { prefix: uniqueName("t") });
  assert.throws(
    () => new FleetClient({ store: plain, queue }),
    /store must be built with otherWriters: true/,
  );
  assert.deepEqual(await readQueue(queue), []);
  assert.deepEqual(await store.listExecutions(), { items: [], nextCursor: null });
});

Deno.test("relay() publishes the Timeout of a timer a Python worker wrote, and the outbox entry it wrote", async () => {
  await using f = await freshFleet();
  const exe = newExecution({ definition_id: "order", status: "RUNNING", active_path: "main" });
  await f.store.save(exe);
  // What the Python store writes: bare items, none of this module's bookkeeping attributes.
  using client = testClient(FLEET_REGION);
  await client.send(
    new PutItemCommand({
      TableName: `${f.prefix}_timers`,
      Item: {
        execution_id: { S: exe.id },
        path: { S: "main.wait" },
        fire_at: { N: "1700000002.25" },
      },
    }),
  );
  const emitted = newEvent("py.emit");
  await client.send(
    new PutItemCommand({
      TableName: `${f.prefix}_outbox`,
      Item: {
        seq: { N: "900000001" },
        target_id: { S: exe.id },
        event: { S: messageBody(emitted) }, // pydantic's dump, as the Python store writes it
      },
    }),
  );
  const report = await f.fleet.relay();
  assert.equal(report.timers.delivered, 1);
  assert.equal(report.outbox.delivered, 1);
  const read = await readQueue(f.queue);
  assert.deepEqual(
    read.map((m) => [m.group, m.event.id]).sort(),
    [
      [exe.id, emitted.id],
      [exe.id, `timeout:${exe.id}:main.wait:1700000002.25`],
    ].sort(),
  );
  for (const m of read) assert.equal(m.body, m.redumped);
});
