// A Deno Deploy worker for a small order workflow, runnable locally: `deno task example`.
//
//   POST /executions                  {"customer": "...", "total": 42}   start an order
//   POST /executions/:id/events       {"id"?: "...", "kind": "...", "data"?: {}}   deliver an event
//   GET  /executions?limit&cursor&status                                  list, with cursors
//   GET  /executions/:id                                                  the document and its trace
//   GET  /dashboard/                  the operator dashboard (@harel/dynamodb/dashboard), behind
//                                     HAREL_DASHBOARD_TOKEN: any user name, the token as password;
//                                     on a host name other than localhost, HAREL_DASHBOARD_HOSTS
//
// The package's relay (relayOutbox) and sweeper (sweepTimers) run in the background: on
// Deno.cron where the runtime has it (Deno Deploy; locally with --unstable-cron), and on an
// interval (the only way to go below a minute) everywhere. A timer fires harel's Timeout event,
// whose stable id makes a sweep that retries one effect.
import {
  DynamoDBStore,
  type Event,
  type Execution,
  type ExecutionStore,
  InvalidCursor,
  newEvent,
  newExecution,
  type OutboxEntry,
  relayOutbox,
  type Status,
  StoreConflict,
  sweepTimers,
} from "../mod.ts";
import type { CommitChanges } from "../mod.ts";
import { authorizeToken, dashboard } from "../src/dashboard.ts";

/** Options of the order worker. */
export interface OrderWorkerOptions {
  /** Seconds an order waits for its payment before it is cancelled. */
  paymentTimeoutSeconds?: number;
  /** How often the relay and the timer sweep run, in ms. */
  tickMs?: number;
  /**
   * Mounts the operator dashboard at /dashboard behind this token (a bearer token, or the
   * password of Basic auth with any user name), with its actions on. Absent: no dashboard.
   */
  dashboardToken?: string;
  /** The host names the dashboard answers to (its `hosts`); absent: the loopback names. */
  dashboardHosts?: string[];
}

interface Transition {
  to: string;
  status: Status;
  outcome?: string;
  changes: CommitChanges;
}

/** The workflow: which event moves an order from which state, and what that causes. */
function transition(exe: Execution, event: Event): Transition | null {
  const at = exe.active_path;
  if (at === "order.awaiting_payment" && event.kind === "payment.received") {
    return {
      to: "order.shipping",
      status: "RUNNING",
      changes: {
        timers: [{ action: "cancel", path: "order.awaiting_payment" }],
        emits: [{ target: null, event: newEvent("order.ship", { orderId: exe.id }) }],
      },
    };
  }
  if (
    at === "order.awaiting_payment" && event.kind === "Timeout" &&
    event.data.path === "order.awaiting_payment"
  ) {
    return { to: "order.cancelled", status: "CANCELLED", outcome: "payment_timeout", changes: {} };
  }
  if (at === "order.shipping" && event.kind === "shipment.delivered") {
    return {
      to: "order.delivered",
      status: "DONE",
      outcome: "delivered",
      changes: {
        emits: [{ target: null, event: newEvent("order.completed", { orderId: exe.id }) }],
      },
    };
  }
  return null;
}

const json = (body: unknown, status = 200) => Response.json(body, { status });

/** The worker: an HTTP handler, plus the relay and timer sweep it runs in the background. */
export function createOrderWorker(store: ExecutionStore, options: OrderWorkerOptions = {}) {
  const { paymentTimeoutSeconds = 30, tickMs = 1000, dashboardToken, dashboardHosts } = options;
  const ops = dashboardToken === undefined ? null : dashboard(store, {
    authorize: authorizeToken(dashboardToken),
    challenge: 'Basic realm="harel dashboard", charset="UTF-8"',
    basePath: "/dashboard",
    actions: true,
    secret: dashboardToken, // one CSRF key for every isolate that serves it
    ...(dashboardHosts ? { hosts: dashboardHosts } : {}),
  });
  /** Events the relay sent out to other services (null targets), for a look from outside. */
  const delivered: Event[] = [];

  /** loadForEvent → transition → commit, again from the top when another worker won. */
  async function deliver(id: string, event: Event): Promise<Response> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const { execution: exe, processed } = await store.loadForEvent(id, event.id);
      if (!exe) return json({ error: `no execution ${id}` }, 404);
      if (processed) return json({ duplicate: true, execution: exe });
      const next = transition(exe, event);
      if (!next) {
        return json({ error: `${event.kind} is not accepted in ${exe.active_path}` }, 409);
      }
      const from = exe.active_path;
      exe.active_path = next.to;
      exe.status = next.status;
      exe.outcome = next.outcome ?? exe.outcome ?? null;
      exe.processed_events += 1;
      try {
        const { outbox } = await store.commit(exe, {
          ...next.changes,
          processedEventId: event.id,
          trace: { event: event.kind, from, to: next.to },
        });
        // What this commit emitted goes out now, not at the next cron minute; what fails here
        // (or waits behind an earlier entry of its target) is left to the next pass.
        if (outbox.length > 0) await relayOutbox(store, relayEntry, { seqs: outbox, onError });
        return json({ duplicate: false, execution: exe });
      } catch (error) {
        if (!(error instanceof StoreConflict)) throw error;
      }
    }
    return json({ error: "too much contention, try again" }, 503);
  }

  async function start(body: { customer?: string; total?: number }): Promise<Response> {
    const exe = newExecution({
      definition_id: "order",
      status: "RUNNING",
      active_path: "order.awaiting_payment",
      context: { customer: body.customer ?? null, total: body.total ?? 0 },
    });
    await store.commit(exe, {
      timers: [{
        action: "schedule",
        path: "order.awaiting_payment",
        fireAt: Date.now() / 1000 + paymentTimeoutSeconds,
      }],
      trace: { event: "start", to: exe.active_path },
    });
    return json({ execution: exe }, 201);
  }

  async function handler(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (ops && (url.pathname === "/dashboard" || url.pathname.startsWith("/dashboard/"))) {
      return await ops(request);
    }
    const parts = url.pathname.split("/").filter(Boolean);
    try {
      if (parts[0] !== "executions" || parts.length > 3) return json({ error: "not found" }, 404);
      if (request.method === "POST" && parts.length === 1) {
        return await start(await request.json().catch(() => ({})));
      }
      if (request.method === "POST" && parts.length === 3 && parts[2] === "events") {
        const body = await request.json().catch(() => null);
        if (typeof body?.kind !== "string") return json({ error: "body needs a string kind" }, 400);
        const event = {
          ...newEvent(body.kind, body.data ?? {}),
          ...(body.id ? { id: String(body.id) } : {}),
        };
        return await deliver(decodeURIComponent(parts[1]!), event);
      }
      if (request.method === "GET" && parts.length === 1) {
        const status = url.searchParams.get("status") as Status | null;
        const page = await store.listExecutions({
          limit: Number(url.searchParams.get("limit") ?? 20),
          cursor: url.searchParams.get("cursor"),
          ...(status ? { status } : {}),
        });
        return json(page);
      }
      if (request.method === "GET" && parts.length === 2) {
        const id = decodeURIComponent(parts[1]!);
        const execution = await store.load(id);
        if (!execution) return json({ error: `no execution ${id}` }, 404);
        return json({ execution, trace: await store.readTrace(id) });
      }
      return json({ error: "not found" }, 404);
    } catch (error) {
      if (
        error instanceof InvalidCursor || error instanceof TypeError || error instanceof RangeError
      ) {
        return json({ error: error.message }, 400);
      }
      throw error;
    }
  }

  /** Delivers for the relay and the sweeper: throws (the entry stays) when it may work later. */
  async function deliverOrRetry(id: string, event: Event): Promise<void> {
    const response = await deliver(id, event);
    // 404 (no such order) and 409 (not accepted now) will not change: drop the entry.
    if (response.status >= 500) throw new Error(`${event.kind} to ${id}: ${response.status}`);
  }

  function onError(error: unknown): void {
    console.error("relay/sweep:", error);
  }

  /** Delivers one outbox entry: to another order, or (null target) out of the system. */
  async function relayEntry(entry: OutboxEntry): Promise<void> {
    if (entry.targetId === null) delivered.push(entry.event);
    else await deliverOrRetry(entry.targetId, entry.event);
  }

  /** One pass of the relay and the timer sweep; the signal stops it between entries. */
  async function tick(signal?: AbortSignal): Promise<void> {
    await relayOutbox(store, relayEntry, { signal, onError });
    await sweepTimers(
      store,
      (timer, event) => deliverOrRetry(timer.executionId, event),
      { signal, onError },
    );
  }

  let running: Promise<void> | null = null;
  let interval: ReturnType<typeof setInterval> | undefined;
  /** One pass unless one is under way (the interval and the cron never overlap). */
  const safeTick = (signal?: AbortSignal) => {
    running ??= tick(signal).catch((error) => console.error("relay/sweep failed:", error))
      .finally(() => {
        running = null;
      });
    return running;
  };

  return {
    handler,
    tick,
    pass: safeTick,
    delivered,
    /** Starts the background relay and sweep. */
    start(): void {
      interval ??= setInterval(() => safeTick(), tickMs);
    },
    /** Stops them and waits for a pass under way. */
    async stop(): Promise<void> {
      clearInterval(interval);
      interval = undefined;
      await running;
    },
  };
}

if (import.meta.main) {
  const endpoint = Deno.env.get("DYNAMODB_ENDPOINT") ?? null; // none: AWS itself
  // Build the client once per isolate. On Deno Deploy the tables were created at deploy time
  // (ensureTables()), so a cold isolate only checks they exist: one call, then straight to
  // work. Locally (a fresh DynamoDB Local) create() creates them.
  const store = await DynamoDBStore.create({
    endpoint,
    prefix: Deno.env.get("HAREL_PREFIX") ?? "harel",
    ensureTables: Deno.env.get("DENO_DEPLOYMENT_ID") === undefined,
  });
  // The dashboard's token: from the environment; locally, a fresh one when none is set (printed
  // below); on Deno Deploy, none means no dashboard.
  const deployed = Deno.env.get("DENO_DEPLOYMENT_ID") !== undefined;
  const given = Deno.env.get("HAREL_DASHBOARD_TOKEN") || undefined;
  const dashboardToken = given ?? (deployed ? undefined : crypto.randomUUID());
  // The dashboard's host names on Deno Deploy (`my-app.deno.dev,ops.example.com`): by default it
  // answers to the loopback names only.
  const hosts = Deno.env.get("HAREL_DASHBOARD_HOSTS")?.split(",").map((host) => host.trim());
  const worker = createOrderWorker(store, {
    paymentTimeoutSeconds: 30,
    dashboardToken,
    ...(hosts ? { dashboardHosts: hosts } : {}),
  });
  worker.start();
  // Deno Deploy runs the cron; locally it needs --unstable-cron (deno task example passes it).
  const cron = (Deno as unknown as {
    cron?: (name: string, schedule: string, fn: () => Promise<void>) => Promise<void>;
  }).cron;
  if (typeof cron === "function") {
    // A pass stops before the next minute's starts.
    cron("harel relay and sweep", "* * * * *", () => worker.pass(AbortSignal.timeout(50_000)));
  }
  const port = Number(Deno.env.get("PORT") ?? 8787);
  Deno.serve({ port }, worker.handler);
  console.error(`order worker on http://localhost:${port}, DynamoDB at ${endpoint ?? "AWS"}`);
  console.error(
    dashboardToken === undefined
      ? "dashboard off: set HAREL_DASHBOARD_TOKEN to mount it at /dashboard"
      : `dashboard on http://localhost:${port}/dashboard/ (any user name; password: ${
        given ? "$HAREL_DASHBOARD_TOKEN" : `${dashboardToken}, or set HAREL_DASHBOARD_TOKEN`
      })`,
  );
}
