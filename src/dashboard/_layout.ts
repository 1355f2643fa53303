// The frame every page shares, and the pages' links, POST forms and formatting rules.
import { type Fragment, Html, markup } from "./_html.ts";
import { STYLESHEET } from "./_style.ts";
import type { RelayKind } from "../core/types.ts";
import { STATUSES } from "../core/documents.ts";

/** The three dead-letter queues, in the order the pages show them. */
export const KINDS: readonly RelayKind[] = ["outbox", "spawns", "timers"];

/** What the frame of a page needs. */
export interface Frame {
  basePath: string;
  /** The page's title (also its `<h1>`). */
  title: string;
  /** A one-line message above the content (an action's outcome), or none. */
  notice?: string | null;
}

/** A whole page: doctype, head with the stylesheet, navigation, title and content. */
export function page(frame: Frame, body: Fragment): Html {
  const base = frame.basePath;
  const nav = KINDS.map((kind) =>
    markup`<a href="${href(base, ["dead-letters", kind])}">Dead ${kindLabel(kind)}</a>`
  );
  const notice = frame.notice ? markup`<p class="notice" role="status">${frame.notice}</p>` : null;
  return markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${frame.title} · harel dashboard</title>
<style>${Html.trusted(STYLESHEET)}</style>
</head>
<body>
<header><strong>harel</strong><nav><a href="${href(base, [])}">Executions</a>${nav}</nav></header>
<main>
<h1>${frame.title}</h1>
${notice}
${body}
</main>
</body>
</html>
`;
}

/**
 * A link inside the dashboard: the base path, each segment percent-encoded by
 * {@linkcode pathSegment}, then the query. Segments must be well-formed Unicode.
 */
export function href(
  basePath: string,
  segments: string[],
  query?: Record<string, string | string[] | null | undefined>,
): string {
  const path = `${basePath}/${segments.map(pathSegment).join("/")}`;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    for (const one of [value ?? []].flat()) params.append(name, one);
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

/**
 * A value as one path segment, percent-encoded, with `~` put before `.`, `..` and a leading `~`:
 * URL parsers drop `.` and `..` segments, even encoded. {@linkcode segmentValue} undoes it.
 */
export function pathSegment(value: string): string {
  const escaped = value === "." || value === ".." || value.startsWith("~") ? `~${value}` : value;
  return encodeURIComponent(escaped);
}

/** The value of a decoded path segment that {@linkcode pathSegment} wrote: one leading `~` off. */
export function segmentValue(segment: string): string {
  return segment.startsWith("~") ? segment.slice(1) : segment;
}

/** A queue's name in a sentence: "outbox entries", "spawns", "timers". */
export function kindLabel(kind: RelayKind): string {
  return kind === "outbox" ? "outbox entries" : kind;
}

/** One item of a queue in a sentence: "outbox entry", "spawn", "timer". */
export function itemLabel(kind: RelayKind): string {
  return kind === "outbox" ? "outbox entry" : kind.slice(0, -1);
}

/** Epoch seconds as a UTC time, "2025-01-31 12:00:05 UTC"; "—" when unknown or not a time. */
export function formatTime(seconds: number | null | undefined): string {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return "—";
  const date = new Date(seconds * 1000);
  if (Number.isNaN(date.getTime())) return "—";
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** A duration in seconds, rounded for a person: "45 s", "12 min", "3 h", "2 d"; "—" when unknown. */
export function formatAge(seconds: number | null | undefined): string {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return "—";
  const s = Math.max(0, seconds);
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** A time relative to now, for a person: "5 min ago", "in 2 h"; "—" when unknown. */
export function formatRelative(at: number | null | undefined, now: number): string {
  if (typeof at !== "number" || !Number.isFinite(at)) return "—";
  return at <= now ? `${formatAge(now - at)} ago` : `in ${formatAge(at - now)}`;
}

/** A count read with a cap: "12", or "100+" when the read stopped at its cap. */
export function formatCount(count: { n: number; capped: boolean }): string {
  return count.capped ? `${count.n}+` : String(count.n);
}

/** A status as a badge; a status another writer invented is shown as text, unstyled. */
export function statusBadge(status: unknown): Html {
  const text = typeof status === "string" ? status : JSON.stringify(status) ?? "?";
  const known = (STATUSES as readonly string[]).includes(text);
  return markup`<span class="${
    known ? `status status-${text.toLowerCase()}` : "status"
  }">${text}</span>`;
}

/** An execution id as a link to its page; one with a lone surrogate shows as JSON, unlinked. */
export function executionLink(basePath: string, id: string): Html {
  if (!id.isWellFormed()) {
    return markup`<span class="mono" title="not valid Unicode: no page can be addressed">${
      JSON.stringify(id)
    }</span>`;
  }
  return markup`<a class="mono" href="${href(basePath, ["executions", id])}">${id}</a>`;
}

/** A stored field as page text: strings and numbers as they are, null as nothing, else JSON. */
export function fieldText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  return JSON.stringify(value) ?? String(value);
}

export interface ActionButton {
  /** Where the form posts, its button's label, and the fields that say what to act on. */
  action: string;
  label: string;
  fields: Record<string, string>;
  csrf: string;
  /** Styled as destructive. @default {false} */
  danger?: boolean;
  /** What the button does, for a screen reader or a tooltip. @default {undefined} */
  title?: string;
}

/** A `<form method="post">` with the token, the fields as hidden inputs, and one button. */
export function actionForm(button: ActionButton): Html {
  const fields = Object.entries(button.fields).map(([name, value]) =>
    markup`<input type="hidden" name="${name}" value="${value}">`
  );
  const danger = button.danger ? markup` class="danger"` : null;
  const title = button.title ? markup` title="${button.title}"` : null;
  return markup`<form class="inline" method="post" action="${button.action}"><input type="hidden" name="csrf" value="${button.csrf}">${fields}<button type="submit"${danger}${title}>${button.label}</button></form>`;
}
