/**
 * An operator dashboard a worker mounts: executions, their timers and trace, the relay's backlog
 * and dead letters, as script-free HTML, and (when on) the actions that clear an outage.
 * `dashboard(store, options)` returns a request handler over any `ExecutionStore`. Safe by
 * default: `authorize` is required, only its own host names, actions off, and every POST needs a
 * CSRF token and the same origin (docs/dashboard.md, "Security").
 *
 * @example Mounting it at /dashboard behind a token
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 * import { authorizeToken, dashboard } from "@harel/dynamodb/dashboard";
 *
 * const token = Deno.env.get("HAREL_DASHBOARD_TOKEN");
 * if (!token) throw new Error("set HAREL_DASHBOARD_TOKEN");
 * const store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const ops = dashboard(store, {
 *   authorize: authorizeToken(token),
 *   challenge: 'Basic realm="harel dashboard"',
 *   basePath: "/dashboard",
 *   actions: true,
 *   secret: token,
 * });
 * Deno.serve((request) => {
 *   const { pathname } = new URL(request.url);
 *   if (pathname === "/dashboard" || pathname.startsWith("/dashboard/")) return ops(request);
 *   return new Response("the worker's own routes");
 * });
 * ```
 *
 * @module
 */
import type { ExecutionStore } from "./core/types.ts";
import type { DashboardOptions } from "./dashboard/dashboard_options.ts";
import { checkSettings } from "./dashboard/_options.ts";
import { createHandler } from "./dashboard/_handler.ts";

export type { DashboardOptions, FleetControl } from "./dashboard/dashboard_options.ts";

/**
 * The dashboard of `store`, as a request handler: `/`, `/executions/{id}` and
 * `/dead-letters/{kind}` under `basePath`, each reading O(page) (docs/dashboard.md).
 *
 * @example A read-only dashboard of a test store, asked for its first page
 * ```ts
 * import assert from "node:assert/strict";
 * import { dashboard } from "@harel/dynamodb/dashboard";
 * import { MemoryStore, newExecution } from "@harel/dynamodb/testing";
 *
 * const store = new MemoryStore();
 * await store.commit(newExecution({ definition_id: "order", status: "RUNNING" }));
 * const handler = dashboard(store, { authorize: () => true });
 * const response = await handler(new Request("http://localhost/"));
 * assert.equal(response.status, 200);
 * assert.match(await response.text(), /order/);
 * ```
 *
 * @param store The store to show (and, with `actions`, to act on).
 * @param options Who may see it, where it is mounted, whether it acts.
 * @throws {TypeError} Without `authorize`, for an option it does not know (naming the near
 *   miss) or of the wrong type (a `hosts` entry that is no host name), or a store that lacks a
 *   call the pages make.
 * @throws {RangeError} For a `pageSize` outside 1 to 1000.
 */
export function dashboard(
  store: ExecutionStore,
  options: DashboardOptions,
): (request: Request) => Promise<Response> {
  return createHandler(store, checkSettings(store, options));
}

/**
 * An `authorize` that lets in requests carrying `token` as a bearer token or a Basic password,
 * compared in constant time.
 *
 * @example A token from the environment
 * ```ts
 * import assert from "node:assert/strict";
 * import { authorizeToken } from "@harel/dynamodb/dashboard";
 *
 * const allowed = authorizeToken("correct-horse-battery-staple");
 * const request = (authorization: string) => new Request("http://localhost/", { headers: { authorization } });
 * assert.equal(await allowed(request("Bearer correct-horse-battery-staple")), true);
 * assert.equal(await allowed(request(`Basic ${btoa("ops:correct-horse-battery-staple")}`)), true);
 * assert.equal(await allowed(request("Bearer guess")), false);
 * ```
 *
 * @param token The secret, at least 16 characters.
 * @throws {TypeError} For a token that is not a string of at least 16 characters.
 */
export function authorizeToken(token: string): (request: Request) => Promise<boolean> {
  if (typeof token !== "string" || token.length < 16) {
    throw new TypeError(
      `authorizeToken needs a secret of at least 16 characters, got ${
        typeof token === "string" ? `${token.length} characters` : typeof token
      }`,
    );
  }
  const expected = digest(token);
  return async (request: Request): Promise<boolean> => {
    const given = presented(request.headers.get("authorization"));
    if (given === null) return false;
    const [a, b] = await Promise.all([expected, digest(given)]);
    // Equal-length digests, every byte compared: the time says nothing of the token.
    let difference = 0;
    for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
    return difference === 0;
  };
}

/** The secret an `Authorization` header presents: a bearer token or a Basic password. */
function presented(header: string | null): string | null {
  const match = header?.match(/^(Bearer|Basic)\s+(\S+)\s*$/i);
  if (!match) return null;
  if (match[1]!.toLowerCase() === "bearer") return match[2]!;
  let decoded: string;
  try {
    decoded = new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.fromBase64(match[2]!));
  } catch {
    return null;
  }
  const colon = decoded.indexOf(":");
  return colon === -1 ? null : decoded.slice(colon + 1);
}

async function digest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}
