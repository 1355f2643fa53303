/**
 * The options of {@linkcode dashboard}.
 *
 * @module
 */

/**
 * What the dashboard's control buttons call: harel's control plane, as `FleetClient` of
 * `@harel/dynamodb/sqs` offers it (any object with these four methods).
 *
 * @example A fleet client as the dashboard's control plane
 * ```ts
 * import type { FleetControl } from "@harel/dynamodb/dashboard";
 *
 * const calls: string[] = [];
 * const record = (op: string) => (id: string) => {
 *   calls.push(`${op} ${id}`);
 *   return Promise.resolve({ changed: true, status: "RUNNING" as const });
 * };
 * const fleet: FleetControl = {
 *   suspend: record("suspend"),
 *   resume: record("resume"),
 *   cancel: record("cancel"),
 *   terminate: record("terminate"),
 * };
 * ```
 */
export interface FleetControl {
  /** harel's suspend: a RUNNING execution and its children become SUSPENDED. */
  suspend(id: string): Promise<{ changed: boolean; status: string }>;
  /** harel's resume: a SUSPENDED execution and its children become RUNNING. */
  resume(id: string): Promise<{ changed: boolean; status: string }>;
  /** harel's cancel: cooperative (CANCELLING, a Cancel event) or immediate (CANCELLED). */
  cancel(id: string): Promise<{ changed: boolean; status: string }>;
  /** harel's terminate: CANCELLED at once, with its children (a DONE one too). */
  terminate(id: string): Promise<{ changed: boolean; status: string }>;
}

/**
 * How a dashboard is mounted, who may see it, and what it may do.
 *
 * @example Read-only, on a local machine
 * ```ts
 * import type { DashboardOptions } from "@harel/dynamodb/dashboard";
 *
 * const options: DashboardOptions = { authorize: () => true }; // localhost only: anyone who reaches it
 * ```
 *
 * @example Behind a token, with actions, under /dashboard, on several isolates
 * ```ts
 * import { authorizeToken, type DashboardOptions } from "@harel/dynamodb/dashboard";
 *
 * const token = Deno.env.get("HAREL_DASHBOARD_TOKEN") ?? crypto.randomUUID();
 * const options: DashboardOptions = {
 *   authorize: authorizeToken(token),
 *   challenge: 'Basic realm="harel dashboard", charset="UTF-8"',
 *   basePath: "/dashboard",
 *   actions: true,
 *   secret: token, // the same CSRF key on every isolate
 * };
 * ```
 */
export interface DashboardOptions {
  /**
   * Decides whether a request may see the dashboard: `true` lets it in; anything else is
   * answered 401 (with `challenge`, when set). Required: `authorize: () => true` is the explicit
   * choice for a dashboard only your own machine can reach. It sees every request, POSTs
   * included; `authorizeToken(token)` checks a bearer token or a Basic password.
   */
  authorize: (request: Request) => boolean | Promise<boolean>;
  /**
   * The path the dashboard is mounted at (`"/dashboard"`): its pages are under it, its links
   * start with it, and a request outside it is answered 404. The handler reads the request's
   * full URL, so a router must pass requests on unchanged. `""` or `"/"`: the root.
   * @default {""}
   */
  basePath?: string;
  /**
   * Whether the pages offer actions: retry and drop a dead letter, retry and drop all of a queue
   * or of an outbox target, delete an execution (the destructive ones after a confirmation).
   * Off, the dashboard only reads, and every POST is answered 405.
   * @default {false}
   */
  actions?: boolean;
  /**
   * harel's control plane (a `FleetClient` of `@harel/dynamodb/sqs`): with `actions: true`, each
   * execution's page offers Suspend, Resume, Cancel and Terminate (the last two after a
   * confirmation), behind the same CSRF protection as the other actions.
   * @default {undefined} (no control buttons)
   */
  fleet?: FleetControl;
  /**
   * The `WWW-Authenticate` header of a 401, e.g. `'Basic realm="harel dashboard"'` so that a
   * browser asks for a user name and password. Without it a 401 carries none.
   * @default {undefined}
   */
  challenge?: string;
  /**
   * The key the CSRF tokens are signed with (at least 16 characters). Set the same secret on
   * every isolate or process that serves the dashboard (Deno Deploy runs several): without it
   * each dashboard draws a random key, and a form one isolate rendered is refused by another.
   * @default {a random key per dashboard}
   */
  secret?: string;
  /**
   * The origin browsers load the dashboard from (`"https://ops.example.com"`), which a POST's
   * `Origin` header must equal: set it behind a proxy that changes the request's URL (TLS
   * terminated in front, another host name).
   * @default {the origin of the request's URL}
   */
  origin?: string;
  /**
   * The host names the dashboard answers to (`Host` header): a name, a name and port
   * (`"ops.internal:8443"`: that port only) or `"*.example.com"` (the names below it). Any other
   * request is answered 421 before `authorize` and without reading the store: a page of another
   * site that the browser sends here under its own name (DNS rebinding) gets nothing. `origin`'s
   * host is always taken. Set it behind a proxy or on a real host name.
   * @default {["localhost", "127.0.0.1", "[::1]"] (any port)}
   */
  hosts?: string[];
  /**
   * Executions per page of the listing, and dead letters per page, 1 to 1000.
   * @default {50}
   */
  pageSize?: number;
  /**
   * Called with each error a request ran into (the store failing, `authorize` throwing): the
   * page itself only says that something went wrong, never what, where or how.
   * @default {(error) => console.error("harel dashboard:", error)}
   */
  onError?: (error: unknown, request: Request) => void;
}
