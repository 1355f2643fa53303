// The execution page's Suspend, Resume, Cancel and Terminate, given a FleetClient (on DynamoDB
// Local and moto's SQS), behind the dashboard's CSRF protection.
import assert from "node:assert/strict";
import { type DynamoDBStore, newExecution } from "../../mod.ts";
import { SQSClient } from "@aws-sdk/client-sqs";
import { FleetClient, SqsQueue } from "../../src/sqs.ts";
import { MemoryStore } from "../../src/testing.ts";
import { build, openSession, post } from "../_support/dashboard.ts";

import { fleetStore, freshQueue, readQueue } from "../_support/sqs.ts";

async function running(store: DynamoDBStore): Promise<string> {
  const exe = newExecution({ definition_id: "order", status: "RUNNING", active_path: "main" });
  await store.save(exe);
  return exe.id;
}

Deno.test("the execution page suspends, resumes, cancels and terminates through the fleet", async (t) => {
  await using store = await fleetStore();
  await using queue = await freshQueue();
  const fleet = new FleetClient({ store, queue });
  const handler = build(store, { fleet });
  const id = await running(store);
  const page = async () =>
    await (await handler(new Request(`http://ops.test/executions/${id}`))).text();
  const session = await openSession(handler, `/executions/${id}`);
  const send = (op: string, fields: Record<string, string> = {}) =>
    post(handler, `/executions/${id}/${op}`, { csrf: session.csrf, ...fields }, {
      cookie: session.cookie,
    });

  await t.step("a RUNNING execution offers Suspend, Cancel and Terminate", async () => {
    const html = await page();
    for (const op of ["suspend", "cancel", "terminate"]) {
      assert.match(html, new RegExp(`action="/executions/${id}/${op}"`));
    }
    assert.doesNotMatch(html, /\/resume"/);
  });
  await t.step("Suspend needs no confirmation and says what it did", async () => {
    const done = await send("suspend");
    assert.equal(done.status, 303);
    assert.equal(done.headers.get("location"), `/executions/${id}?done=suspended`);
    assert.equal((await store.load(id))?.status, "SUSPENDED");
    const again = await send("suspend");
    assert.equal(again.headers.get("location"), `/executions/${id}?done=unchanged`);
  });
  await t.step("Resume", async () => {
    const done = await send("resume");
    assert.equal(done.headers.get("location"), `/executions/${id}?done=resumed`);
    assert.equal((await store.load(id))?.status, "RUNNING");
  });
  await t.step("Cancel asks first, then publishes a Cancel", async () => {
    const ask = await send("cancel");
    assert.equal(ask.status, 200);
    assert.match(await ask.text(), /Cancel this execution\?/);
    assert.equal((await store.load(id))?.status, "RUNNING", "nothing done before the confirmation");
    const done = await send("cancel", { confirm: "yes" });
    assert.equal(done.headers.get("location"), `/executions/${id}?done=cancelling`);
    assert.equal((await store.load(id))?.status, "CANCELLING");
    assert.deepEqual(await store.pendingOutbox(), []);
    assert.deepEqual((await readQueue(queue)).map((m) => m.event.kind), ["Cancel"]);
  });
  await t.step("Terminate after its confirmation", async () => {
    const done = await send("terminate", { confirm: "yes" });
    assert.equal(done.headers.get("location"), `/executions/${id}?done=terminated`);
    assert.equal((await store.load(id))?.status, "CANCELLED");
    assert.doesNotMatch(await page(), /\/terminate"/);
  });
  await t.step("a forged POST (no CSRF token) is refused and changes nothing", async () => {
    const other = await running(store);
    const forged = await post(handler, `/executions/${other}/suspend`, {}, {
      cookie: session.cookie,
    });
    assert.equal(forged.status, 403);
    assert.equal((await store.load(other))?.status, "RUNNING");
  });
  await t.step("a missing execution says so", async () => {
    const done = await post(handler, "/executions/nobody/suspend", { csrf: session.csrf }, {
      cookie: session.cookie,
    });
    assert.equal(done.headers.get("location"), "/?done=no-such-execution");
  });
  assert.deepEqual(await readQueue(queue, 0.5), [], "only cancel() publishes");
});

Deno.test("the page says what Cancel and Terminate do to a finished execution, and a cancel without a handler", async () => {
  await using store = await fleetStore();
  await using queue = await freshQueue();
  const fleet = new FleetClient({ store, queue, hasCancelHandler: new Set() });
  const handler = build(store, { fleet });
  const done = newExecution({ definition_id: "order", status: "DONE", active_path: "end" });
  await store.save(done);
  const html = await (await handler(new Request(`http://ops.test/executions/${done.id}`))).text();
  assert.match(html, /Terminate \(DONE becomes CANCELLED\)/);
  assert.doesNotMatch(html, new RegExp(`/executions/${done.id}/cancel"`), "no Cancel on DONE");
  const session = await openSession(handler, `/executions/${done.id}`);
  const send = (id: string, op: string, fields: Record<string, string> = {}) =>
    post(handler, `/executions/${id}/${op}`, { csrf: session.csrf, ...fields }, {
      cookie: session.cookie,
    });
  assert.match(await (await send(done.id, "terminate")).text(), /a DONE one too/);
  assert.match(
    await (await send(done.id, "cancel")).text(),
    /or is DONE\) it becomes CANCELLED at once, as harel makes it/,
  );
  const id = await running(store);
  const cancelled = await send(id, "cancel", { confirm: "yes" });
  assert.equal(cancelled.headers.get("location"), `/executions/${id}?done=cancelled`);
  assert.equal((await store.load(id))?.status, "CANCELLED");
  const notice =
    await (await handler(new Request(`http://ops.test/executions/${id}?done=cancelled`)))
      .text();
  assert.match(notice, /Cancelled: it and its children are CANCELLED/);
  assert.deepEqual(await readQueue(queue, 0.5), [], "no Cancel event");
});

Deno.test("without a fleet the page has no control buttons and the routes are 404", async () => {
  await using store = await fleetStore();
  const handler = build(store);
  const id = await running(store);
  const html = await (await handler(new Request(`http://ops.test/executions/${id}`))).text();
  assert.doesNotMatch(html, /\/suspend"|\/terminate"/);
  const session = await openSession(handler, `/executions/${id}`);
  const response = await post(handler, `/executions/${id}/suspend`, { csrf: session.csrf }, {
    cookie: session.cookie,
  });
  assert.equal(response.status, 404);
  await response.body?.cancel();
  assert.equal((await store.load(id))?.status, "RUNNING");
});

Deno.test("dashboard() refuses a fleet that is not a FleetClient", () => {
  assert.throws(
    () => build(new MemoryStore(), { fleet: { suspend: () => {} } as never }),
    /fleet must be a FleetClient \(of @harel\/dynamodb\/sqs\): it has no resume\(\) method/,
  );
});

Deno.test("a Cancel SQS did not take: the page says it waits in the outbox", async () => {
  await using store = await fleetStore();
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
    const queue = new SqsQueue(down, `http://127.0.0.1:${port}/123456789012/q.fifo`);
    const handler = build(store, { fleet: new FleetClient({ store, queue }) });
    const id = await running(store);
    const session = await openSession(handler, `/executions/${id}`);
    const response = await post(handler, `/executions/${id}/cancel`, {
      csrf: session.csrf,
      confirm: "yes",
    }, { cookie: session.cookie });
    assert.equal(response.headers.get("location"), `/executions/${id}?done=cancel-unpublished`);
    await response.body?.cancel();
    assert.equal((await store.load(id))?.status, "CANCELLING");
    const notice = await (await handler(
      new Request(`http://ops.test/executions/${id}?done=cancel-unpublished`),
    )).text();
    assert.match(notice, /SQS did not take its Cancel event: it waits in its outbox/);
  } finally {
    down.destroy();
  }
});
