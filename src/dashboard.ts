/**
 * An operator dashboard a worker mounts: the executions (open ones newest first, filtered,
 * paged), each one's document, timers and trace, the relay's backlog and its dead letters —
 * server-rendered HTML with one inline stylesheet, no script, no build step — and, when you turn
 * them on, the actions that clear an outage: retry or drop a dead letter, all of a queue or of an
 * outbox target, delete an execution.
 *
 * `dashboard(store, options)` returns a `(request) => Promise<Response>` for `Deno.serve` or a
 * router. It runs on Deno Deploy (nothing is read from disk) and on `deno run`, over any
 * `ExecutionStore` (`DynamoDBStore`, or `MemoryStore` in a test).
 *
 * Safe by default: `authorize` is required; it answers only to its own host names (`hosts`, by
 * default the loopback ones: no DNS rebinding); actions are off unless `actions: true`; every POST
 * needs the session's CSRF token and a same-origin `Sec-Fetch-Site`/`Origin`; stored text is
 * escaped; every response carries a script-free Content-Security-Policy, `nosniff`,
 * `no-store`, a same-origin `Referrer-Policy` and `frame-ancestors 'none'`; an error shows a generic page and goes
 * to `onError`.
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
 * The dashboard of `store`, as a request handler. Pages (under `basePath`): `/` the relay's
 * backlog per queue (pending, waiting, dead, held targets, relay lag), then the executions newest
 * commit first — the open ones unless `?status=` (repeatable; `any`: every execution, in the
 * table's order) says otherwise — with `?definition=`, `?before=` (a date or epoch seconds: the
 * stuck ones) and `?cursor=`, each page reading at most 500 stored rows; `/executions/{id}` its
 * facts (last commit, expiry), first 50 timers, newest 50 trace steps (the rest on
 * `/executions/{id}/timers` and `/executions/{id}/trace`) and document; `/dead-letters/{kind}`
 * (`outbox`, `spawns`, `timers`) the lowest dead letters with target, attempts and last error.
 * Every page's reads are O(page), and a row another writer stored oddly shows as unreadable (its
 * key and why) instead of failing the page. With `actions: true` their
 * buttons post to `/dead-letters/{kind}/{retry|drop|retry-all|drop-all}` and
 * `/executions/{id}/delete`; the destructive ones answer a confirmation page first.
 *
 * Answers: 421 for a `Host` that is not one of `hosts` (by default the loopback names), before
 * anything else; 401 when `authorize` says no; 403 for a POST that fails the same-origin check or the
 * CSRF token (nothing changes); 404 outside `basePath` or for an unknown page or id; 405 for
 * other methods (and for POSTs when actions are off); 400 for a parameter the page does not take;
 * 414, 413 and 415 for a long address, a large or foreign body; 500 with a generic page when the
 * store fails (the error goes to `onError`). HEAD is GET without the body.
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
 * @returns The request handler.
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
 * An `authorize` that lets in requests carrying `token`: as a bearer token
 * (`Authorization: Bearer <token>`, for scripts) or as the password of HTTP Basic auth (any user
 * name, for a browser: pair it with `challenge: 'Basic realm="..."'`). Compared in constant time.
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
 * @returns The `authorize` function.
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
