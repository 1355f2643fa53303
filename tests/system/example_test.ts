// The example worker, driven over HTTP end to end against DynamoDB Local.
import assert from "node:assert/strict";
import { createOrderWorker } from "../../scripts/order_worker.ts";
import { freshStore, pause } from "../_support/env.ts";

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 10_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(100);
  }
}

Deno.test("the order worker: events, a timer that fires, a deduplicated duplicate, a cursor walk", async () => {
  await using store = await freshStore();
  const worker = createOrderWorker(store, { paymentTimeoutSeconds: 1, tickMs: 100 });
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    worker.handler,
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  };
  worker.start();
  try {
    const ids: string[] = [];
    for (const customer of ["ada", "bob", "cy"]) {
      const created = await call("POST", "/executions", { customer, total: 42 });
      assert.equal(created.status, 201);
      assert.equal(created.body.execution.active_path, "order.awaiting_payment");
      ids.push(created.body.execution.id);
    }
    const [paid, unpaid, other] = ids as [string, string, string];

    const payment = { id: "pay-1", kind: "payment.received", data: { amount: 42 } };
    const first = await call("POST", `/executions/${paid}/events`, payment);
    assert.equal(first.status, 200);
    assert.deepEqual([
      first.body.duplicate,
      first.body.execution.active_path,
      first.body.execution.version,
    ], [false, "order.shipping", 2]);
    const again = await call("POST", `/executions/${paid}/events`, payment);
    assert.equal(again.body.duplicate, true, "the same event id is deduplicated");
    assert.equal(again.body.execution.version, 2);

    // The relay sends order.ship out; the unpaid order's timer fires and cancels it.
    await until(
      "order.ship",
      () =>
        Promise.resolve(
          worker.delivered.find((e) => e.kind === "order.ship" && e.data.orderId === paid),
        ),
    );
    const cancelled = await until("the payment timeout", async () => {
      const { body } = await call("GET", `/executions/${unpaid}`);
      return body.execution.status === "CANCELLED" ? body.execution : undefined;
    });
    assert.equal(cancelled.outcome, "payment_timeout");
    const { body: timedOut } = await call("GET", `/executions/${unpaid}`);
    assert.deepEqual(
      timedOut.trace.map((s: { event: string }) => s.event),
      ["start", "Timeout"],
      "sweepTimers delivered harel's Timeout event",
    );
    assert.equal(
      (await call("GET", `/executions/${paid}`)).body.execution.status,
      "RUNNING",
      "its timer was cancelled",
    );

    assert.equal(
      (await call("POST", `/executions/${paid}/events`, { kind: "shipment.delivered" })).body
        .execution.status,
      "DONE",
    );
    assert.equal(
      (await call("POST", `/executions/${other}/events`, { kind: "shipment.delivered" })).status,
      409,
    );
    assert.equal(
      (await call("POST", `/executions/nope/events`, { kind: "payment.received" })).status,
      404,
    );

    const { body: shown } = await call("GET", `/executions/${paid}`);
    assert.deepEqual(shown.trace.map((s: { event: string; index: number }) => [s.index, s.event]), [
      [0, "start"],
      [1, "payment.received"],
      [2, "shipment.delivered"],
    ]);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
      const { body } = await call("GET", `/executions?limit=1${query}`);
      seen.push(...body.items.map((s: { id: string }) => s.id));
      cursor = body.nextCursor;
      pages++;
    } while (cursor);
    assert.deepEqual(seen.sort(), [...ids].sort());
    assert.equal(pages, 3);
    assert.equal((await call("GET", "/executions?cursor=forged")).status, 400);
    assert.equal((await call("GET", "/executions/nope")).status, 404);
  } finally {
    await worker.stop();
  }
});

Deno.test("the order worker delivers what a commit emitted within the same request, before any relay pass", async () => {
  await using store = await freshStore();
  const worker = createOrderWorker(store, { paymentTimeoutSeconds: 60 }); // never started: no passes
  const post = (path: string, body: unknown) =>
    worker.handler(
      new Request(`http://worker${path}`, { method: "POST", body: JSON.stringify(body) }),
    );
  const { execution } = await (await post("/executions", { customer: "ada" })).json();
  const paid = await post(`/executions/${execution.id}/events`, { kind: "payment.received" });
  assert.equal(paid.status, 200);
  assert.deepEqual(
    worker.delivered.map((e) => [e.kind, e.data.orderId]),
    [["order.ship", execution.id]],
    "order.ship went out with the payment's own request",
  );
  assert.deepEqual(await store.pendingOutbox(), [], "and was acknowledged");
});
