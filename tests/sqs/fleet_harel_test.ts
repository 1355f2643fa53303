// FleetClient as harel's DistributedRunner and control plane behave, on DynamoDB
// Local and moto's SQS: create() that says whether its Start went out, no send() before a Start
// still in the outbox, cancel as engine/aio/control.py chooses, a relay that publishes another
// writer's events as stored and never gives up on SQS.
import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBStore, newEvent, newExecution } from "../../mod.ts";
import {
  CancelNotPublished,
  FleetClient,
  type FleetClientOptions,
  PublishOutcomeUnknown,
  SqsQueue,
  StartNotPublished,
} from "../../src/sqs.ts";
import { capacityClient } from "../_support/capacity.ts";
import { testClient, uniqueName } from "../_support/env.ts";
import { FLEET_REGION, fleetStore, freshQueue, readQueue, runWorker } from "../_support/sqs.ts";

interface Fleet extends AsyncDisposable {
  store: DynamoDBStore;
  queue: SqsQueue;
  prefix: string;
  fleet: FleetClient;
  /** The same store and options on an SQS that refuses every connection. */
  offline: FleetClient;
}

async function freshFleet(options: Partial<FleetClientOptions> = {}): Promise<Fleet> {
  const prefix = uniqueName("t");
  const store = await fleetStore({ prefix });
  const queue = await freshQueue();
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close(); // SQS is down: every SendMessage is refused
  const down = new SQSClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 1,
  });
  const offlineQueue = new SqsQueue(down, `http://127.0.0.1:${port}/123456789012/q.fifo`);
  return {
    store,
    queue,
    prefix,
    fleet: new FleetClient({ store, queue, ...options }),
    offline: new FleetClient({ store, queue: offlineQueue, ...options }),
    async [Symbol.asyncDispose]() {
      down.destroy();
      await queue.close();
      await store.close();
    },
  };
}

/** An SQS endpoint that takes the connection and closes it without an answer. */
function hangingUp(): { url: string; [Symbol.dispose](): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const conn of listener) {
      const buffer = new Uint8Array(65536);
      await conn.read(buffer).catch(() => null); // the request reached it
      conn.close();
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    [Symbol.dispose]: () => listener.close(),
  };
}

Deno.test("create() rejects when its Start was not published, saying the execution exists", async () => {
  await using f = await freshFleet();
  const error = await f.offline.create("order", { id: "order-1" }).then(
    () => assert.fail("create() resolved with its Start unpublished"),
    (e) => e,
  );
  assert.ok(error instanceof StartNotPublished, String(error));
  assert.equal(error.executionId, "order-1");
  assert.match(error.message, /was committed \(PENDING\), but its Start was not published/);
  assert.equal((await f.store.load("order-1"))?.status, "PENDING");
  const [start] = await f.store.pendingOutbox();
  assert.equal(start?.event.kind, "Start", "the Start waits in the outbox for relay()");
  assert.equal(start?.event.id, error.eventId);
});

Deno.test("create() rejects with PublishOutcomeUnknown when its Start may have gone out", async () => {
  using server = hangingUp();
  await using f = await freshFleet();
  const client = new SQSClient({
    endpoint: server.url,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 1,
  });
  try {
    const fleet = new FleetClient({
      store: f.store,
      queue: new SqsQueue(client, `${server.url}/123456789012/q.fifo`),
    });
    await assert.rejects(fleet.create("order", { id: "order-2" }), (error) => {
      assert.ok(error instanceof PublishOutcomeUnknown, String(error));
      assert.match(error.message, /may or may not be on the queue/);
      assert.match(error.message, /execution "order-2" was committed \(PENDING\)/);
      return true;
    });
  } finally {
    client.destroy();
  }
  assert.equal((await f.store.pendingOutbox()).length, 1, "the Start stays for relay()");
});

Deno.test("send() publishes a Start still in the outbox first, so no event overtakes it", async () => {
  await using f = await freshFleet();
  await assert.rejects(f.offline.create("order", { id: "order-3" }), StartNotPublished);
  await assert.rejects(f.offline.send("order-3", newEvent("order.paid")), (error) => {
    assert.ok(error instanceof StartNotPublished, String(error));
    assert.match(
      error.message,
      /order-3"'s Start \(outbox seq \d+\) is still in its outbox and could not be published first/,
    );
    return true;
  });
  assert.deepEqual(await readQueue(f.queue, 0.5), [], "nothing was sent");
  await f.fleet.send("order-3", newEvent("order.paid", { amount: 42 }));
  assert.deepEqual(await f.store.pendingOutbox(), [], "the Start was published and acked");
  const handled = await runWorker(f.queue, f.prefix);
  assert.deepEqual(handled.map((h) => [h.kind, h.action]), [
    ["Start", "processed"],
    ["order.paid", "processed"],
  ]);
  assert.deepEqual((await f.store.load("order-3"))?.context.seen, ["order.paid"]);
});

Deno.test("relay() publishes another writer's event byte for byte as stored", async () => {
  await using f = await freshFleet();
  const exe = newExecution({ definition_id: "order", status: "RUNNING", active_path: "main" });
  await f.store.save(exe);
  // What the Python store writes: pydantic's dump, with what a JavaScript parse would change.
  const text = '{"id":"py-1","kind":"py.emit","created_time":"2026-01-31T12:00:00.123456Z",' +
    '"received_time":null,"data":{"big":1700000000123456789,"f":42.0,"z":-0.0,"e":1e+16,' +
    `"name":"x","10":"ten","huge":1${"0".repeat(400)}}}`;
  using client = testClient(FLEET_REGION);
  await client.send(
    new PutItemCommand({
      TableName: f.store.tables.outbox.name,
      Item: { seq: { N: "900000001" }, target_id: { S: exe.id }, event: { S: text } },
    }),
  );
  const own = newEvent("own", { n: 1.5, list: [0, -1], "2": "two" });
  await f.store.commit(exe, { emits: [{ target: exe.id, event: own }] });
  const report = await f.fleet.relay();
  assert.deepEqual([report.outbox.delivered, report.outbox.failed], [2, 0]);
  const read = await readQueue(f.queue);
  const byId = new Map(read.map((m) => [m.event.id, m]));
  assert.equal(byId.get("py-1")?.body, text, "as stored, byte for byte");
  assert.equal(byId.get("py-1")?.body, byId.get("py-1")?.redumped, "pydantic's own dump");
  const ownBody = byId.get(own.id)!;
  assert.deepEqual(JSON.parse(ownBody.body).data, own.data, "as committed");
  assert.equal(ownBody.body, ownBody.redumped);
});

Deno.test("relay() sets aside an event harel cannot read, and publishes the rest of its target", async () => {
  await using f = await freshFleet();
  const exe = newExecution({ definition_id: "order", status: "RUNNING", active_path: "main" });
  await f.store.save(exe);
  using client = testClient(FLEET_REGION);
  for (
    const [seq, text] of [
      ["900000001", '{"id":"bad","kind":"k","data":{"note":"\\ud83d"}}'],
      ["900000002", '{"id":"late","kind":"k","created_time":"2026-01-31T12:00:00+24:00"}'],
      ["900000003", '{"id":"good","kind":"k","created_time":null,"received_time":null,"data":{}}'],
    ]
  ) {
    await client.send(
      new PutItemCommand({
        TableName: f.store.tables.outbox.name,
        Item: { seq: { N: seq! }, target_id: { S: exe.id }, event: { S: text! } },
      }),
    );
  }
  const errors: unknown[] = [];
  const report = await f.fleet.relay({ outbox: { onError: (e) => errors.push(e) } });
  assert.deepEqual([report.outbox.delivered, report.outbox.setAside], [1, 2]);
  assert.match(String(errors[0]), /UnreadableEntry.*event\.data\.note holds a lone/);
  assert.match(String(errors[1]), /offset \+24:00/);
  const dead = await f.store.deadLetters("outbox");
  assert.deepEqual(dead.map((d) => d.key).sort(), [900000001, 900000002]);
  assert.deepEqual((await readQueue(f.queue)).map((m) => m.event.id), ["good"]);
});

Deno.test("relay() never dead-letters a publish because SQS failed; it retries with backoff", async () => {
  await using f = await freshFleet();
  const exe = newExecution({ definition_id: "d", status: "RUNNING", active_path: "main" });
  await f.store.save(exe);
  const event = newEvent("retry.me");
  await f.store.commit(exe, { emits: [{ target: exe.id, event }] });
  using client = testClient(FLEET_REGION);
  await client.send(
    new PutItemCommand({
      TableName: f.store.tables.timers.name,
      Item: { execution_id: { S: exe.id }, path: { S: "main" }, fire_at: { N: "1700000001" } },
    }),
  );
  const now = { backoff: { minSeconds: 0, maxSeconds: 0 } };
  for (let pass = 0; pass < 12; pass++) {
    const report = await f.offline.relay({ outbox: now, timers: now });
    assert.deepEqual(
      [report.outbox.failed, report.outbox.setAside, report.timers.failed, report.timers.setAside],
      [1, 0, 1, 0],
      `pass ${pass + 1}`,
    );
  }
  assert.deepEqual(await f.store.deadLetters("outbox"), []);
  assert.deepEqual(await f.store.deadLetters("timers"), []);
  const waiting = await f.offline.relay();
  assert.deepEqual([waiting.outbox.failed, waiting.timers.failed], [1, 1]);
  const [entry] = await f.store.executionOutbox(exe.id).then((o) => o.emitted);
  assert.equal(entry?.state, "waiting");
  assert.ok(
    entry!.retryAt! - Date.now() / 1000 > 290 && entry!.retryAt! - Date.now() / 1000 <= 300,
    `backs off at most 5 min: ${entry!.retryAt}`,
  );
});

Deno.test("cancel() chooses as harel's control plane, with hasCancelHandler", async (t) => {
  const running = () =>
    newExecution({ definition_id: "order", status: "RUNNING", active_path: "main" });

  await t.step("no cancel handler: CANCELLED at once, no event", async () => {
    await using f = await freshFleet({ hasCancelHandler: new Set(["other"]) });
    const exe = running();
    await f.store.save(exe);
    assert.deepEqual(await f.fleet.cancel(exe.id, { reason: { by: "ops" } }), {
      changed: true,
      status: "CANCELLED",
    });
    assert.deepEqual(await f.store.pendingOutbox(), []);
    assert.deepEqual(await readQueue(f.queue, 0.5), []);
  });

  await t.step("a cancel handler: CANCELLING, its Cancel published at once", async () => {
    await using f = await freshFleet({ hasCancelHandler: (id) => id === "order" });
    const exe = running();
    await f.store.save(exe);
    assert.deepEqual(await f.fleet.cancel(exe.id, { reason: { by: "ops" } }), {
      changed: true,
      status: "CANCELLING",
    });
    assert.deepEqual(await f.store.pendingOutbox(), [], "published and acknowledged");
    const [cancel, ...more] = await readQueue(f.queue);
    assert.equal(more.length, 0);
    assert.deepEqual([cancel?.group, cancel?.event.kind, cancel?.event.data], [
      exe.id,
      "Cancel",
      { by: "ops" },
    ]);
  });

  await t.step(
    "a publish that fails: cancel() says so, and relay() publishes the Cancel",
    async () => {
      await using f = await freshFleet();
      const exe = running();
      await f.store.save(exe);
      await assert.rejects(f.offline.cancel(exe.id), (error) => {
        assert.ok(error instanceof CancelNotPublished, String(error));
        assert.equal(error.executionId, exe.id);
        assert.match(
          error.message,
          /is CANCELLING \(committed\), but its Cancel was not published/,
        );
        return true;
      });
      assert.equal((await f.store.load(exe.id))?.status, "CANCELLING");
      assert.deepEqual((await f.store.pendingOutbox()).map((e) => e.event.kind), ["Cancel"]);
      assert.equal((await f.fleet.relay()).outbox.delivered, 1);
      assert.deepEqual((await readQueue(f.queue)).map((m) => m.event.kind), ["Cancel"]);
    },
  );

  await t.step("a Cancel SQS would refuse is refused before anything is committed", async () => {
    await using f = await freshFleet();
    const exe = running();
    await f.store.save(exe);
    for (const bad of ["\uFFFE", "\uFFFF"]) {
      await assert.rejects(
        f.fleet.cancel(exe.id, { reason: { note: `a${bad}b` } }),
        /holds U\+FFFE or U\+FFFF, which SQS refuses/,
      );
    }
    assert.equal((await f.store.load(exe.id))?.status, "RUNNING");
    assert.deepEqual(await f.store.pendingOutbox(), []);
  });

  await t.step(
    "harel decides per active state: a state without a handler is terminated",
    async () => {
      await using f = await freshFleet({
        hasCancelHandler: (id, path) => id === "order" && path.startsWith("main"),
      });
      const idle = { ...running(), active_path: "idle" };
      const inner = { ...running(), active_path: "main.pay" };
      await f.store.save(idle);
      await f.store.save(inner);
      assert.deepEqual(await f.fleet.cancel(idle.id), { changed: true, status: "CANCELLED" });
      assert.deepEqual(await f.fleet.cancel(inner.id), { changed: true, status: "CANCELLING" });
    },
  );

  await t.step("a DONE execution becomes CANCELLED, with a handler or without", async () => {
    await using f = await freshFleet({ hasCancelHandler: new Set(["order"]) });
    const kept = { ...running(), status: "DONE" as const };
    const ended = { ...running(), definition_id: "plain", status: "DONE" as const };
    await f.store.save(kept);
    await f.store.save(ended);
    assert.deepEqual(await f.fleet.cancel(kept.id), { changed: true, status: "CANCELLED" });
    assert.deepEqual(await f.fleet.cancel(ended.id), { changed: true, status: "CANCELLED" });
    assert.deepEqual(await readQueue(f.queue, 0.5), []);
  });

  await t.step("a bad hasCancelHandler is refused", () => {
    assert.throws(
      () =>
        new FleetClient({
          store: {} as never,
          queue: {} as never,
          hasCancelHandler: ["order"] as never,
        }),
      TypeError,
    );
  });
});

Deno.test("send() reads the outbox only for a PENDING execution: what that costs", async () => {
  await using f = await freshFleet();
  const { client, capacity } = capacityClient(FLEET_REGION);
  try {
    const store = new DynamoDBStore(client, { prefix: f.prefix, otherWriters: true });
    const fleet = new FleetClient({ store, queue: f.queue });
    const pending = await fleet.create("order"); // its Start published and acknowledged
    const running = newExecution({ definition_id: "order", status: "RUNNING", active_path: "m" });
    await store.save(running);
    const cost = async (id: string) => {
      capacity.units = 0;
      capacity.calls.length = 0;
      await fleet.send(id, newEvent("e"));
      return { units: capacity.units, calls: [...capacity.calls] };
    };
    const onRunning = await cost(running.id);
    const onPending = await cost(pending.id);
    assert.deepEqual(onRunning.calls, ["GetItemCommand"], "a RUNNING one: the load alone");
    assert.equal(onRunning.units, 1);
    // Its load, then executionOutbox's strong reads of its item and hold: 2 units at 1 KB.
    assert.equal(onPending.units, 2, `a PENDING one: ${JSON.stringify(onPending)}`);
  } finally {
    client.destroy();
  }
});

Deno.test("a harel worker meets the inputs that used to kill it and never exits", async () => {
  await using f = await freshFleet();
  const nested = (levels: number) => {
    let value: Record<string, unknown> = {};
    for (let i = 1; i < levels; i++) value = { d: value };
    return value;
  };
  const refused: string[] = [];
  const attempt = async (what: string, call: () => Promise<unknown>) => {
    await call().catch((e) => refused.push(`${what}: ${(e as Error).message.slice(0, 90)}`));
  };
  // The poison cases: nesting of 199 to 497 levels, ids over 1,024 bytes, U+FFFE in a reason.
  for (const levels of [199, 200, 250, 497]) {
    await attempt(`create ${levels}`, () => f.fleet.create("order", { context: nested(levels) }));
  }
  const started = await f.fleet.create("order", { context: { deepest: nested(98) } });
  await runWorker(f.queue, f.prefix);
  for (const levels of [199, 300, 497]) {
    await attempt(`send ${levels}`, () => f.fleet.send(started.id, newEvent("k", nested(levels))));
  }
  for (const id of ["x".repeat(1025), "é".repeat(513), "👍".repeat(257)]) {
    await attempt(`send id`, () => f.fleet.send(started.id, { ...newEvent("k"), id }));
  }
  await f.fleet.send(started.id, { ...newEvent("edge"), id: "x".repeat(1024) });
  await f.fleet.send(started.id, newEvent("deep", nested(99)));
  const cancelled = await f.fleet.create("order");
  await attempt("cancel", () => f.fleet.cancel(cancelled.id, { reason: { note: "\uFFFE" } }));
  // Another writer's rows with the same poison: the relay sets them aside.
  using client = testClient(FLEET_REGION);
  const rows = [
    JSON.stringify({ id: "deep", kind: "k", data: nested(300) }),
    JSON.stringify({ id: "x".repeat(1100), kind: "k", data: {} }),
    JSON.stringify({ id: "odd", kind: "k", data: { note: "\uFFFF" } }),
  ];
  for (const [i, text] of rows.entries()) {
    await client.send(
      new PutItemCommand({
        TableName: f.store.tables.outbox.name,
        Item: {
          seq: { N: String(910_000_000 + i) },
          target_id: { S: started.id },
          event: { S: text },
        },
      }),
    );
  }
  const report = await f.fleet.relay();
  assert.equal(report.outbox.setAside, 3);
  assert.equal(refused.length, 11, refused.join("\n"));
  const handled = await runWorker(f.queue, f.prefix); // rejects if the worker exits non-zero
  assert.deepEqual(handled.map((h) => [h.kind, h.action]).sort(), [
    ["Start", "processed"],
    ["deep", "processed"],
    ["edge", "processed"],
  ]);
  assert.equal((await f.store.load(started.id))?.status, "RUNNING");
  assert.equal((await f.store.load(cancelled.id))?.status, "RUNNING");
});
