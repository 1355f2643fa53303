// The dashboard's request side driven without a browser: a seeded memory store, a handler over
// it, a browser session (cookie and token) and POSTs as the dashboard's own forms send them.
import assert from "node:assert/strict";
import { dashboard, type DashboardOptions } from "../../src/dashboard.ts";
import { MemoryStore, newEvent, newExecution, type Timer } from "../../src/testing.ts";
import type { ExecutionStore } from "../../mod.ts";

/** The origin the requests are made on. */
export const ORIGIN = "http://ops.test";
/** The dashboards' host (`hosts`): `ORIGIN`'s. */
export const HOST = "ops.test";
/** A dashboard's request handler. */
export type Handler = (request: Request) => Promise<Response>;

/** A store with one execution, two dead outbox entries for "billing", one for "crm", a dead timer. */
export async function seeded() {
  const store = new MemoryStore();
  const exe = newExecution({ definition_id: "order", status: "RUNNING" });
  const fireAt = 1_700_000_000.5;
  const { outbox } = await store.commit(exe, {
    emits: [
      { target: "billing", event: newEvent("invoice") },
      { target: "billing", event: newEvent("invoice") },
      { target: "crm", event: newEvent("contact") },
    ],
    timers: [{ action: "schedule", path: "order.wait", fireAt }],
  });
  for (const seq of outbox) {
    await store.recordFailure("outbox", seq, { attempts: 10, retryAt: null, error: "HTTP 503" });
  }
  const timer: Timer = { executionId: exe.id, path: "order.wait", fireAt };
  await store.recordFailure("timers", timer, { attempts: 10, retryAt: null, error: "down" });
  return { store, exe, outbox, timer };
}

/** A dashboard over `store` on `ORIGIN`'s host, everyone let in, actions on (options override). */
export function build(store: ExecutionStore, options: Partial<DashboardOptions> = {}): Handler {
  return dashboard(store, { authorize: () => true, actions: true, hosts: [HOST], ...options });
}

/** A browser's session: the cookie the dashboard set, and the token of its forms. */
export async function openSession(
  handler: Handler,
  path = "/dead-letters/outbox",
): Promise<{ cookie: string; csrf: string }> {
  const response = await handler(new Request(`${ORIGIN}${path}`));
  assert.equal(response.status, 200);
  const cookie = response.headers.get("set-cookie")!.split(";")[0]!;
  const csrf = (await response.text()).match(/name="csrf" value="([^"]+)"/)![1]!;
  return { cookie, csrf };
}

/** A POST as the dashboard's own form sends it, headers overridable (null removes one). */
export function post(
  handler: Handler,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string | null> = {},
): Promise<Response> {
  const all: Record<string, string | null> = {
    "content-type": "application/x-www-form-urlencoded",
    origin: ORIGIN,
    "sec-fetch-site": "same-origin",
    ...headers,
  };
  const sent = new Headers();
  for (const [name, value] of Object.entries(all)) if (value !== null) sent.set(name, value);
  return handler(
    new Request(`${ORIGIN}${path}`, {
      method: "POST",
      headers: sent,
      body: new URLSearchParams(fields).toString(),
    }),
  );
}

/** The seqs of the dead outbox entries, lowest first. */
export async function deadSeqs(store: MemoryStore): Promise<number[]> {
  return (await store.deadLetters("outbox")).map((letter) => letter.key);
}

/** `store` with some of its calls replaced (the others still called on the store itself). */
export function overriding(
  store: ExecutionStore,
  calls: Partial<ExecutionStore>,
): ExecutionStore {
  return new Proxy(store, {
    get(target, name) {
      if (Object.hasOwn(calls, name)) return calls[name as keyof ExecutionStore];
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
