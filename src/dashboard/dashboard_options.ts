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
   * Decides whether a request may see the dashboard; anything but `true` is answered 401.
   * Required: `() => true` is the explicit choice for a dashboard only your machine can reach.
   */
  authorize: (request: Request) => boolean | Promise<boolean>;
  /**
   * The path the dashboard is mounted at (`"/dashboard"`); a router must pass requests on with
   * their URL unchanged. `""` or `"/"`: the root.
   * @default {""}
   */
  basePath?: string;
  /**
   * Whether the pages offer actions (retry and drop dead letters, delete an execution); off, the
   * dashboard only reads and every POST is answered 405.
   * @default {false}
   */
  actions?: boolean;
  /**
   * harel's control plane: with `actions: true`, each execution's page offers Suspend, Resume,
   * Cancel and Terminate.
   * @default {undefined} (no control buttons)
   */
  fleet?: FleetControl;
  /**
   * The `WWW-Authenticate` header of a 401, e.g. `'Basic realm="harel dashboard"'`.
   * @default {undefined}
   */
  challenge?: string;
  /**
   * The key the CSRF tokens are signed with (at least 16 characters): the same on every isolate
   * that serves the dashboard, or a form one rendered is refused by another.
   * @default {a random key per dashboard}
   */
  secret?: string;
  /**
   * The origin browsers load the dashboard from, which a POST's `Origin` must equal: set it
   * behind a proxy that changes the request's URL.
   * @default {the origin of the request's URL}
   */
  origin?: string;
  /**
   * The host names the dashboard answers to: a name, a name and port, or `"*.example.com"`. Any
   * other `Host` is answered 421 before anything else (no DNS rebinding).
   * @default {["localhost", "127.0.0.1", "[::1]"] (any port)}
   */
  hosts?: string[];
  /** Executions per page of the listing, and dead letters per page, 1 to 1000. @default {50} */
  pageSize?: number;
  /**
   * Called with each error a request ran into; the page itself only says something went wrong.
   * @default {(error) => console.error("harel dashboard:", error)}
   */
  onError?: (error: unknown, request: Request) => void;
}
