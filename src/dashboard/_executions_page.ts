// The first page: the executions, filtered and paged, under a summary of the relay's backlog.
import { type Html, html } from "./_html.ts";
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
  const query = {
    status: filters.statuses,
    definition: filters.definition,
  };
  const rows = view.page.items.map((s) =>
    html`
      <tr>
        <td>${executionLink(basePath, s.id)}</td>
        <td>${s.definition_id}</td>
        <td>${statusBadge(s.status)}</td>
        <td>${s.outcome ?? ""}</td>
        <td class="mono">${s.active_path ?? ""}</td>
        <td>${s.version}</td>
        <td>${s.parent_id === null
          ? html`<span class="muted">root</span>`
          : executionLink(basePath, s.parent_id)}</td>
      </tr>
    `
  );
  const filtered = filters.statuses.length > 0 || filters.definition !== null;
  return page(
    { basePath, title: "Executions", notice: view.notice },
    html`
      <section aria-labelledby="backlog">
        <h2 id="backlog">Relay backlog</h2>
        <div class="cards">${view.backlog.map((queue) =>
          backlogCard(basePath, queue, view.now)
        )}</div>
      </section>
      <section aria-labelledby="list"><h2 id="list">Executions</h2>
      <form class="filters" method="get" action="${href(basePath, [])}">
      <label>Status <select name="status"><option value="">any</option>${STATUSES.map((status) =>
        html`<option${
          filters.statuses.includes(status)
            ? html`
              selected
            `
            : null
        }>${status}</option>`
      )}</select></label>
      <label>Definition <input name="definition" value="${filters.definition ??
        ""}" maxlength="1024"></label>
      <button type="submit">Filter</button>${filtered
        ? html`
          <a href="${href(basePath, [])}">Clear</a>
        `
        : null}</form>
      ${rows.length
        ? html`
          <table>
            <thead>
              <tr>
                <th>Id</th>
                <th>Definition</th>
                <th>Status</th>
                <th>Outcome</th>
                <th>Active path</th>
                <th>Version</th>
                <th>Parent</th>
              </tr>
            </thead>
            <tbody>${rows}</tbody>
          </table>
        `
        : html`<p class="muted">${
          view.later
            ? "No more executions."
            : filtered
            ? "No execution matches."
            : "No executions yet."
        }</p>`}
      <p class="pager">${view.later
        ? html`<a href="${href(basePath, [], query)}">First page</a>`
        : null}${view.page.nextCursor
        ? html`<a rel="next" href="${
          href(basePath, [], { ...query, cursor: view.page.nextCursor })
        }">Next page</a>`
        : null}</p>
      <p class="muted">In the store's listing order, not by time.</p></section>
    `,
  );
}

function backlogCard(basePath: string, queue: QueueBacklog, now: number): Html {
  const dead = queue.dead.n > 0;
  return html`
    <div class="card">
      <h3>${capitalized(kindLabel(queue.kind))}</h3>
      <dl>
        <dt>ready to deliver</dt>
        <dd>${formatCount(queue.ready)}</dd>
        <dt>dead letters</dt>
        <dd>${dead
          ? html`<a class="dead" href="${href(basePath, ["dead-letters", queue.kind])}">${
            formatCount(queue.dead)
          }</a>`
          : "0"}</dd>
        <dt>${queue.kind === "timers" ? "oldest due for" : "oldest waiting for"}</dt>
        <dd>${queue.oldestAt === null ? "—" : formatAge(now - queue.oldestAt)}</dd>
      </dl>
    </div>
  `;
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
