// An execution's trace and timers a page at a time, and its page when its document is unreadable.
import { type Html, markup } from "./_html.ts";
import { executionLink, href, page } from "./_layout.ts";
import {
  deleteForm,
  olderStepsLink,
  timersSection,
  timersTable,
  traceSection,
  traceStep,
} from "./_execution_page.ts";
import type { ExecutionParts } from "./_store_calls.ts";
import type { TimerState } from "../core/operator_types.ts";

/** The most characters of an unreadable document a page shows. */
export const STORED_TEXT_SHOWN = 100_000;

/** What the page of an execution whose document cannot be read shows. */
export interface UnreadableExecutionView extends ExecutionParts {
  basePath: string;
  id: string;
  /** Why its document cannot be read. */
  reason: string;
  /** Its `data` as stored, or null when it has none. */
  data: string | null;
  now: number;
  /** The session's CSRF token when actions are on, else null (no Delete button). */
  csrf: string | null;
  notice?: string | null;
}

/** The page of an execution whose document cannot be read: what there is, and Delete. */
export function unreadableExecutionPage(view: UnreadableExecutionView): Html {
  const { basePath, id, data } = view;
  const shown = data === null ? null : data.slice(0, STORED_TEXT_SHOWN);
  const cut = data !== null && data.length > STORED_TEXT_SHOWN
    ? markup`<p class="muted">The first ${STORED_TEXT_SHOWN} characters of ${data.length}.</p>`
    : null;
  const actions = view.csrf === null
    ? null
    : markup`<div class="actions">${deleteForm(basePath, id, view.csrf)}</div>`;
  return page(
    { basePath, title: `Execution ${id}`, notice: view.notice },
    markup`<dl class="facts"><dt>Document</dt><dd><span class="dead">unreadable</span>: ${view.reason}</dd></dl>
<p class="muted">Another writer (or a bug) stored this item so that it cannot be read as an execution; the store reads it as it is, and changes nothing.</p>
${actions}
${timersSection(basePath, id, view.timers, view.moreTimers, view.now)}
${traceSection(basePath, id, view.trace, view.moreTrace)}
<section aria-labelledby="document"><h2 id="document">Data as stored</h2>
${
      shown === null
        ? markup`<p class="muted">None.</p>`
        : markup`${cut}<pre>${shown}</pre>`
    }</section>`,
  );
}

/** What a trace page shows: a page of steps, newest below `before`. */
export interface TracePageView {
  basePath: string;
  id: string;
  /** The steps, oldest first, and whether there are older ones. */
  trace: Record<string, unknown>[];
  moreTrace: boolean;
  /** The index the page is below, or null (the newest). */
  before: number | null;
}

/** A page of an execution's trace, with links to the older steps and back to the newest. */
export function tracePageView(view: TracePageView): Html {
  const { basePath, id, trace } = view;
  const newest = view.before === null
    ? null
    : markup`<a href="${href(basePath, ["executions", id, "trace"])}">Newest steps</a> `;
  const listing = trace.length
    ? markup`<ol class="timeline">${trace.map(traceStep)}</ol>`
    : markup`<p class="muted">No ${view.before === null ? "" : "older "}trace steps.</p>`;
  const which = view.before === null ? "the newest" : `before #${view.before}`;
  return page(
    { basePath, title: `Trace of ${id}` },
    markup`<p>${executionLink(basePath, id)}: its trace steps ${which}, oldest first.</p>
${listing}
<p class="pager">${newest}${view.moreTrace ? olderStepsLink(basePath, id, trace) : null}</p>`,
  );
}

/** What a timers page shows: a page of timers by path, after `after`. */
export interface TimersPageView {
  basePath: string;
  id: string;
  /** The timers, by path, and whether more follow. */
  timers: TimerState[];
  moreTimers: boolean;
  /** The path the page starts after, or null (the first). */
  after: string | null;
  now: number;
}

/** A page of an execution's timers by path, with a link to the next. */
export function timersPageView(view: TimersPageView): Html {
  const { basePath, id, timers } = view;
  const first = view.after === null
    ? null
    : markup`<a href="${href(basePath, ["executions", id, "timers"])}">First timers</a> `;
  const last = timers.at(-1)?.path;
  const next = view.moreTimers && last !== undefined
    ? markup`<a rel="next" href="${
      href(basePath, ["executions", id, "timers"], { after: last })
    }">Next timers</a>`
    : null;
  return page(
    { basePath, title: `Timers of ${id}` },
    markup`<p>${executionLink(basePath, id)}: its timers by path${
      view.after === null ? "" : markup`, after <span class="mono">${view.after}</span>`
    }.</p>
${timersTable(basePath, timers, view.now)}
<p class="pager">${first}${next}</p>`,
  );
}
