// An execution's outbox on its page, in three sections: pending and waiting entries, dead letters
// (with Retry and Drop), and held entries (with what holds each).
import { type Html, markup } from "./_html.ts";
import { actionForm, executionLink, formatRelative, formatTime, href } from "./_layout.ts";
import type { ExecutionOutbox, OutboxEntryState } from "../core/types.ts";

/** One entry of the page: which way it goes for this execution. */
interface Shown {
  entry: OutboxEntryState;
  /** `emitted`: this execution emitted it; `to`: it is to this execution. */
  way: "emitted" | "to";
}

/** The three sections of an execution's outbox, for its page. */
export function outboxSections(
  basePath: string,
  id: string,
  outbox: ExecutionOutbox,
  csrf: string | null,
  now: number,
): Html {
  const seen = new Set<number>();
  const shown: Shown[] = [];
  for (const [entries, way] of [[outbox.emitted, "emitted"], [outbox.targeting, "to"]] as const) {
    for (const entry of entries) {
      if (seen.has(entry.seq)) continue; // to itself: once, as emitted
      seen.add(entry.seq);
      shown.push({ entry, way });
    }
  }
  shown.sort((a, b) => a.entry.seq - b.entry.seq);
  const dead = new Set(shown.filter((s) => s.entry.state === "dead").map((s) => s.entry.seq));
  const of = (...states: OutboxEntryState["state"][]) =>
    shown.filter((s) => states.includes(s.entry.state));
  const retry = (seq: number, label = "Retry") =>
    csrf === null ? null : actionForm({
      action: href(basePath, ["dead-letters", "outbox", "retry"]),
      label,
      fields: { seq: String(seq) },
      csrf,
      title: `Make outbox entry ${seq} due again`,
    });
  const drop = (seq: number) =>
    csrf === null ? null : actionForm({
      action: href(basePath, ["dead-letters", "outbox", "drop"]),
      label: "Drop",
      fields: { seq: String(seq) },
      csrf,
      danger: true,
      title: `Delete outbox entry ${seq} for good`,
    });
  const way = ({ entry, way }: Shown): Html =>
    way === "to"
      ? markup`from ${
        entry.sourceId === null
          ? markup`<span class="muted">unknown</span>`
          : entry.sourceId === id
          ? markup`itself`
          : executionLink(basePath, entry.sourceId)
      }`
      : markup`to ${
        entry.targetId === null
          ? markup`<span class="muted">(broadcast)</span>`
          : entry.targetId === id
          ? markup`itself`
          : markup`<span class="mono" title="target">${entry.targetId}</span>`
      }`;
  const event = ({ entry }: Shown): Html =>
    entry.event === null
      ? markup`<span class="dead">unreadable</span>`
      : markup`<span class="mono">${entry.event.kind}</span> <span class="muted">event ${entry.event.id}</span>`;
  const error = (e: OutboxEntryState) =>
    e.lastError === null ? "" : markup`<span class="mono">${e.lastError.slice(0, 200)}</span>`;
  const actionsHead = csrf === null ? null : markup`<th>Actions</th>`;
  const table = (head: Html, rows: Html[], empty: string) =>
    rows.length
      ? markup`<table class="outbox"><thead><tr><th>Seq</th><th>Way</th><th>Event</th>${head}</tr></thead>
<tbody>${rows}</tbody></table>`
      : markup`<p class="muted">${empty}</p>`;

  const live = of("pending", "waiting").map((s) =>
    markup`<tr><td class="mono nowrap">seq ${s.entry.seq}</td><td>${way(s)}</td><td>${
      event(s)
    }</td><td>${
      s.entry.state === "waiting"
        ? markup`waiting to retry ${formatRelative(s.entry.retryAt, now)}`
        : markup`pending`
    }</td><td>${s.entry.attempts}</td><td>${error(s.entry)}</td></tr>`
  );
  const letters = of("dead").map((s) =>
    markup`<tr><td class="mono nowrap">seq ${s.entry.seq}</td><td>${way(s)}</td><td>${
      event(s)
    }</td><td>${s.entry.attempts}</td><td>${formatTime(s.entry.deadAt)}</td><td>${
      error(s.entry)
    }</td>${csrf === null ? null : markup`<td>${retry(s.entry.seq)}${drop(s.entry.seq)}</td>`}</tr>`
  );
  const held = of("held").map((s) => {
    const behind = s.entry.heldBehind;
    return markup`<tr><td class="mono nowrap">seq ${s.entry.seq}</td><td>${way(s)}</td><td>${
      event(s)
    }</td><td>${
      behind === null
        ? markup`<span class="muted">being released</span>`
        : dead.has(behind)
        ? markup`dead letter seq ${behind}`
        : markup`seq ${behind}`
    }</td>${
      csrf === null
        ? null
        : markup`<td>${
          behind !== null && dead.has(behind) ? retry(behind, `Retry seq ${behind}`) : null
        }</td>`
    }</tr>`;
  });
  const notes = [
    outbox.emittedPartial
      ? markup`<p class="muted">What it emitted is found through its item's list of the targets it emitted to: that list is not whole (the execution was last written by a Python worker, or is gone, or emitted to more than 100 targets), or there are more than shown, so entries it emitted may be missing here (the <a href="${
        href(basePath, ["dead-letters", "outbox"])
      }">dead outbox entries</a> list every dead one).</p>`
      : null,
    outbox.targetingPartial
      ? markup`<p class="muted">More entries to it failed or are held than shown: these are the lowest.</p>`
      : null,
  ];
  return markup`<section aria-labelledby="outbox"><h2 id="outbox">Outbox entries (${live.length})</h2>
<p class="muted">Entries it emitted that are not delivered yet, and entries to it that failed.</p>
${notes}${
    table(
      markup`<th>State</th><th>Attempts</th><th>Last error</th>`,
      live,
      "No pending or waiting entries.",
    )
  }</section>
<section aria-labelledby="outbox-dead"><h2 id="outbox-dead">Dead letters (${letters.length})</h2>
${
    table(
      markup`<th>Attempts</th><th>Dead since</th><th>Last error</th>${actionsHead}`,
      letters,
      "No dead entries it emitted, nor to it.",
    )
  }</section>
<section aria-labelledby="outbox-held"><h2 id="outbox-held">Held entries (${held.length})</h2>
<p class="muted">Entries that wait behind an earlier entry of their target that failed: they go once it is delivered, retried or dropped.</p>
${
    table(
      markup`<th>Held behind</th>${actionsHead}`,
      held,
      "No entries held behind it or its targets.",
    )
  }</section>`;
}
