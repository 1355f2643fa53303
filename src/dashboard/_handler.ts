// The dashboard's request side: routes, parameters, the session and the checks every request passes.
import type { Html } from "./_html.ts";
import { KINDS, segmentValue } from "./_layout.ts";
import { messagePage } from "./_message_page.ts";
import { executionsPage } from "./_executions_page.ts";
import { executionPage } from "./_execution_page.ts";
import { timersPageView, tracePageView, unreadableExecutionPage } from "./_execution_parts_page.ts";
import { deadLettersPage } from "./_dead_letters_page.ts";
import { confirmPage } from "./_confirm_page.ts";
import {
  fromSameOrigin,
  newSession,
  securityHeaders,
  sessionCookie,
  sessionOf,
  toOwnHost,
} from "./_guards.ts";
import {
  type Action,
  BadAction,
  confirmation,
  controlAction,
  type ControlOp,
  DEAD_LETTER_OPS,
  deadLetterAction,
  deleteAction,
  destructive,
  NOTICE_PARAMS,
  noticeOf,
  runAction,
} from "./_actions.ts";
import {
  backlog,
  deadLetterPage,
  executionDetail,
  type ExecutionFilters,
  executionsPage as readPage,
  timerPage,
  tracePage,
} from "./_store_calls.ts";
import { CONTROL_CALLS, type Settings } from "./_options.ts";
import { checkKey, LIMITS } from "../core/_validate.ts";
import { parseTimeText } from "../core/_time_text.ts";
import { type Status, STATUSES } from "../core/documents.ts";
import type { ExecutionStore, RelayKind } from "../core/types.ts";

/** The longest URL answered (a longer one is 414). */
export const MAX_URL_LENGTH = 8192;
/** The largest form body taken (a larger one is 413). */
export const MAX_FORM_BYTES = 16 * 1024;

type DeadLetterOp = typeof DEAD_LETTER_OPS[number];
type Route =
  | { page: "executions" }
  | { page: "execution"; id: string }
  | { page: "trace"; id: string }
  | { page: "timers"; id: string }
  | { page: "dead-letters"; kind: RelayKind }
  | { action: "delete"; id: string }
  | { action: ControlOp; id: string }
  | { action: DeadLetterOp; kind: RelayKind };

/** A request answered with a fixed page: a status, a title and a text (nothing of the store). */
class Refusal extends Error {
  override name = "Refusal";
  constructor(
    readonly status: number,
    readonly title: string,
    readonly text: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(`${status} ${title}`);
  }
}

const bad = (text: string) => new Refusal(400, "Bad request", text);

const FORGED =
  "Nothing was done: this form did not come from this dashboard's own page in this browser " +
  "session (or the session has ended). Reload the page and try again.";

/** The request handler of a dashboard over `store` with checked settings. */
export function createHandler(
  store: ExecutionStore,
  settings: Settings,
): (request: Request) => Promise<Response> {
  const { basePath } = settings;

  async function respond(
    request: Request,
    status: number,
    body: Html | null,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    return new Response(request.method === "HEAD" || body === null ? null : body.toString(), {
      status,
      headers: {
        ...await securityHeaders(),
        ...(body === null ? {} : { "content-type": "text/html; charset=utf-8" }),
        ...headers,
      },
    });
  }

  async function handle(request: Request): Promise<Response> {
    if (request.url.length > MAX_URL_LENGTH) {
      throw new Refusal(
        414,
        "Address too long",
        "This address is longer than the dashboard reads.",
      );
    }
    if (!toOwnHost(request, settings.hosts)) {
      throw new Refusal(
        421,
        "Misdirected request",
        "This dashboard answers only to its own host names (its hosts option).",
      );
    }
    const url = new URL(request.url);
    const path = url.pathname;
    if (path !== basePath && !path.startsWith(`${basePath}/`)) {
      throw new Refusal(404, "Not found", "There is no such page.");
    }
    if ((await settings.authorize(request)) !== true) {
      throw new Refusal(
        401,
        "Sign-in needed",
        "This dashboard needs you to sign in.",
        settings.challenge === null ? {} : { "www-authenticate": settings.challenge },
      );
    }
    const allowed = settings.actions ? "GET, HEAD, POST" : "GET, HEAD";
    const method = request.method;
    if (method !== "GET" && method !== "HEAD" && method !== "POST") {
      throw new Refusal(405, "Method not allowed", `The dashboard answers ${allowed} only.`, {
        allow: allowed,
      });
    }
    if (method === "POST" && !settings.actions) {
      throw new Refusal(
        405,
        "Method not allowed",
        "This dashboard only reads: its actions are off.",
        {
          allow: allowed,
        },
      );
    }
    const route = routeOf(path.slice(basePath.length));
    if (route === null || ("action" in route && !settings.actions)) {
      throw new Refusal(404, "Not found", "There is no such page.");
    }
    if ("page" in route && method === "POST") {
      throw new Refusal(405, "Method not allowed", "This page only shows; its buttons post.", {
        allow: "GET, HEAD",
      });
    }
    if ("action" in route && method !== "POST") {
      throw new Refusal(405, "Method not allowed", "An action is taken with its button only.", {
        allow: "POST",
      });
    }
    const origin = settings.origin ?? url.origin;
    if ("action" in route) return await act(request, route, origin);

    // A page. With actions on, its forms carry the token of this browser's session.
    let csrf: string | null = null;
    const headers: Record<string, string> = {};
    if (settings.actions) {
      let session = sessionOf(request);
      if (session === null) {
        session = newSession();
        headers["set-cookie"] = sessionCookie(
          session,
          basePath || "/",
          origin.startsWith("https:"),
        );
      }
      csrf = await settings.tokens.tokenFor(session);
    }
    const body = await render(route, url.searchParams, csrf, request.signal);
    return await respond(request, body.status, body.html, headers);
  }

  async function render(
    route: Extract<Route, { page: unknown }>,
    query: URLSearchParams,
    csrf: string | null,
    signal: AbortSignal,
  ): Promise<{ status: number; html: Html }> {
    const ok = (html: Html) => ({ status: 200, html });
    const notice = noticeOf(query);
    if (route.page === "executions") {
      onlyParams(query, ["status", "definition", "before", "cursor", ...NOTICE_PARAMS]);
      const filters = listingFilters(query);
      const cursor = atMostOne(query, "cursor");
      const [page, queues] = await Promise.all([
        readPage(store, filters, { limit: settings.pageSize, cursor, signal }).catch(staleCursor),
        backlog(store, signal),
      ]);
      return ok(executionsPage({
        basePath,
        filters,
        page,
        pageSize: settings.pageSize,
        later: cursor !== null,
        backlog: queues,
        now: Date.now() / 1000,
        notice,
      }));
    }
    if (route.page === "execution") {
      onlyParams(query, NOTICE_PARAMS);
      const id = validKey(route.id, "an execution id");
      const detail = await executionDetail(store, id);
      if (detail === null) {
        return {
          status: 404,
          html: messagePage(basePath, "No such execution", `There is no execution ${id}.`),
        };
      }
      const { inspection, unreadable, ...parts } = detail;
      const now = Date.now() / 1000;
      if (unreadable !== null) {
        const { reason, data } = unreadable;
        return ok(unreadableExecutionPage({
          basePath,
          id,
          reason,
          data,
          ...parts,
          now,
          csrf,
          notice,
        }));
      }
      return ok(executionPage({
        basePath,
        id,
        ...inspection,
        ...parts,
        now,
        csrf,
        notice,
        controls: settings.fleet !== null,
      }));
    }
    if (route.page === "trace") {
      onlyParams(query, ["before"]);
      const id = validKey(route.id, "an execution id");
      const before = traceIndex(atMostOne(query, "before"));
      const { trace, moreTrace } = await tracePage(store, id, before);
      return ok(tracePageView({ basePath, id, trace, moreTrace, before }));
    }
    if (route.page === "timers") {
      onlyParams(query, ["after"]);
      const id = validKey(route.id, "an execution id");
      const afterText = atMostOne(query, "after");
      const after = afterText === null ? null : validPath(afterText);
      const { timers, moreTimers } = await timerPage(store, id, after);
      return ok(
        timersPageView({ basePath, id, timers, moreTimers, after, now: Date.now() / 1000 }),
      );
    }
    onlyParams(query, NOTICE_PARAMS);
    const { letters, more } = await deadLetterPage(store, route.kind, settings.pageSize);
    return ok(deadLettersPage({ basePath, kind: route.kind, letters, more, csrf, notice }));
  }

  async function act(
    request: Request,
    route: Extract<Route, { action: unknown }>,
    origin: string,
  ): Promise<Response> {
    if (!fromSameOrigin(request, origin)) throw new Refusal(403, "Refused", FORGED);
    const type = request.headers.get("content-type") ?? "";
    if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) {
      throw new Refusal(
        415,
        "Unsupported form",
        "Actions are posted by the dashboard's forms only.",
      );
    }
    const form = new URLSearchParams(await readForm(request));
    const session = sessionOf(request);
    const tokens = form.getAll("csrf");
    if (
      session === null || tokens.length !== 1 ||
      !(await settings.tokens.verify(session, tokens[0]!))
    ) {
      throw new Refusal(403, "Refused", FORGED);
    }
    if ("id" in route && route.action !== "delete" && settings.fleet === null) {
      throw new Refusal(404, "Not found", "This dashboard has no control plane (no fleet).");
    }
    let action: Action;
    try {
      action = route.action === "delete"
        ? deleteAction(route.id)
        : "id" in route
        ? controlAction(route.action, route.id)
        : deadLetterAction(route.kind, route.action, form);
    } catch (error) {
      if (error instanceof BadAction) throw bad(`${error.message}.`);
      throw error;
    }
    const confirmed = form.getAll("confirm");
    if (destructive(action) && !(confirmed.length === 1 && confirmed[0] === "yes")) {
      const ask = confirmation(basePath, action);
      return await respond(
        request,
        200,
        confirmPage({
          basePath,
          title: ask.title,
          question: ask.question,
          action: ask.path,
          fields: ask.fields,
          label: ask.label,
          csrf: tokens[0]!,
          back: ask.back,
        }),
      );
    }
    const location = await runAction(store, basePath, action, request.signal, settings.fleet);
    return await respond(request, 303, null, { location });
  }

  return async (request: Request): Promise<Response> => {
    try {
      return await handle(request);
    } catch (error) {
      if (error instanceof Refusal) {
        return await respond(
          request,
          error.status,
          messagePage(basePath, error.title, error.text),
          error.headers,
        );
      }
      if (request.signal.aborted) {
        // The browser went away and the reads stopped: nobody reads this, and nothing failed.
        return await respond(request, 503, null);
      }
      try {
        settings.onError(error, request);
      } catch {
        // An error handler that throws must not turn a generic page into a stack trace.
      }
      return await respond(
        request,
        500,
        messagePage(
          basePath,
          "Something went wrong",
          "The dashboard could not answer this request. What happened was logged for the operator.",
        ),
      );
    }
  };
}

/** The route of a path below the base path, or null; each segment decoded once (`pathSegment`). */
function routeOf(rest: string): Route | null {
  if (rest === "" || rest === "/") return { page: "executions" };
  let parts: string[];
  try {
    parts = rest.split("/").slice(1).map(decodeURIComponent);
  } catch {
    throw bad("The address is not valid percent-encoded UTF-8.");
  }
  if (parts.some((part) => part === "")) return null;
  const [section, segment, op, ...extra] = parts;
  if (extra.length) return null;
  if (section === "executions" && segment !== undefined) {
    const name = segmentValue(segment);
    if (op === undefined) return { page: "execution", id: name };
    if (op === "trace") return { page: "trace", id: name };
    if (op === "timers") return { page: "timers", id: name };
    if (op === "delete") return { action: "delete", id: name };
    return (CONTROL_CALLS as readonly string[]).includes(op)
      ? { action: op as ControlOp, id: name }
      : null;
  }
  if (section === "dead-letters" && KINDS.includes(segment as RelayKind)) {
    const kind = segment as RelayKind;
    if (op === undefined) return { page: "dead-letters", kind };
    return (DEAD_LETTER_OPS as readonly string[]).includes(op)
      ? { action: op as DeadLetterOp, kind }
      : null;
  }
  return null;
}

/** Refuses a query parameter the page does not take (a filter it cannot apply must not be ignored). */
function onlyParams(query: URLSearchParams, names: readonly string[]): void {
  for (const name of query.keys()) {
    if (!names.includes(name)) {
      const shown = name.length > 40 ? `${name.slice(0, 40)}…` : name;
      throw bad(
        `This page takes no parameter "${shown}"${
          names.length ? `; it takes ${names.join(", ")}` : ""
        }.`,
      );
    }
  }
}

/** A parameter given at most once; empty counts as absent. */
function atMostOne(query: URLSearchParams, name: string): string | null {
  const values = query.getAll(name);
  if (values.length > 1) throw bad(`Give ${name} once.`);
  return values[0] ? values[0] : null;
}

/** The listing's filters: `status` (repeatable, or `any`), `definition`, `before`. */
function listingFilters(query: URLSearchParams): ExecutionFilters {
  const given = query.getAll("status").filter((status) => status !== "");
  for (const status of given) {
    if (status !== "any" && !(STATUSES as readonly string[]).includes(status)) {
      throw bad(`status must be one of ${STATUSES.join(", ")}, or any.`);
    }
  }
  if (given.includes("any") && given.length > 1) {
    throw bad("status any stands alone: give it, or statuses.");
  }
  if (new Set(given).size !== given.length) {
    throw bad("Give each status once.");
  }
  const status = given.length === 0 ? "open" : given[0] === "any" ? "any" : given as Status[];
  const definition = atMostOne(query, "definition");
  const beforeText = atMostOne(query, "before");
  let before: ExecutionFilters["before"] = null;
  if (beforeText !== null) {
    if (status === "any") {
      throw bad(
        "before needs a status (the status index orders by the last commit); with status any " +
          "the listing is in the table's order.",
      );
    }
    try {
      before = { text: beforeText, seconds: parseTimeText("before", beforeText) };
    } catch (error) {
      if (error instanceof RangeError) throw bad(`${error.message}.`);
      throw error;
    }
  }
  return { status, definition, before };
}

/** An id from the address as the store takes it, else 400. */
function validKey(value: string, what: string): string {
  try {
    return checkKey("id", value, LIMITS.partitionKeyBytes);
  } catch {
    throw bad(`That is not ${what}.`);
  }
}

/** A trace page's `before`: a step's index (an integer), else 400. */
function traceIndex(text: string | null): number | null {
  if (text === null) return null;
  const index = Number(text);
  if (!/^-?[0-9]{1,16}$/.test(text) || !Number.isSafeInteger(index)) {
    throw bad("before must be a trace step's index (an integer).");
  }
  return index;
}

/** A timers page's `after`: a timer's path as the store takes it, else 400. */
function validPath(value: string): string {
  try {
    return checkKey("after", value, LIMITS.sortKeyBytes);
  } catch {
    throw bad("after must be a timer's path.");
  }
}

/** A cursor the store refuses is a stale or edited link: 400, not a failure. */
function staleCursor(error: unknown): never {
  if ((error as Error | null)?.name === "InvalidCursor") {
    throw bad(
      "That page link is no longer valid (its cursor was changed or belongs to another listing). Start from the first page.",
    );
  }
  throw error;
}

/** The body of a POST, at most `MAX_FORM_BYTES` (else 413), as text. */
async function readForm(request: Request): Promise<string> {
  const tooLarge = () =>
    new Refusal(
      413,
      "Form too large",
      "The dashboard's forms are small; this one is not one of them.",
    );
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > MAX_FORM_BYTES) throw tooLarge();
  if (request.body === null) return "";
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  for await (const chunk of request.body) {
    size += chunk.byteLength;
    if (size > MAX_FORM_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return await new Blob(chunks).text();
}
