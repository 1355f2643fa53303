// The dashboard's pages as pure functions of what they show: no store, no browser, no
// permissions. What a browser makes of them is tests/dashboard/browser_test.ts.
import assert from "node:assert/strict";
import { executionsPage } from "../../src/dashboard/_executions_page.ts";
import { executionPage } from "../../src/dashboard/_execution_page.ts";
import { deadLettersPage } from "../../src/dashboard/_dead_letters_page.ts";
import { confirmPage } from "../../src/dashboard/_confirm_page.ts";
import { messagePage } from "../../src/dashboard/_message_page.ts";
import { formatAge, formatRelative, formatTime, href } from "../../src/dashboard/_layout.ts";
import type { ExecutionFilters, QueueBacklog } from "../../src/dashboard/_store_calls.ts";
import {
  type DeadLetter,
  type ExecutionSummary,
  newEvent,
  newExecution,
  type RelayKind,
} from "../../src/testing.ts";
import type { TimerState } from "../../mod.ts";

const SCRIPT = `<script>alert("pwned")</script>`;
const ESCAPED = "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;";

const NONE = { n: 0, capped: false };
const QUIET: QueueBacklog[] = (["outbox", "spawns", "timers"] as const).map((kind) => ({
  kind,
  pending: NONE,
  waiting: NONE,
  dead: NONE,
  heldTargets: NONE,
  oldestAt: null,
}));
const OPEN: ExecutionFilters = { status: "open", definition: null, before: null };
/** What an execution page shows beside the document and trace, when there is nothing to say. */
const NO_FACTS = { updatedAt: null, expiresAt: null, timers: [], now: 0 };

function summary(overrides: Partial<ExecutionSummary> = {}): ExecutionSummary {
  return {
    id: "e1",
    definition_id: "order",
    status: "RUNNING",
    outcome: null,
    active_path: "order.shipping",
    version: 2,
    parent_id: null,
    updated_at: null,
    ...overrides,
  };
}

/** Every form of a page: where it posts, its fields, its button. */
function forms(page: string): { action: string; fields: Record<string, string>; button: string }[] {
  return [...page.matchAll(/<form class="inline" method="post" action="([^"]*)">(.*?)<\/form>/g)]
    .map(([, action, inner]) => ({
      action: action!,
      fields: Object.fromEntries(
        [...inner!.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)].map((
          [, name, value],
        ) => [name!, value!]),
      ),
      button: inner!.match(/<button[^>]*>([^<]*)<\/button>/)![1]!,
    }));
}

/** What no page may hold under the dashboard's CSP: scripts, event handlers, inline styles. */
function assertNoScriptOrInlineStyle(page: string): void {
  assert.doesNotMatch(page, /<script/i);
  assert.doesNotMatch(page, /\son[a-z]+\s*=/i);
  assert.doesNotMatch(page, /\sstyle\s*=/i);
  assert.doesNotMatch(page, /javascript:/i);
}

Deno.test("the executions page lists each execution with a link to it, its status and its parent", () => {
  const page = executionsPage({
    basePath: "/ops",
    filters: OPEN,
    page: {
      items: [summary(), summary({ id: "e/2", status: "DONE", outcome: "ok", parent_id: "e1" })],
      nextCursor: null,
    },
    later: false,
    backlog: QUIET,
    now: 1000,
  }).toString();
  assert.match(page, /<a class="mono" href="\/ops\/executions\/e1">e1<\/a>/);
  assert.match(page, /href="\/ops\/executions\/e%2F2">e\/2<\/a>/, "an id is one path segment");
  assert.match(page, /<span class="status status-done">DONE<\/span>/);
  assert.match(page, /<span class="muted">root<\/span>/);
  assert.doesNotMatch(page, /Next page|First page/);
  assertNoScriptOrInlineStyle(page);
});

Deno.test("the executions page escapes what other writers stored: id, definition, status, outcome, path", () => {
  const page = executionsPage({
    basePath: "",
    filters: { status: "open", definition: SCRIPT, before: { text: SCRIPT, seconds: 0 } },
    page: {
      items: [summary({
        id: SCRIPT,
        definition_id: SCRIPT,
        status: SCRIPT as never,
        outcome: SCRIPT,
        active_path: SCRIPT,
        parent_id: SCRIPT,
      })],
      nextCursor: SCRIPT,
    },
    later: false,
    backlog: QUIET,
    now: 0,
  }).toString();
  assertNoScriptOrInlineStyle(page);
  assert.ok(page.split(ESCAPED).length > 7, "each stored field shows, escaped");
  assert.match(page, /<span class="status">&lt;script/, "an unknown status is plain text");
});

Deno.test("the executions page links the next page with the filters and the cursor, and a later page links the first", () => {
  const page = executionsPage({
    basePath: "",
    filters: {
      status: ["RUNNING", "FAILED"],
      definition: "order v2",
      before: { text: "2026-11-01", seconds: 1_793_491_200 },
    },
    page: { items: [summary()], nextCursor: "abc_-" },
    later: true,
    backlog: QUIET,
    now: 0,
  }).toString();
  const query = "status=RUNNING&amp;status=FAILED&amp;definition=order\\+v2&amp;before=2026-11-01";
  assert.match(
    page,
    new RegExp(`<a rel="next" href="/\\?${query}&amp;cursor=abc_-">Next page</a>`),
  );
  assert.match(page, new RegExp(`<a href="/\\?${query}">First page</a>`));
  assert.match(page, /<option selected>RUNNING<\/option>/);
  assert.match(page, /<option selected>FAILED<\/option>/);
  assert.match(page, /<input name="definition" value="order v2"/);
  assert.match(page, /<input name="before" value="2026-11-01"/);
  assert.match(
    page,
    /RUNNING, FAILED executions, last committed before 2026-11-01 00:00:00 UTC, the latest to enter their status first\./,
  );
});

Deno.test("by default the executions page lists the open ones newest first, and its links leave the status out", () => {
  const page = executionsPage({
    basePath: "",
    filters: OPEN,
    page: { items: [summary()], nextCursor: "c" },
    later: false,
    backlog: QUIET,
    now: 0,
  }).toString();
  assert.match(
    page,
    /Open executions \(PENDING, RUNNING, SUSPENDED, CANCELLING\), the latest to enter their status first\./,
  );
  assert.match(page, /<a rel="next" href="\/\?cursor=c">/);
  assert.match(page, /<option value="">open<\/option>/);
  assert.match(page, /<input name="before" value=""/);
  assert.doesNotMatch(page, /Clear/);
});

Deno.test("with status any the executions page says the order is the table's, and offers no before", () => {
  const page = executionsPage({
    basePath: "",
    filters: { status: "any", definition: null, before: null },
    page: { items: [summary({ updated_at: null })], nextCursor: "c" },
    later: false,
    backlog: QUIET,
    now: 0,
  }).toString();
  assert.match(page, /Every execution, in the table&#39;s order \(not by time\)/);
  assert.match(page, /<option value="any" selected>/);
  assert.match(page, /<a rel="next" href="\/\?status=any&amp;cursor=c">/);
  assert.doesNotMatch(page, /name="before"/);
  assert.match(page, /<a href="\/">Clear<\/a>/);
});

Deno.test("each execution shows when it was last committed, relative to now, with the time in full on hover", () => {
  const now = 1_700_000_000;
  const page = executionsPage({
    basePath: "",
    filters: OPEN,
    page: {
      items: [summary({ updated_at: now - 720 }), summary({ id: "e2", updated_at: null })],
      nextCursor: null,
    },
    later: false,
    backlog: QUIET,
    now,
  }).toString();
  assert.match(page, /<th>Status<\/th><th>Updated<\/th>/);
  assert.match(page, /<td class="nowrap" title="2023-11-14 22:01:20 UTC">12 min ago<\/td>/);
  assert.match(page, /<td class="muted nowrap" title="[^"]*not known">—<\/td>/);
});

Deno.test("the backlog summary shows each queue's pending, waiting, dead, held targets and relay lag, N+ when capped", () => {
  const count = (n: number, capped = false) => ({ n, capped });
  const page = executionsPage({
    basePath: "",
    filters: OPEN,
    page: { items: [], nextCursor: null },
    later: false,
    backlog: [
      {
        kind: "outbox",
        pending: count(100, true),
        waiting: count(4),
        dead: count(3),
        heldTargets: count(2),
        oldestAt: 1000 - 600,
      },
      {
        kind: "spawns",
        pending: count(2),
        waiting: NONE,
        dead: NONE,
        heldTargets: NONE,
        oldestAt: null,
      },
      {
        kind: "timers",
        pending: count(1),
        waiting: NONE,
        dead: count(100, true),
        heldTargets: NONE,
        oldestAt: 1000 - 7200,
      },
    ],
    now: 1000,
  }).toString();
  const cards = page.split('<div class="card">').slice(1);
  assert.equal(cards.length, 3);
  assert.match(cards[0]!, /<dt>pending<\/dt><dd>100\+<\/dd>/);
  assert.match(cards[0]!, /<dt>waiting to retry<\/dt><dd>4<\/dd>/);
  assert.match(cards[0]!, /<a class="dead" href="\/dead-letters\/outbox">3<\/a>/);
  assert.match(cards[0]!, /<dt>held targets<\/dt><dd>2<\/dd>/);
  assert.match(cards[0]!, /relay lag<\/dt><dd>10 min<\/dd>/);
  assert.doesNotMatch(cards[1]!, /held targets/, "only outbox entries wait behind a target");
  assert.match(cards[1]!, /<dt>dead letters<\/dt><dd>0<\/dd>/);
  assert.match(cards[1]!, /relay lag<\/dt><dd>—<\/dd>/);
  assert.match(cards[2]!, /<dt>due<\/dt><dd>1<\/dd>/);
  assert.match(cards[2]!, /<a class="dead" href="\/dead-letters\/timers">100\+<\/a>/);
  assert.match(cards[2]!, /relay lag<\/dt><dd>2 h<\/dd>/);
  assert.match(page, /No open executions\./);
});

Deno.test("the execution page shows its facts, its trace as a timeline in order, and its document", () => {
  const exe = newExecution({
    id: "e1",
    definition_id: "order",
    status: "FAILED",
    error: "label refused",
    parent_id: "p1",
    active_path: "order.shipping",
  });
  const page = executionPage({
    basePath: "/ops",
    execution: exe,
    ...NO_FACTS,
    trace: [
      { index: 4, event: "start", to: "order.awaiting_payment" },
      { index: 5, event: "payment.received", from: "order.awaiting_payment", to: "order.shipping" },
    ],
    csrf: null,
  }).toString();
  assert.match(page, /<h1>Execution e1<\/h1>/);
  assert.match(page, /<dt>Error<\/dt><dd>label refused<\/dd>/);
  assert.match(page, /<dt>Parent<\/dt><dd><a class="mono" href="\/ops\/executions\/p1">p1<\/a>/);
  const steps = [
    ...page.matchAll(/<li><span class="muted">#(\d+)<\/span> <span class="step">([^<]*)/g),
  ]
    .map(([, index, event]) => `${index} ${event}`);
  assert.deepEqual(steps, ["4 start", "5 payment.received"]);
  assert.match(page, /order\.awaiting_payment → order\.shipping/);
  assert.match(page, /&quot;definition_id&quot;: &quot;order&quot;/, "the document, as JSON");
  assert.deepEqual(forms(page), [], "no buttons without actions");
  assertNoScriptOrInlineStyle(page);
});

Deno.test("the execution page says when it was last committed and when it expires, and lists its timers with their relay state", () => {
  const now = 1_700_000_000;
  const timer = (path: string, fireAt: number, state: Partial<TimerState> = {}): TimerState => ({
    executionId: "e1",
    path,
    fireAt,
    attempts: 0,
    retryAt: null,
    deadAt: null,
    lastError: null,
    ...state,
  });
  const page = executionPage({
    basePath: "/ops",
    execution: newExecution({ id: "e1", definition_id: "order", status: "DONE" }),
    updatedAt: now - 300,
    expiresAt: now + 2 * 86_400,
    timers: [
      timer("order.reminder", now - 3600, {
        attempts: 10,
        deadAt: now - 1800,
        lastError: `mailer said ${SCRIPT}`,
      }),
      timer("order.retry", now - 120, { attempts: 2, retryAt: now + 60, lastError: "busy" }),
      timer("order.late", now - 45),
      timer(SCRIPT, now + 7200),
    ],
    trace: [],
    now,
    csrf: null,
  }).toString();
  assertNoScriptOrInlineStyle(page);
  assert.match(
    page,
    /<dt>Last committed<\/dt><dd>2023-11-14 22:08:20 UTC <span class="muted">\(5 min ago\)<\/span>/,
  );
  assert.match(page, /<dt>Expires<\/dt><dd>2023-11-16 22:13:20 UTC <span class="muted">\(in 2 d\)/);
  assert.match(page, /<h2 id="timers">Timers \(4\)<\/h2>/);
  const states = [...page.matchAll(/<\/span><\/td><td>(.*?)<\/td><td>(\d+)<\/td>/g)].map((m) =>
    `${m[1]!.replace(/<[^>]+>/g, "")} (${m[2]})`
  );
  assert.deepEqual(states, [
    "dead since 2023-11-14 21:43:20 UTC (10)",
    "waiting to retry in 60 s (2)",
    "due, 45 s late (0)",
    "armed (0)",
  ]);
  assert.match(page, /<a class="dead" href="\/ops\/dead-letters\/timers">dead<\/a>/);
  assert.ok(page.includes(`<span class="mono">mailer said ${ESCAPED}</span>`));
  assert.ok(page.includes(`<td class="mono">${ESCAPED}</td>`), "a stored path shows as text");
});

Deno.test("an execution with no timers and no known commit time says so, and that it never expires", () => {
  const page = executionPage({
    basePath: "",
    execution: newExecution({ id: "e1", definition_id: "d" }),
    ...NO_FACTS,
    trace: [],
    csrf: null,
  }).toString();
  assert.match(page, /<dt>Last committed<\/dt><dd><span class="muted">not known/);
  assert.match(page, /<dt>Expires<\/dt><dd><span class="muted">never<\/span>/);
  assert.match(page, /No timers armed\./);
});

Deno.test("the execution page escapes the document and every trace step", () => {
  const exe = newExecution({ id: SCRIPT, definition_id: SCRIPT, context: { note: SCRIPT } });
  const page = executionPage({
    basePath: "",
    execution: exe,
    ...NO_FACTS,
    trace: [{ index: 0, event: SCRIPT, from: SCRIPT, to: SCRIPT, detail: SCRIPT }],
    csrf: "token",
  }).toString();
  assertNoScriptOrInlineStyle(page);
  assert.ok(page.includes(ESCAPED));
  assert.ok(page.includes("&lt;script&gt;alert(\\&quot;pwned\\&quot;)"), "inside the JSON too");
});

Deno.test("a long trace shows the newest steps it is given, and links the steps before the oldest", () => {
  const trace = Array.from({ length: 50 }, (_, i) => ({ index: 650 + i, event: `e${650 + i}` }));
  const page = executionPage({
    basePath: "",
    id: "e1",
    execution: newExecution({ id: "e1", definition_id: "d" }),
    ...NO_FACTS,
    trace,
    moreTrace: true,
    csrf: null,
  }).toString();
  assert.match(page, /Trace \(the newest 50 steps, oldest first\)/);
  const shown = [...page.matchAll(/<span class="step">e(\d+)<\/span>/g)].map((m) => Number(m[1]));
  assert.deepEqual([shown.length, shown[0], shown.at(-1)], [50, 650, 699]);
  assert.match(page, /<a rel="prev" href="\/executions\/e1\/trace\?before=650">Older steps<\/a>/);
});

Deno.test("an execution page with more timers than it shows says they are the first by path and links them all", () => {
  const timer = (path: string, fireAt: number): TimerState => ({
    executionId: "e1",
    path,
    fireAt,
    attempts: 0,
    retryAt: null,
    deadAt: null,
    lastError: null,
  });
  const page = executionPage({
    basePath: "",
    id: "e1",
    execution: newExecution({ id: "e1", definition_id: "d" }),
    ...NO_FACTS,
    timers: [timer("a", 300), timer("b", 100)],
    moreTimers: true,
    trace: [],
    csrf: null,
  }).toString();
  assert.match(page, /Timers \(the first 2 by path of more\)/);
  const paths = [...page.matchAll(/<tr><td class="mono">([a-z])<\/td>/g)].map((m) => m[1]);
  assert.deepEqual(paths, ["b", "a"], "earliest first");
  assert.match(page, /<a href="\/executions\/e1\/timers">All timers, by path<\/a>/);
});

Deno.test("with actions, the execution page has one Delete form carrying the token", () => {
  const page = executionPage({
    basePath: "/ops",
    execution: newExecution({ id: "a b", definition_id: "d" }),
    ...NO_FACTS,
    trace: [],
    csrf: "tok",
  }).toString();
  assert.deepEqual(forms(page), [
    { action: "/ops/executions/a%20b/delete", fields: { csrf: "tok" }, button: "Delete" },
  ]);
  assert.match(page, /No trace steps/);
});

function outboxLetter(seq: number, target: string | null, error: string): DeadLetter<"outbox"> {
  return {
    key: seq,
    item: { seq, targetId: target, event: { ...newEvent("invoice.requested"), id: `ev${seq}` } },
    attempts: 10,
    lastError: error,
    deadAt: 1_700_000_000,
    raw: { seq },
  };
}

Deno.test("the dead-letters page lists each letter with its target, attempts, time and last error", () => {
  const page = deadLettersPage({
    basePath: "",
    kind: "outbox",
    letters: [outboxLetter(7, "billing", "HTTP 503"), outboxLetter(9, null, "boom")],
    more: false,
    csrf: null,
  }).toString();
  assert.match(page, /<h1>Dead outbox entries<\/h1>/);
  const unknown = `<td><span class="muted">unknown</span></td>`; // no source_id stored
  assert.match(
    page,
    new RegExp(`seq 7</td>${unknown}<td><span class="mono" title="target">billing`),
  );
  assert.match(page, new RegExp(`seq 9</td>${unknown}<td><span class="muted">\\(broadcast\\)`));
  assert.match(page, /invoice\.requested/);
  assert.match(
    page,
    /<td>10<\/td><td>2023-11-14 22:13:20 UTC<\/td><td><span class="mono">HTTP 503/,
  );
  assert.deepEqual(forms(page), [], "no buttons without actions");
  assert.doesNotMatch(page, /By target/);
});

Deno.test("with actions, each dead letter has Retry and Drop, the queue Retry all and Drop all, and each outbox target its own", () => {
  const page = deadLettersPage({
    basePath: "/ops",
    kind: "outbox",
    letters: [
      outboxLetter(7, "billing", "e"),
      outboxLetter(8, "billing", "e"),
      outboxLetter(9, null, "e"),
    ],
    more: false,
    csrf: "tok",
  }).toString();
  const all = forms(page).map((f) => `${f.button} ${f.action} ${JSON.stringify(f.fields)}`);
  assert.deepEqual(all, [
    `Retry all /ops/dead-letters/outbox/retry-all {"csrf":"tok"}`,
    `Drop all /ops/dead-letters/outbox/drop-all {"csrf":"tok"}`,
    `Retry /ops/dead-letters/outbox/retry {"csrf":"tok","seq":"7"}`,
    `Drop /ops/dead-letters/outbox/drop {"csrf":"tok","seq":"7"}`,
    `Retry /ops/dead-letters/outbox/retry {"csrf":"tok","seq":"8"}`,
    `Drop /ops/dead-letters/outbox/drop {"csrf":"tok","seq":"8"}`,
    `Retry /ops/dead-letters/outbox/retry {"csrf":"tok","seq":"9"}`,
    `Drop /ops/dead-letters/outbox/drop {"csrf":"tok","seq":"9"}`,
    `Retry all /ops/dead-letters/outbox/retry-all {"csrf":"tok","target":"billing"}`,
    `Drop all /ops/dead-letters/outbox/drop-all {"csrf":"tok","target":"billing"}`,
  ]);
});

Deno.test("a dead timer's forms carry its execution, path and exact fire time", () => {
  const timer = { executionId: "e1", path: "order.wait", fireAt: 1_700_000_000.125 };
  const page = deadLettersPage({
    basePath: "",
    kind: "timers",
    letters: [{
      key: timer,
      item: timer,
      attempts: 3,
      lastError: null,
      deadAt: 1_700_000_100,
      raw: {},
    }] as DeadLetter<RelayKind>[],
    more: false,
    csrf: "tok",
  }).toString();
  const retry = forms(page).find((f) => f.button === "Retry")!;
  assert.deepEqual(retry.fields, {
    csrf: "tok",
    execution_id: "e1",
    path: "order.wait",
    fire_at: "1700000000.125",
  });
  assert.doesNotMatch(page, /By target/, "only outbox entries are grouped by target");
});

Deno.test("an unreadable dead letter shows its stored attributes, escaped, and says there may be more", () => {
  const page = deadLettersPage({
    basePath: "",
    kind: "spawns",
    letters: [{
      key: 4,
      item: null,
      attempts: 1,
      lastError: SCRIPT.repeat(20),
      deadAt: 0,
      raw: { seq: 4, child_id: "child-9", context: SCRIPT },
    }] as DeadLetter<RelayKind>[],
    more: true,
    csrf: null,
  }).toString();
  assertNoScriptOrInlineStyle(page);
  assert.match(page, /<span class="dead">unreadable<\/span>/);
  assert.match(page, /title="target">child-9</, "the child, read from the stored row");
  assert.match(page, /there may be more/);
  assert.match(page, /<details><summary class="mono">/, "a long error is folded");
});

Deno.test("the confirmation page re-posts the action with confirm=yes, and offers a way back", () => {
  const page = confirmPage({
    basePath: "",
    title: "Drop this dead letter?",
    question: `Drop ${SCRIPT}?`,
    action: "/dead-letters/outbox/drop",
    fields: { seq: "7" },
    label: "Drop",
    csrf: "tok",
    back: "/dead-letters/outbox",
  }).toString();
  assert.deepEqual(forms(page), [{
    action: "/dead-letters/outbox/drop",
    fields: { csrf: "tok", seq: "7", confirm: "yes" },
    button: "Drop",
  }]);
  assert.match(page, /<a href="\/dead-letters\/outbox">Cancel<\/a>/);
  assert.ok(page.includes(ESCAPED));
  assertNoScriptOrInlineStyle(page);
});

Deno.test("a message page says its text and links back to the first page", () => {
  const page = messagePage("/ops", "Not found", `There is no execution ${SCRIPT}.`).toString();
  assert.ok(page.includes(`There is no execution ${ESCAPED}.`));
  assert.match(page, /<a href="\/ops\/">Back to the executions<\/a>/);
});

Deno.test("links encode each segment once, and times and ages read as a person reads them", () => {
  assert.equal(href("/ops", ["executions", "../.."]), "/ops/executions/..%2F..");
  assert.equal(href("", ["executions", "a/b?c#d"]), "/executions/a%2Fb%3Fc%23d");
  assert.equal(href("", [], { status: ["A", "B"], cursor: null }), "/?status=A&status=B");
  assert.equal(formatTime(1_700_000_000.9), "2023-11-14 22:13:20 UTC");
  assert.equal(formatTime(null), "—");
  assert.equal(formatTime(Number.NaN), "—");
  assert.deepEqual([formatAge(45), formatAge(600), formatAge(7200), formatAge(3 * 86_400)], [
    "45 s",
    "10 min",
    "2 h",
    "3 d",
  ]);
  assert.deepEqual(
    [formatRelative(940, 1000), formatRelative(1600, 1000), formatRelative(null, 1000)],
    ["60 s ago", "in 10 min", "—"],
  );
});
