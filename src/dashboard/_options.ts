// The dashboard's arguments, checked once when it is built: a store with the calls the pages
// make, and options with known names and sound values (a typo names its near miss).
import { checkKnownOptions, describe } from "../core/_validate.ts";
import type { ExecutionStore } from "../core/types.ts";
import type { DashboardOptions, FleetControl } from "./dashboard_options.ts";
import { checkHosts, CsrfTokens, type HostRule } from "./_guards.ts";

/** Checked options, with their defaults. */
export interface Settings {
  authorize: (request: Request) => boolean | Promise<boolean>;
  basePath: string;
  actions: boolean;
  fleet: FleetControl | null;
  challenge: string | null;
  origin: string | null;
  hosts: HostRule[];
  pageSize: number;
  onError: (error: unknown, request: Request) => void;
  tokens: CsrfTokens;
}

const NAMES = [
  "authorize",
  "basePath",
  "actions",
  "fleet",
  "challenge",
  "secret",
  "origin",
  "hosts",
  "pageSize",
  "onError",
] as const satisfies readonly (keyof DashboardOptions)[];

/** The store calls the pages and actions make. */
const CALLS = [
  "listExecutions",
  "backlog",
  "inspectExecution",
  "readTrace",
  "readTimers",
  "deadLetters",
  "retryDeadLetter",
  "dropDeadLetter",
  "retryDeadLetters",
  "dropDeadLetters",
  "deleteExecution",
] as const satisfies readonly (keyof ExecutionStore)[];

/** The control plane's calls the execution page's buttons make. */
export const CONTROL_CALLS = [
  "suspend",
  "resume",
  "cancel",
  "terminate",
] as const satisfies readonly (keyof FleetControl)[];

/** A base path's segment: URL path characters, percent-escapes included, never `.` or `..`. */
const SEGMENT = /^[A-Za-z0-9._~!$&'()*+,;=:@%-]+$/;

/** Checks the store and options; throws a TypeError or RangeError saying what is wrong. */
export function checkSettings(store: ExecutionStore, options: DashboardOptions): Settings {
  if (typeof store !== "object" || store === null) {
    throw new TypeError(`dashboard needs an ExecutionStore, got ${describe(store)}`);
  }
  for (const call of CALLS) {
    if (typeof (store as unknown as Record<string, unknown>)[call] !== "function") {
      throw new TypeError(`dashboard needs an ExecutionStore: the store has no ${call}() method`);
    }
  }
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      "dashboard needs options with authorize(request): a function that says who may see it " +
        `(authorize: () => true on a machine only you can reach), got ${describe(options)}`,
    );
  }
  checkKnownOptions("dashboard()", options, NAMES);
  const {
    authorize,
    basePath = "",
    actions = false,
    fleet,
    challenge,
    secret,
    origin,
    hosts,
    pageSize = 50,
    onError = (error: unknown) => console.error("harel dashboard:", error),
  } = options;
  if (typeof authorize !== "function") {
    throw new TypeError(
      "dashboard needs authorize(request), a function that says who may see it; " +
        `got ${describe(authorize)}. Check a token (authorize: authorizeToken(token)) or, on a ` +
        "machine only you can reach, let everyone in (authorize: () => true)",
    );
  }
  if (typeof actions !== "boolean") {
    throw new TypeError(`actions must be true or false, got ${describe(actions)}`);
  }
  for (const op of CONTROL_CALLS) {
    if (
      fleet !== undefined &&
      typeof (fleet as unknown as Record<string, unknown>)?.[op] !== "function"
    ) {
      throw new TypeError(
        `fleet must be a FleetClient (of @harel/dynamodb/sqs): it has no ${op}() method`,
      );
    }
  }
  if (challenge !== undefined && (typeof challenge !== "string" || /[\r\n]/.test(challenge))) {
    throw new TypeError(`challenge must be one line of text, got ${describe(challenge)}`);
  }
  if (secret !== undefined && (typeof secret !== "string" || secret.length < 16)) {
    throw new TypeError(
      `secret must be a string of at least 16 characters, got ${describe(secret)}`,
    );
  }
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
    throw new RangeError(`pageSize must be an integer from 1 to 1000, got ${describe(pageSize)}`);
  }
  if (typeof onError !== "function") {
    throw new TypeError(`onError must be a function, got ${describe(onError)}`);
  }
  const checkedOrigin = origin === undefined ? null : checkOrigin(origin);
  return {
    authorize,
    basePath: checkBasePath(basePath),
    actions,
    fleet: fleet ?? null,
    challenge: challenge ?? null,
    origin: checkedOrigin,
    hosts: checkHosts(hosts, checkedOrigin),
    pageSize,
    onError,
    tokens: new CsrfTokens(secret),
  };
}

/** `""`, or `/a/b` without a trailing slash (`"/"` and `"/a/"` are taken as `""` and `"/a"`). */
function checkBasePath(basePath: unknown): string {
  if (typeof basePath !== "string") {
    throw new TypeError(`basePath must be a string like "/dashboard", got ${describe(basePath)}`);
  }
  const path = basePath.endsWith("/") ? basePath.slice(0, -1) : basePath;
  const segments = path.split("/").slice(1);
  const sound = path === "" ||
    (path.startsWith("/") &&
      segments.every((segment) => SEGMENT.test(segment) && segment !== "." && segment !== ".."));
  if (!sound) {
    throw new TypeError(
      `basePath must be "" or a path like "/dashboard" (no query, no empty, "." or ".." ` +
        `segments, spaces percent-encoded), got ${describe(basePath)}`,
    );
  }
  return path;
}

function checkOrigin(origin: unknown): string {
  let parsed: URL | null = null;
  try {
    parsed = typeof origin === "string" ? new URL(origin) : null;
  } catch {
    parsed = null;
  }
  if (parsed === null || parsed.origin !== origin) {
    throw new TypeError(
      `origin must be a scheme, host and port only, like "https://ops.example.com", got ${
        describe(origin)
      }`,
    );
  }
  return origin;
}
