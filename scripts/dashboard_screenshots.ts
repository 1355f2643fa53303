// The screenshots of docs/dashboard.md: a dashboard over a store seeded with a small order
// workflow (running, shipped, delivered, cancelled and failed orders, two stuck for hours, their
// traces and timers, dead letters of each queue), photographed page by page in headless Chromium.
//
//   deno task screenshots     (brings up a DynamoDB Local, writes docs/dashboard/*.png)
//
// With DYNAMODB_ENDPOINT set it uses that DynamoDB, on tables of a fresh prefix.
import { DynamoDBStore, type Execution, newEvent, newExecution } from "../mod.ts";
import { dashboard } from "../src/dashboard.ts";
import { launchBrowser } from "../tests/_support/browser.ts";

const OUT = new URL("../docs/dashboard/", import.meta.url);

/** Commits an order through its states, one traced commit per step. */
async function order(
  store: DynamoDBStore,
  customer: string,
  steps: { event: string; to: string; status: Execution["status"]; outcome?: string }[],
  extra: Partial<Execution> = {},
): Promise<Execution> {
  const exe = newExecution({
    definition_id: "order",
    status: "RUNNING",
    active_path: "order.awaiting_payment",
    context: { customer, total: 42 },
    ...extra,
  });
  await store.commit(exe, {
    trace: { event: "start", to: "order.awaiting_payment", at: new Date().toISOString() },
  });
  for (const step of steps) {
    const from = exe.active_path;
    exe.active_path = step.to;
    exe.status = step.status;
    exe.outcome = step.outcome ?? null;
    exe.processed_events += 1;
    await store.commit(exe, {
      trace: { event: step.event, from, to: step.to, at: new Date().toISOString() },
    });
  }
  return exe;
}

async function seed(store: DynamoDBStore, hoursAgo: DynamoDBStore): Promise<{ shown: Execution }> {
  const paid = { event: "payment.received", to: "order.shipping", status: "RUNNING" as const };
  const delivered = {
    event: "shipment.delivered",
    to: "order.delivered",
    status: "DONE" as const,
    outcome: "delivered",
  };
  // Two orders whose last commit was three hours ago (a store whose clock says so): stuck.
  await order(hoursAgo, "alan", [paid]);
  await order(hoursAgo, "barbara", []);
  await order(store, "ada", [paid, delivered]);
  const shown = await order(store, "grace", [paid]);
  const waiting = await order(store, "linus", []);
  // Grace's shipping deadline, a label retry waiting after a failure, a reminder the sweeper
  // gave up on; Linus's payment timer, due five minutes ago and not yet swept.
  const now = Date.now() / 1000;
  await store.commit(shown, {
    timers: [
      { action: "schedule", path: "order.shipping.deadline", fireAt: now + 2 * 86_400 },
      { action: "schedule", path: "order.shipping.label_retry", fireAt: now - 120 },
      { action: "schedule", path: "order.reminder", fireAt: now - 3600 },
    ],
  });
  await store.recordFailure("timers", {
    executionId: shown.id,
    path: "order.shipping.label_retry",
    fireAt: now - 120,
  }, { attempts: 2, retryAt: now + 240, error: "carrier API answered 429 Too Many Requests" });
  await store.recordFailure("timers", {
    executionId: shown.id,
    path: "order.reminder",
    fireAt: now - 3600,
  }, { attempts: 10, retryAt: null, error: "mailer answered 421 Service not available" });
  await store.commit(waiting, {
    timers: [{ action: "schedule", path: "order.awaiting_payment", fireAt: now - 300 }],
  });
  // An event for the outside world, made twelve minutes ago and not yet delivered.
  const shipped = {
    ...newEvent("order.shipped", { carrier: "ups" }),
    created_time: new Date(Date.now() - 12 * 60_000).toISOString(),
  };
  await store.commit(waiting, { emits: [{ target: null, event: shipped }] });
  await order(store, "edgar", [{
    event: "Timeout",
    to: "order.cancelled",
    status: "CANCELLED",
    outcome: "payment_timeout",
  }]);
  await order(store, "ken", [paid], { error: "carrier API refused the label: 422" });
  const failed = await order(store, "margaret", [paid]);
  failed.status = "FAILED";
  failed.error = "carrier API refused the label: 422";
  await store.commit(failed, { trace: { event: "label.refused", from: "order.shipping" } });
  await order(store, "edsger", [paid, delivered]);

  // Dead letters: a billing webhook that was down, a child that would not start, a timer.
  const billing = newExecution({ definition_id: "billing", status: "RUNNING" });
  await store.commit(billing);
  const { outbox } = await store.commit(newExecution({ definition_id: "order" }), {
    emits: [
      { target: billing.id, event: newEvent("invoice.requested", { total: 42 }) },
      { target: billing.id, event: newEvent("invoice.requested", { total: 17 }) },
      { target: null, event: newEvent("order.shipped", { carrier: "dhl" }) },
    ],
  });
  for (const seq of outbox) {
    await store.recordFailure("outbox", seq, {
      attempts: 10,
      retryAt: null,
      error: "billing webhook answered 503 Service Unavailable",
    });
  }
  const { spawns } = await store.commit(newExecution({ definition_id: "fulfilment" }), {
    spawns: [{ childId: "pick-and-pack-7f3a", rootPath: "fulfilment.pick", context: {} }],
  });
  await store.recordFailure("spawns", spawns[0]!, {
    attempts: 10,
    retryAt: null,
    error: "definition fulfilment.pick is not deployed",
  });
  return { shown };
}

if (import.meta.main) {
  const endpoint = Deno.env.get("DYNAMODB_ENDPOINT");
  if (!endpoint) throw new Error("DYNAMODB_ENDPOINT is not set: run `deno task screenshots`");
  const prefix = `screenshots_${Date.now().toString(36)}`;
  await using store = await DynamoDBStore.create({ endpoint, prefix });
  await using hoursAgo = await DynamoDBStore.create({
    endpoint,
    prefix,
    ensureTables: false,
    now: () => Date.now() - 3 * 3600_000,
  });
  const { shown } = await seed(store, hoursAgo);
  const handler = dashboard(store, {
    authorize: () => true,
    basePath: "/dashboard",
    actions: true,
  });
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  const base = `http://127.0.0.1:${server.addr.port}/dashboard`;
  await using browser = await launchBrowser();
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 640 });
  await Deno.mkdir(OUT, { recursive: true });
  const shoot = async (name: string) => {
    const path = new URL(`${name}.png`, OUT).pathname as `${string}.png`;
    await page.screenshot({ path, fullPage: true });
    console.error(`wrote ${path}`);
  };
  await page.goto(`${base}/`);
  await shoot("executions");
  await page.goto(`${base}/executions/${shown.id}`);
  await shoot("execution");
  await page.goto(`${base}/dead-letters/outbox`);
  await shoot("dead-letters");
  const [drop] = await page.$$("xpath/.//button[normalize-space()='Drop']");
  await Promise.all([page.waitForNavigation(), drop!.click()]);
  await shoot("confirm");
}
