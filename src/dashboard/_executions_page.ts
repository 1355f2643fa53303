// The first page: the executions, filtered and paged, under a summary of the relay's backlog.
import { type Html, markup } from "./_html.ts";
import {
  executionLink,
  formatAge,
  formatCount,
  href,
  kindLabel,
  page,
  statusBadge,
} from "./_layout.ts";
import { STATUSES } from "../core/documents.ts";
import type { ExecutionFilters, ExecutionsPage, QueueBacklog } from "./_store_calls.ts";

/** What the executions page shows. */
export interface ExecutionsView {
  /** Where the dashboard is mounted. */
  basePath: string;
  /** The filters of this listing. */
  filters: ExecutionFilters;
  /** The page of executions. */
  page: ExecutionsPage;
  /** Whether this is a later page (a cursor was given). */
  later: boolean;
  /** The backlog of each queue. */
  backlog: QueueBacklog[];
  /** Now, in epoch seconds (ages are measured from it). */
  now: number;
  /** An action's outcome, or none. */
  notice?: string | null;
}

/** The executions page. */
export function executionsPage(view: ExecutionsView): Html {
  const { basePath, filters } = view;
  const query = { status: filters.statuses, definition: filters.definition };
  const filtered = filters.statuses.length > 0 || filters.definition !== null;
  const cards = view.backlog.map((queue) => backlogCard(basePath, queue, view.now));
  const options = STATUSES.map((status) =>
    filters.statuses.includes(status)
      ? markup`<option selected>${status}</option>`
      : markup`<option>${status}</option>`
  );
  const clear = filtered ? markup` <a href="${href(basePath, [])}">Clear</a>` : null;
  const rows = view.page.items.map((s) => {
    const parent = s.parent_id === null
      ? markup`<span class="muted">root</span>`
      : executionLink(basePath, s.parent_id);
    return markup`<tr><td>${executionLink(basePath, s.id)}</td><td>${s.definition_id}</td><td>${
      statusBadge(s.status)
    }</td><td>${s.outcome ?? ""}</td><td class="mono">${
      s.active_path ?? ""
    }</td><td>${s.version}</td><td>${parent}</td></tr>`;
  });
  const empty = view.later
    ? "No more executions."
    : filtered
    ? "No execution matches."
    : "No executions yet.";
  const listing = rows.length
    ? markup`<table><thead><tr><th>Id</th><th>Definition</th><th>Status</th><th>Outcome</th><th>Active path</th><th>Version</th><th>Parent</th></tr></thead>
<tbody>${rows}</tbody></table>`
    : markup`<p class="muted">${empty}</p>`;
  const first = view.later ? markup`<a href="${href(basePath, [], query)}">First page</a>` : null;
  const next = view.page.nextCursor
    ? markup`<a rel="next" href="${
      href(basePath, [], { ...query, cursor: view.page.nextCursor })
    }">Next page</a>`
    : null;
  return page(
    { basePath, title: "Executions", notice: view.notice },
    markup`<section aria-labelledby="backlog"><h2 id="backlog">Relay backlog</h2>
<div class="cards">${cards}</div></section>
<section aria-labelledby="list"><h2 id="list">Executions</h2>
<form class="filters" method="get" action="${href(basePath, [])}">
<label>Status <select name="status"><option value="">any</option>${options}</select></label>
<label>Definition <input name="definition" value="${
      filters.definition ?? ""
    }" maxlength="1024"></label>
<button type="submit">Filter</button>${clear}</form>
${listing}
<p class="pager">${first}${next}</p>
<p class="muted">In the store's listing order, not by time.</p></section>`,
  );
}

/** What each queue's age measures (see `backlog`): the relay's lag, as far as the reads tell. */
const OLDEST: Record<QueueBacklog["kind"], string> = {
  outbox: "oldest ready entry",
  spawns: "oldest pending spawn",
  timers: "oldest due timer",
};

function backlogCard(basePath: string, queue: QueueBacklog, now: number): Html {
  const dead = queue.dead.n > 0
    ? markup`<a class="dead" href="${href(basePath, ["dead-letters", queue.kind])}">${
      formatCount(queue.dead)
    }</a>`
    : "0";
  const oldest = OLDEST[queue.kind];
  const age = queue.oldestAt === null ? "—" : formatAge(now - queue.oldestAt);
  const name = kindLabel(queue.kind);
  return markup`<div class="card"><h3>${name.charAt(0).toUpperCase()}${name.slice(1)}</h3><dl>
<dt>ready to deliver</dt><dd>${formatCount(queue.ready)}</dd>
<dt>dead letters</dt><dd>${dead}</dd>
<dt>${oldest}</dt><dd>${age}</dd></dl></div>`;
}
