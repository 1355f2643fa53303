// The dead letters of one queue, and (with actions on) the buttons that retry or drop them.
import { type Html, markup } from "./_html.ts";
import {
  actionForm,
  executionLink,
  formatTime,
  href,
  itemLabel,
  kindLabel,
  page,
} from "./_layout.ts";
import { targetOf } from "./_store_calls.ts";
import type {
  DeadLetter,
  OutboxEntry,
  PendingSpawn,
  RelayItem,
  RelayKind,
  Timer,
} from "../core/types.ts";

export interface DeadLettersView {
  basePath: string;
  kind: RelayKind;
  /** Its lowest dead letters (timers: earliest first). */
  letters: DeadLetter<RelayKind>[];
  /** Whether there may be more than these. */
  more: boolean;
  /** The session's CSRF token when actions are on, else null (no buttons). */
  csrf: string | null;
  notice?: string | null;
}

/** The form fields that name one dead letter (a seq, or a timer's execution, path and time). */
export function keyFields(
  kind: RelayKind,
  key: DeadLetter<RelayKind>["key"],
): Record<string, string> {
  if (kind === "timers") {
    const timer = key as Timer;
    return { execution_id: timer.executionId, path: timer.path, fire_at: String(timer.fireAt) };
  }
  return { seq: String(key) };
}

/** A dead letter's key as text: "seq 42", or a timer's "path at time". */
export function keyText(kind: RelayKind, key: DeadLetter<RelayKind>["key"]): string {
  if (kind !== "timers") return `seq ${key}`;
  const timer = key as Timer;
  return `${timer.path} at ${formatTime(timer.fireAt)} (fire_at ${timer.fireAt})`;
}

export function deadLettersPage(view: DeadLettersView): Html {
  const { basePath, kind, csrf } = view;
  const post = (what: string) => href(basePath, ["dead-letters", kind, what]);
  const rows = view.letters.map((letter) => {
    const fields = keyFields(kind, letter.key);
    const buttons = csrf === null
      ? null
      : markup`<td>${actionForm({ action: post("retry"), label: "Retry", fields, csrf })}${
        actionForm({ action: post("drop"), label: "Drop", fields, csrf, danger: true })
      }</td>`;
    return markup`<tr><td class="${kind === "timers" ? "mono" : "mono nowrap"}">${
      keyText(kind, letter.key)
    }</td>${whose(basePath, kind, letter)}<td>${
      what(kind, letter)
    }</td><td>${letter.attempts}</td><td>${formatTime(letter.deadAt)}</td><td>${
      errorText(letter.lastError)
    }</td>${buttons}</tr>`;
  });
  const bulkForms = (fields: Record<string, string>, what: string) => [
    actionForm({
      action: post("retry-all"),
      label: "Retry all",
      fields,
      csrf: csrf!,
      title: `Make every dead ${what} due again`,
    }),
    actionForm({
      action: post("drop-all"),
      label: "Drop all",
      fields,
      csrf: csrf!,
      danger: true,
      title: `Delete every dead ${what} for good`,
    }),
  ];
  const bulk = csrf !== null && view.letters.length
    ? markup`<div class="actions">${bulkForms({}, itemLabel(kind))}</div>`
    : null;
  const actionsHead = csrf === null ? null : markup`<th>Actions</th>`;
  const listing = rows.length
    ? markup`<table class="letters"><thead><tr><th>Key</th>${
      WHOSE[kind].map((name) => markup`<th>${name}</th>`)
    }<th>What</th><th>Attempts</th><th>Dead since</th><th>Last error</th>${actionsHead}</tr></thead>
<tbody>${rows}</tbody></table>`
    : markup`<p class="muted">No dead ${kindLabel(kind)}.</p>`;
  const more = view.more
    ? markup`<p class="muted">These are the ${view.letters.length} lowest; there may be more. Retry or drop these to see the rest.</p>`
    : null;
  const targets = kind === "outbox" && csrf !== null ? outboxTargets(view.letters) : [];
  const byTarget = targets.length
    ? markup`<section aria-labelledby="targets"><h2 id="targets">By target</h2>
<table><thead><tr><th>Target</th><th>Dead entries shown</th><th>Actions</th></tr></thead>
<tbody>${
      targets.map(([target, count]) =>
        markup`<tr><td>${targetText(target)}</td><td>${count}</td><td>${
          bulkForms({ target }, "entry of this target")
        }</td></tr>`
      )
    }</tbody></table></section>`
    : null;
  const holding = kind === "outbox" ? " (holding back the later entries of its target)" : "";
  return page(
    { basePath, title: `Dead ${kindLabel(kind)}`, notice: view.notice },
    markup`<p class="muted">What a relay gave up on after its attempts: kept, and skipped by every pass${holding}, until it is retried (due again, attempts forgotten) or dropped (gone for good).</p>
${bulk}
${listing}
${more}
${byTarget}`,
  );
}

/** The columns that say whose a dead letter is, by queue. */
const WHOSE: Record<RelayKind, string[]> = {
  outbox: ["Source", "Target"],
  spawns: ["Parent", "Child"],
  timers: ["Execution"],
};

/** The {@linkcode WHOSE} cells: the source, linked; the target as text (it may name no execution). */
function whose(basePath: string, kind: RelayKind, letter: DeadLetter<RelayKind>): Html {
  const source = sourceOf(kind, letter);
  const from = source === null
    ? markup`<span class="muted">unknown</span>`
    : executionLink(basePath, source);
  if (kind === "timers") return markup`<td>${from}</td>`;
  const target = targetOf(kind, letter);
  return markup`<td>${from}</td><td>${
    target === null ? markup`<span class="muted">(broadcast)</span>` : targetText(target)
  }</td>`;
}

/** A target id as text, labelled as a target (not a link: it may name no execution). */
function targetText(target: string): Html {
  return markup`<span class="mono" title="target">${target}</span>`;
}

/** The execution a dead letter came from (`sourceId`, else its stored attributes), or null. */
function sourceOf(kind: RelayKind, letter: DeadLetter<RelayKind>): string | null {
  if (letter.sourceId !== undefined) return letter.sourceId;
  const item = letter.item as RelayItem<RelayKind> | null;
  if (item !== null && "parentId" in item) return item.parentId;
  if (item !== null && "executionId" in item) return item.executionId;
  const field = kind === "outbox" ? "source_id" : kind === "spawns" ? "parent_id" : "execution_id";
  const value = letter.raw[field];
  return typeof value === "string" ? value : null;
}

/** The distinct targets (not broadcasts) of the dead outbox entries shown, with their counts. */
function outboxTargets(letters: DeadLetter<RelayKind>[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const letter of letters) {
    const target = targetOf("outbox", letter);
    if (target !== null) counts.set(target, (counts.get(target) ?? 0) + 1);
  }
  return [...counts];
}

/** Why a dead letter's item cannot be shown, or null (outbox: an event's `id` or `kind` bad). */
function unreadableWhy(kind: RelayKind, letter: DeadLetter<RelayKind>): string | null {
  if (letter.item === null) return "";
  if (kind !== "outbox") return null;
  const { event } = letter.item as OutboxEntry;
  for (const field of ["kind", "id"] as const) {
    if (typeof event[field] !== "string") return `its event's ${field} is not a string`;
  }
  return null;
}

/** What the item was: an event, a child to start, a timer; the stored row when unreadable. */
function what(kind: RelayKind, letter: DeadLetter<RelayKind>): Html {
  const why = unreadableWhy(kind, letter);
  if (why !== null) {
    return markup`<span class="dead">unreadable</span>${
      why ? markup` <span class="muted">${why}</span>` : null
    }<details><summary>as stored</summary><pre>${
      JSON.stringify(letter.raw, null, 2)
    }</pre></details>`;
  }
  if (kind === "outbox") {
    const { event } = letter.item as OutboxEntry;
    return markup`<span class="mono">${event.kind}</span> <span class="muted">event ${event.id}</span><details><summary>event</summary><pre>${
      JSON.stringify(event, null, 2)
    }</pre></details>`;
  }
  if (kind === "spawns") {
    const spawn = letter.item as PendingSpawn;
    return markup`start at <span class="mono">${spawn.rootPath}</span>`;
  }
  return markup`timer <span class="mono">${(letter.item as Timer).path}</span>`;
}

/** The last error, its first 200 characters shown and the rest behind a disclosure. */
function errorText(error: string | null): Html | string {
  if (error === null) return "";
  if (error.length <= 200) return markup`<span class="mono">${error}</span>`;
  return markup`<details><summary class="mono">${
    error.slice(0, 200)
  }…</summary><pre>${error}</pre></details>`;
}
