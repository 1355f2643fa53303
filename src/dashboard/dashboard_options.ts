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
 */
export interface DashboardOptions {
  /** Whether a request may see it (else 401); `() => true` only where just you can reach it. */
  authorize: (request: Request) => boolean | Promise<boolean>;
  /** The path it is mounted at; a router passes requests on with their URL unchanged. @default {""} */
  basePath?: string;
  /** Whether the pages offer actions (retry, drop, delete); off, every POST is 405. @default {false} */
  actions?: boolean;
  /** harel's control plane: with `actions`, its buttons on each execution's page. @default {undefined} */
  fleet?: FleetControl;
  /** The `WWW-Authenticate` of a 401, e.g. `'Basic realm="harel dashboard"'`. @default {undefined} */
  challenge?: string;
  /**
   * The CSRF tokens' key (16 characters or more): the same on every isolate that serves it.
   * @default {a random key per dashboard}
   */
  secret?: string;
  /** The origin a POST's `Origin` must equal, behind a proxy. @default {the request URL's origin} */
  origin?: string;
  /**
   * The host names it answers to (a name, with a port, or `"*.example.com"`); any other is 421.
   * @default {["localhost", "127.0.0.1", "[::1]"] (any port)}
   */
  hosts?: string[];
  /** Executions per page of the listing, and dead letters per page, 1 to 1000. @default {50} */
  pageSize?: number;
  /**
   * Called with each error a request ran into.
   * @default {(error) => console.error("harel dashboard:", error)}
   */
  onError?: (error: unknown, request: Request) => void;
}
