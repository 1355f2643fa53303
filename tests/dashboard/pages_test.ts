// The dashboard's pages as pure functions of what they show: no store, no browser, no
// permissions. What a browser makes of them is tests/dashboard/browser_test.ts.
import assert from "node:assert/strict";
import { executionsPage } from "../../src/dashboard/_executions_page.ts";
import { executionPage } from "../../src/dashboard/_execution_page.ts";
import { deadLettersPage } from "../../src/dashboard/_dead_letters_page.ts";
import { confirmPage } from "../../src/dashboard/_confirm_page.ts";
import { messagePage } from "../../src/dashboard/_message_page.ts";
import { formatAge, formatTime, href } from "../../src/dashboard/_layout.ts";
import type { QueueBacklog } from "../../src/dashboard/_store_calls.ts";
import {
  type DeadLetter,
  type ExecutionSummary,
  newEvent,
  newExecution,
  type RelayKind,
} from "../../src/testing.ts";

const SCRIPT = `<script>alert("pwned")</script>`;
const ESCAPED = "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;";

const QUIET: QueueBacklog[] = (["outbox", "spawns", "timers"] as const).map((kind) => ({
  kind,
  ready: { n: 0, capped: false },
  dead: { n: 0, capped: false },
  oldestAt: null,
}));

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
    filters: { statuses: [], definition: null },
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
    filters: { statuses: [], definition: SCRIPT },
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
  assert.ok(page.split(ESCAPED).length > 6, "each stored field shows, escaped");
  assert.match(page, /<span class="status">&lt;script/, "an unknown status is plain text");
});

Deno.test("the executions page links the next page with the filters and the cursor, and a later page links the first", () => {
  const page = executionsPage({
    basePath: "",
    filters: { statuses: ["RUNNING", "FAILED"], definition: "order v2" },
    page: { items: [summary()], nextCursor: "abc_-" },
    later: true,
    backlog: QUIET,
    now: 0,
  }).toString();
  assert.match(
    page,
    /<a rel="next" href="\/\?status=RUNNING&amp;status=FAILED&amp;definition=order\+v2&amp;cursor=abc_-">Next page<\/a>/,
  );
  assert.match(
    page,
    /<a href="\/\?status=RUNNING&amp;status=FAILED&amp;definition=order\+v2">First page<\/a>/,
  );
  assert.match(page, /<option selected>RUNNING<\/option>/);
  assert.match(page, /<option selected>FAILED<\/option>/);
  assert.match(page, /<input name="definition" value="order v2"/);
});

Deno.test("the backlog summary shows capped counts as N+, links dead letters, and says how old the oldest item is", () => {
  const page = executionsPage({
    basePath: "",
    filters: { statuses: [], definition: null },
    page: { items: [], nextCursor: null },
    later: false,
    backlog: [
      {
        kind: "outbox",
        ready: { n: 100, capped: true },
        dead: { n: 3, capped: false },
        oldestAt: 1000 - 600,
      },
      {
        kind: "spawns",
        ready: { n: 2, capped: false },
        dead: { n: 0, capped: false },
        oldestAt: null,
      },
      {
        kind: "timers",
        ready: { n: 0, capped: false },
        dead: { n: 100, capped: true },
        oldestAt: null,
      },
    ],
    now: 1000,
  }).toString();
  assert.match(page, /ready to deliver<\/dt><dd>100\+<\/dd>/);
  assert.match(page, /<a class="dead" href="\/dead-letters\/outbox">3<\/a>/);
  assert.match(page, /<a class="dead" href="\/dead-letters\/timers">100\+<\/a>/);
  assert.match(page, /oldest ready entry<\/dt><dd>10 min<\/dd>/);
  assert.match(page, /No executions yet\./);
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

Deno.test("the execution page escapes the document and every trace step", () => {
  const exe = newExecution({ id: SCRIPT, definition_id: SCRIPT, context: { note: SCRIPT } });
  const page = executionPage({
    basePath: "",
    execution: exe,
    trace: [{ index: 0, event: SCRIPT, from: SCRIPT, to: SCRIPT, detail: SCRIPT }],
    csrf: "token",
  }).toString();
  assertNoScriptOrInlineStyle(page);
  assert.ok(page.includes(ESCAPED));
  assert.ok(page.includes("&lt;script&gt;alert(\\&quot;pwned\\&quot;)"), "inside the JSON too");
});

Deno.test("a long trace shows its newest steps, and says how many there are", () => {
  const trace = Array.from({ length: 700 }, (_, index) => ({ index, event: `e${index}` }));
  const page = executionPage({
    basePath: "",
    execution: newExecution({ id: "e1", definition_id: "d" }),
    trace,
    csrf: null,
  }).toString();
  assert.match(page, /Trace \(700 steps, oldest first\)/);
  assert.match(page, /The last 500 steps of 700\./);
  const shown = [...page.matchAll(/<span class="step">e(\d+)<\/span>/g)].map((m) => Number(m[1]));
  assert.equal(shown.length, 500);
  assert.deepEqual([shown[0], shown.at(-1)], [200, 699]);
});

Deno.test("with actions, the execution page has one Delete form carrying the token", () => {
  const page = executionPage({
    basePath: "/ops",
    execution: newExecution({ id: "a b", definition_id: "d" }),
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
  assert.match(page, /seq 7<\/td><td><a class="mono" href="\/executions\/billing">billing<\/a>/);
  assert.match(page, /seq 9<\/td><td><span class="muted">\(broadcast\)<\/span>/);
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
  assert.match(page, /href="\/executions\/child-9"/, "the target, read from the stored row");
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
});
