// The first page: the relay's backlog per queue, then the executions, filtered and paged.
import { type Html, markup } from "./_html.ts";
import {
  executionLink,
  fieldText,
  formatAge,
  formatCount,
  formatRelative,
  formatTime,
  href,
  kindLabel,
  page,
  statusBadge,
} from "./_layout.ts";
import { STATUSES } from "../core/documents.ts";
import {
  examineBudget,
  type ExecutionFilters,
  type ExecutionsPage,
  OPEN_STATUSES,
  type QueueBacklog,
  statusesOf,
} from "./_store_calls.ts";

export interface ExecutionsView {
  basePath: string;
  filters: ExecutionFilters;
  page: ExecutionsPage;
  /** How many rows a full page has: a shorter one with a next page stopped at its budget. */
  pageSize?: number;
  /** Whether this is a later page (a cursor was given). */
  later: boolean;
  backlog: QueueBacklog[];
  /** Now, in epoch seconds. */
  now: number;
  notice?: string | null;
}

/** What the `before` field takes. */
const BEFORE_HINT = "A date (2026-11-01, midnight UTC), a time with its offset " +
  "(2026-11-01T12:00Z, 2026-11-01T14:00+02:00) or epoch seconds";

/** The query of a listing's links: its filters as they were given. */
function queryOf(filters: ExecutionFilters): Record<string, string | string[] | null> {
  return {
    status: filters.status === "open" ? null : filters.status,
    definition: filters.definition,
    before: filters.before?.text ?? null,
  };
}

export function executionsPage(view: ExecutionsView): Html {
  const { basePath, filters, now } = view;
  const query = queryOf(filters);
  const filtered = filters.status !== "open" || filters.definition !== null ||
    filters.before !== null;
  const cards = view.backlog.map((queue) => backlogCard(basePath, queue, now));
  const chosen = (status: string) =>
    Array.isArray(filters.status) && filters.status.includes(status as never);
  const options = STATUSES.map((status) =>
    chosen(status)
      ? markup`<option selected>${status}</option>`
      : markup`<option>${status}</option>`
  );
  const any = filters.status === "any"
    ? markup`<option value="any" selected>any (the table's order)</option>`
    : markup`<option value="any">any (the table's order)</option>`;
  const clear = filtered ? markup` <a href="${href(basePath, [])}">Clear</a>` : null;
  const rows = view.page.items.map((s) => {
    const parent = s.parent_id === null
      ? markup`<span class="muted">root</span>`
      : typeof s.parent_id === "string"
      ? executionLink(basePath, s.parent_id)
      : fieldText(s.parent_id);
    const updated = s.updated_at === null
      ? markup`<td class="muted nowrap" title="last committed by another writer: time not known">—</td>`
      : markup`<td class="nowrap" title="${formatTime(s.updated_at)}">${
        formatRelative(s.updated_at, now)
      }</td>`;
    return markup`<tr><td>${executionLink(basePath, s.id)}</td><td>${
      fieldText(s.definition_id)
    }</td><td>${statusBadge(s.status)}</td>${updated}<td>${
      fieldText(s.outcome)
    }</td><td class="mono">${fieldText(s.active_path)}</td><td>${
      fieldText(s.version)
    }</td><td>${parent}</td></tr>`;
  });
  // Rows another writer stored so that they cannot be read: the key and why, the page as usual.
  for (const row of view.page.unreadable ?? []) {
    rows.push(
      markup`<tr class="unreadable"><td>${
        executionLink(basePath, row.id)
      }</td><td colspan="7"><span class="dead">unreadable</span> <span class="muted">${row.error}</span></td></tr>`,
    );
  }
  const empty = view.later
    ? "No more executions."
    : filtered
    ? "No execution matches."
    : "No open executions.";
  const shown = view.page.items.length + (view.page.unreadable?.length ?? 0);
  const short = view.pageSize !== undefined && shown < view.pageSize &&
    view.page.nextCursor !== null;
  const listing = rows.length
    ? markup`<table><thead><tr><th>Id</th><th>Definition</th><th>Status</th><th>Updated</th><th>Outcome</th><th>Active path</th><th>Version</th><th>Parent</th></tr></thead>
<tbody>${rows}</tbody></table>`
    : short
    ? null
    : markup`<p class="muted">${empty}</p>`;
  // A filter few executions match: the page stopped after its budget of rows, not at the end.
  const budget = short
    ? markup`<p class="muted" id="budget">${
      shown === 0 ? "No match" : `Only ${shown} ${shown === 1 ? "match" : "matches"}`
    } in the ${
      examineBudget(view.pageSize!)
    } stored rows this page read (a page reads at most that many): Next page reads on, or narrow the filter.</p>`
    : null;
  const first = view.later ? markup`<a href="${href(basePath, [], query)}">First page</a>` : null;
  const next = view.page.nextCursor
    ? markup`<a rel="next" href="${
      href(basePath, [], { ...query, cursor: view.page.nextCursor })
    }">Next page</a>`
    : null;
  const before = filters.status === "any"
    ? null
    : markup`<label>Not committed since <input name="before" value="${
      filters.before?.text ?? ""
    }" placeholder="2026-11-01T12:00Z" title="${BEFORE_HINT}" maxlength="40"></label>`;
  return page(
    { basePath, title: "Executions", notice: view.notice },
    markup`<section aria-labelledby="backlog"><h2 id="backlog">Relay backlog</h2>
<div class="cards">${cards}</div></section>
<section aria-labelledby="list"><h2 id="list">Executions</h2>
<form class="filters" method="get" action="${href(basePath, [])}">
<label>Status <select name="status"><option value="">open</option>${options}${any}</select></label>
<label>Definition <input name="definition" value="${
      filters.definition ?? ""
    }" maxlength="1024"></label>
${before}<button type="submit">Filter</button>${clear}</form>
<p class="muted" id="order">${orderText(filters)}</p>
${listing}
${budget}
<p class="pager">${first}${next}</p></section>`,
  );
}

/** What the listing holds and in which order, in a sentence. */
function orderText(filters: ExecutionFilters): string {
  const statuses = statusesOf(filters);
  if (statuses === null) {
    return "Every execution, in the table's order (not by time), those other writers committed " +
      "last included, at once.";
  }
  const which = filters.status === "open"
    ? `Open executions (${OPEN_STATUSES.join(", ")})`
    : `${statuses.join(", ")} executions`;
  const before = filters.before === null
    ? ""
    : `, last committed before ${formatTime(filters.before.seconds)}`;
  return `${which}${before}, the latest to enter their status first. One whose last commit another writer made ` +
    "(the Python store) is listed once the store's status feed has put it back in the status " +
    "index (within about 10 seconds; only a store built with otherWriters: true does): status any " +
    "lists it at once.";
}

/** How each queue's pending items are named, and what its lag measures. */
const WORDS: Record<QueueBacklog["kind"], { pending: string; lag: string }> = {
  outbox: { pending: "pending", lag: "since the oldest pending entry's commit" },
  spawns: { pending: "pending", lag: "since the oldest pending spawn's commit" },
  timers: { pending: "due", lag: "since the earliest due timer was due" },
};

function backlogCard(basePath: string, queue: QueueBacklog, now: number): Html {
  const dead = queue.dead.n > 0
    ? markup`<a class="dead" href="${href(basePath, ["dead-letters", queue.kind])}">${
      formatCount(queue.dead)
    }</a>`
    : "0";
  const words = WORDS[queue.kind];
  const lag = queue.oldestAt === null ? "—" : formatAge(now - queue.oldestAt);
  const held = queue.kind === "outbox"
    ? markup`<dt>held targets</dt><dd>${formatCount(queue.heldTargets)}</dd>`
    : null;
  const name = kindLabel(queue.kind);
  return markup`<div class="card"><h3>${name.charAt(0).toUpperCase()}${name.slice(1)}</h3><dl>
<dt>${words.pending}</dt><dd>${formatCount(queue.pending)}</dd>
<dt>waiting to retry</dt><dd>${formatCount(queue.waiting)}</dd>
<dt>dead letters</dt><dd>${dead}</dd>
${held}<dt title="${words.lag}">relay lag</dt><dd>${lag}</dd></dl></div>`;
}
