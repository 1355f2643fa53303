// One execution's page: its facts, timers with their relay state, trace, outbox and document.
import { type Html, markup } from "./_html.ts";
import {
  actionForm,
  executionLink,
  fieldText,
  formatAge,
  formatRelative,
  formatTime,
  href,
  page,
  statusBadge,
} from "./_layout.ts";
import type { Execution } from "../core/documents.ts";
import type { TimerState } from "../core/operator_types.ts";
import { byFireAt } from "../core/_bounded.ts";
import type { ExecutionOutbox } from "../core/types.ts";
import { outboxSections } from "./_execution_outbox.ts";

export interface ExecutionView {
  basePath: string;
  /** The item's key the page was opened with: what its actions act on. @default {its id} */
  id?: string;
  execution: Execution;
  /** When this module last committed it (epoch seconds), or null: not known. */
  updatedAt: number | null;
  /** When it expires (epoch seconds), or null: never. */
  expiresAt: number | null;
  /** Its first timers by path, and whether there are more. */
  timers: TimerState[];
  moreTimers?: boolean;
  /** Its newest trace steps, oldest first, and whether there are older. */
  trace: Record<string, unknown>[];
  moreTrace?: boolean;
  outbox?: ExecutionOutbox;
  /** Now, in epoch seconds. */
  now: number;
  /** The session's CSRF token when actions are on, else null (no buttons). */
  csrf: string | null;
  /** Whether the page offers harel's control plane (the dashboard has a fleet). */
  controls?: boolean;
  notice?: string | null;
}

export function executionPage(view: ExecutionView): Html {
  const { basePath, execution: exe } = view;
  const id = view.id ?? String(exe.id);
  const text = fieldText;
  const link = (other: unknown) =>
    typeof other === "string" ? executionLink(basePath, other) : text(other);
  const facts: [string, Html | string | null][] = [
    [
      "Document id",
      exe.id === id ? null : markup`${text(exe.id)} <span class="dead">(not the item's key)</span>`,
    ],
    ["Definition", text(exe.definition_id)],
    ["Status", statusBadge(exe.status)],
    ["Outcome", text(exe.outcome)],
    ["Error", text(exe.error)],
    ["Active path", text(exe.active_path)],
    ["Root path", text(exe.root_path)],
    ["Version", text(exe.version)],
    ["Last committed", when(view.updatedAt, view.now, "not known (another writer's commit)")],
    ["Expires", when(view.expiresAt, view.now, "never")],
    ["Events processed", text(exe.processed_events)],
    ["Priority", text(exe.priority)],
    ["Parent", link(exe.parent_id)],
    ["Child", link(exe.child_id)],
  ];
  const shown = facts.filter(([, value]) => value !== null && value !== "")
    .map(([name, value]) => markup`<dt>${name}</dt><dd>${value}</dd>`);
  const csrf = view.csrf;
  const control = (op: string, label: string, title: string, danger = false) =>
    csrf === null ? null : actionForm({
      action: href(basePath, ["executions", id, op]),
      label,
      fields: {},
      csrf,
      danger,
      title,
    });
  const open = exe.status !== "CANCELLED" && exe.status !== "DONE";
  const controls = view.controls && [
    exe.status === "RUNNING" &&
    control("suspend", "Suspend", "Suspend it and its children: workers hold their events"),
    exe.status === "SUSPENDED" && control("resume", "Resume", "Resume it and its children"),
    open && control(
      "cancel",
      "Cancel",
      "Cancel it: with a cancel handler its machine's Cancel transition runs, else CANCELLED at once",
      true,
    ),
    exe.status === "DONE"
      ? control(
        "terminate",
        "Terminate (DONE becomes CANCELLED)",
        "It is DONE: terminating makes it and its children CANCELLED, as harel's terminate does",
        true,
      )
      : open &&
        control("terminate", "Terminate", "Make it and its children CANCELLED at once", true),
  ];
  const actions = view.csrf === null
    ? null
    : markup`<div class="actions">${controls}${deleteForm(basePath, id, view.csrf)}</div>`;
  return page(
    { basePath, title: `Execution ${id}`, notice: view.notice },
    markup`<dl class="facts">${shown}</dl>
${actions}
${timersSection(basePath, id, view.timers, view.moreTimers === true, view.now)}
${view.outbox === undefined ? null : outboxSections(basePath, id, view.outbox, view.csrf, view.now)}
${traceSection(basePath, id, view.trace, view.moreTrace === true)}
<section aria-labelledby="document"><h2 id="document">Document</h2>
<pre>${JSON.stringify(exe, null, 2)}</pre></section>`,
  );
}

/** The timers section of an execution's page, earliest first, and a link when it has more. */
export function timersSection(
  basePath: string,
  id: string,
  timers: TimerState[],
  more: boolean,
  now: number,
): Html {
  const all = markup`<p class="pager"><a href="${
    href(basePath, ["executions", id, "timers"])
  }">All timers, by path</a></p>`;
  const title = more
    ? `Timers (the first ${timers.length} by path of more)`
    : `Timers (${timers.length})`;
  return markup`<section aria-labelledby="timers"><h2 id="timers">${title}</h2>
${timersTable(basePath, timers.toSorted(byFireAt), now)}${more ? all : null}</section>`;
}

/** The trace section of an execution's page: the newest steps, and a link when there are older. */
export function traceSection(
  basePath: string,
  id: string,
  trace: Record<string, unknown>[],
  more: boolean,
): Html {
  const steps = trace.length === 1 ? "1 step" : `${trace.length} steps`;
  const older = more ? olderStepsLink(basePath, id, trace) : null;
  const timeline = trace.length
    ? markup`<ol class="timeline">${trace.map(traceStep)}</ol>${older}`
    : markup`<p class="muted">No trace steps: this execution was committed without tracing, or its steps were trimmed.</p>`;
  const title = more
    ? `Trace (the newest ${steps}, oldest first)`
    : `Trace (${steps}, oldest first)`;
  return markup`<section aria-labelledby="trace"><h2 id="trace">${title}</h2>
${timeline}</section>`;
}

/** A link to the trace page of the steps before the oldest of `trace`. */
export function olderStepsLink(
  basePath: string,
  id: string,
  trace: Record<string, unknown>[],
): Html | null {
  const oldest = trace[0]?.index;
  if (typeof oldest !== "number" || !Number.isSafeInteger(oldest)) return null;
  return markup`<p class="pager"><a rel="prev" href="${
    href(basePath, ["executions", id, "trace"], { before: String(oldest) })
  }">Older steps</a></p>`;
}

/** A time and how far it is from now, or what its absence means. */
function when(at: number | null, now: number, otherwise: string): Html {
  if (at === null) return markup`<span class="muted">${otherwise}</span>`;
  return markup`${formatTime(at)} <span class="muted">(${formatRelative(at, now)})</span>`;
}

/** The timers: path, when each fires, and where the relay is with it. */
export function timersTable(basePath: string, timers: TimerState[], now: number): Html {
  if (timers.length === 0) return markup`<p class="muted">No timers armed.</p>`;
  const rows = timers.map((timer) =>
    markup`<tr><td class="mono">${timer.path}</td><td class="nowrap">${formatTime(timer.fireAt)}
<span class="muted">(${formatRelative(timer.fireAt, now)})</span></td><td>${
      timerState(basePath, timer, now)
    }</td><td>${timer.attempts}</td><td>${
      timer.lastError === null ? "" : markup`<span class="mono">${timer.lastError}</span>`
    }</td></tr>`
  );
  return markup`<table class="timers"><thead><tr><th>Path</th><th>Fires at</th><th>State</th><th>Attempts</th><th>Last error</th></tr></thead>
<tbody>${rows}</tbody></table>`;
}

/** A timer's relay state: dead (linking its queue), waiting for a retry, due (how late), armed. */
function timerState(basePath: string, timer: TimerState, now: number): Html {
  if (timer.deadAt !== null) {
    return markup`<a class="dead" href="${
      href(basePath, ["dead-letters", "timers"])
    }">dead</a> since ${formatTime(timer.deadAt)}`;
  }
  if (timer.retryAt !== null && timer.retryAt > now) {
    return markup`waiting to retry ${formatRelative(timer.retryAt, now)}`;
  }
  if (timer.fireAt <= now) return markup`due, ${formatAge(now - timer.fireAt)} late`;
  return markup`armed`;
}

/** One step of the timeline: its index, event, transition and time, and the step in full. */
export function traceStep(step: Record<string, unknown>): Html {
  const shown = (value: unknown) =>
    typeof value === "string" || typeof value === "number" ? String(value) : null;
  const event = shown(step.event) ?? shown(step.kind) ?? "step";
  const from = shown(step.from);
  const to = shown(step.to);
  const move = to !== null
    ? markup` <span class="mono">${from ?? "(start)"} → ${to}</span>`
    : from !== null
    ? markup` <span class="muted">from</span> <span class="mono">${from}</span>`
    : null;
  return markup`<li><span class="muted">#${
    shown(step.index) ?? "?"
  }</span> <span class="step">${event}</span>${move}${
    stepTime(step)
  }<details><summary>the step as stored</summary><pre>${
    JSON.stringify(step, null, 2)
  }</pre></details></li>`;
}

/** The fields a trace step's time may be in, as engines write it: the first present is shown. */
const STEP_TIME_FIELDS = ["at", "time", "timestamp"] as const;

/** A step's time in UTC: ISO 8601 (no offset: UTC, as Python writes it) or epoch seconds or ms. */
function stepTime(step: Record<string, unknown>): Html | null {
  const value = STEP_TIME_FIELDS.map((name) => step[name]).find((v) => v !== undefined);
  if (typeof value !== "string" && typeof value !== "number") return null;
  const naive = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?$/;
  const ms = typeof value === "number"
    ? (Math.abs(value) > 1e11 ? value : value * 1000)
    : Date.parse(naive.test(value) ? `${value.replace(" ", "T")}Z` : value);
  const date = new Date(ms);
  if (!Number.isFinite(ms) || Number.isNaN(date.getTime())) {
    return markup` <span class="muted">${String(value)}</span>`;
  }
  return markup` <span class="muted"><time datetime="${date.toISOString()}">${
    formatTime(ms / 1000)
  }</time></span>`;
}

/** The Delete button of an execution's page (of item key `id`). */
export function deleteForm(basePath: string, id: string, csrf: string): Html {
  return actionForm({
    action: href(basePath, ["executions", id, "delete"]),
    label: "Delete",
    fields: {},
    csrf,
    danger: true,
    title: "Delete this execution with its timers, trace and dedupe marks",
  });
}
