// The executions listing and an execution's page on the memory twin: the filters the first page
// takes (status, definition, before, cursor) and refuses, the order it lists in, and what an
// execution's page says of its timers. The pages' markup itself is pages_test.ts.
import assert from "node:assert/strict";
import { type Execution, MemoryStore, newExecution, type Status } from "../../src/testing.ts";
import { build, type Handler, ORIGIN } from "../_support/dashboard.ts";

const HOUR = 3600;

/** The execution ids a page lists, in its order. */
async function listed(handler: Handler, path: string): Promise<string[]> {
  const response = await handler(new Request(`${ORIGIN}${path}`));
  assert.equal(response.status, 200, path);
  const page = await response.text();
  return [...page.matchAll(/<td><a class="mono" href="\/executions\/([^"]+)">/g)].map((m) =>
    decodeURIComponent(m[1]!)
  );
}

/** Every id a listing holds, following its "Next page" links; and how many pages it took. */
async function walk(handler: Handler, path: string): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let pages = 0;
  for (let at: string | null = path; at !== null; pages++) {
    const page: string = await (await handler(new Request(`${ORIGIN}${at}`))).text();
    ids.push(
      ...[...page.matchAll(/<td><a class="mono" href="\/executions\/([^"]+)">/g)].map((m) => m[1]!),
    );
    const next = page.match(/rel="next" href="([^"]+)"/)?.[1];
    at = next ? next.replaceAll("&amp;", "&") : null;
    assert.ok(pages < 20, "the pages end");
  }
  return { ids, pages };
}

/**
 * A store whose clock an hour apart per commit: executions of these statuses committed oldest
 * first, ending at `end` (epoch seconds); returned in commit order.
 */
async function committedHourly(
  statuses: Status[],
  end = Math.floor(Date.now() / 1000),
): Promise<{ store: MemoryStore; exes: Execution[]; times: number[] }> {
  let clock = 0;
  const store = new MemoryStore({ now: () => clock * 1000 });
  const exes: Execution[] = [];
  const times: number[] = [];
  for (const [i, status] of statuses.entries()) {
    clock = end - (statuses.length - 1 - i) * HOUR;
    const exe = newExecution({ id: `e${i}`, definition_id: i % 2 ? "odd" : "even", status });
    await store.commit(exe);
    exes.push(exe);
    times.push(clock);
  }
  return { store, exes, times };
}

Deno.test("query strings: a huge one is 414; an unknown parameter, a bad or repeated status, a bad before and a tampered cursor are 400", async () => {
  const store = new MemoryStore();
  for (let i = 0; i < 3; i++) {
    await store.commit(newExecution({ definition_id: "d", status: "RUNNING" }));
  }
  const handler = build(store, { pageSize: 2 });
  const refused: [string, RegExp][] = [
    ["/?status=RUNNING&limit=1000000", /takes no parameter &quot;limit&quot;/],
    ["/?status=<script>", /status must be one of PENDING, .*, or any/],
    ["/?status=RUNNING&status=RUNNING", /Give each status once/],
    ["/?status=any&status=DONE", /status any stands alone/],
    ["/?definition=a&definition=b", /Give definition once/],
    ["/?before=a&before=b", /Give before once/],
    ["/?before=1700000000000", /before 1700000000000 is epoch milliseconds .*\(1700000000\)/],
    ["/?before=yesterday", /before needs a date \(2026-11-01 or .*\) or epoch seconds/],
    ["/?before=2026-02-30", /before needs a date/],
    ["/?before=2026-11-01T12:00", /a time needs its offset/],
    [`/?before=${"9".repeat(400)}`, /before needs a date/],
    ["/?status=any&before=2026-11-01", /before needs a status/],
    ["/?cursor=not-a-cursor", /page link is no longer valid/],
    ["/dead-letters/outbox?status=DONE", /takes no parameter &quot;status&quot;/],
    ["/executions/x?cursor=1", /takes no parameter &quot;cursor&quot;/],
  ];
  for (const [path, text] of refused) {
    const response = await handler(new Request(`${ORIGIN}${path}`));
    assert.equal(response.status, 400, path);
    const page = await response.text();
    assert.match(page, text, path);
    assert.doesNotMatch(page, /<script>/);
  }
  const huge = await handler(new Request(`${ORIGIN}/?definition=${"x".repeat(9000)}`));
  assert.equal(huge.status, 414);
  await huge.body?.cancel();
  const first = await (await handler(new Request(`${ORIGIN}/`))).text();
  const cursor = new URLSearchParams(
    first.match(/rel="next" href="\/\?([^"]+)"/)![1]!.replaceAll("&amp;", "&"),
  ).get("cursor")!;
  const tampered = `${cursor.slice(0, -2)}${cursor.endsWith("A") ? "B" : "A"}A`;
  const response = await handler(new Request(`${ORIGIN}/?cursor=${tampered}`));
  assert.equal(response.status, 400);
  assert.match(await response.text(), /page link is no longer valid/);
});

Deno.test("by default the first page lists the open executions, latest to enter their status first, and pages through them", async () => {
  const statuses: Status[] = ["RUNNING", "DONE", "PENDING", "FAILED", "SUSPENDED", "CANCELLING"];
  const { store, exes } = await committedHourly([...statuses, "RUNNING"]);
  const handler = build(store, { pageSize: 2 });
  const open = exes.filter((exe) => !["DONE", "FAILED"].includes(exe.status));
  const { ids, pages } = await walk(handler, "/");
  assert.deepEqual(ids, open.map((exe) => exe.id).reverse());
  assert.equal(pages, 3);
});

Deno.test("status any pages through every execution, in the table's order, and says so", async () => {
  const { store, exes } = await committedHourly(["RUNNING", "DONE", "FAILED", "RUNNING", "DONE"]);
  const handler = build(store, { pageSize: 2 });
  const { ids } = await walk(handler, "/?status=any");
  assert.deepEqual(new Set(ids), new Set(exes.map((exe) => exe.id)));
  assert.equal(ids.length, exes.length);
  const page = await (await handler(new Request(`${ORIGIN}/?status=any`))).text();
  assert.match(page, /in the table&#39;s order \(not by time\)/);
});

Deno.test("before finds the stuck ones: those last committed before it, newest first, as a date or epoch seconds", async () => {
  const { store, exes, times } = await committedHourly(
    ["RUNNING", "RUNNING", "RUNNING", "RUNNING", "RUNNING"],
  );
  const handler = build(store, { pageSize: 2 });
  const cut = times[3]! - HOUR / 2; // e0, e1 and e2 have not moved since
  const stuck = exes.slice(0, 3).map((exe) => exe.id).reverse();
  const iso = new Date(cut * 1000).toISOString();
  for (const before of [String(cut), iso, iso.replace("Z", "+00:00")]) {
    const { ids, pages } = await walk(handler, `/?before=${encodeURIComponent(before)}`);
    assert.deepEqual(ids, stuck, before);
    assert.equal(pages, 2, "the next page keeps the filter");
  }
  assert.deepEqual(
    await listed(handler, `/?status=RUNNING&status=DONE&before=${cut}`),
    stuck.slice(0, 2),
  );
  const page = await (await handler(new Request(`${ORIGIN}/?before=${cut}`))).text();
  assert.match(
    page,
    /last committed before \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, the latest to enter their status first/,
  );
  assert.match(page, /<td class="nowrap" title="[^"]+ UTC">2 h ago<\/td>/);
});

Deno.test("status and definition filter the listing", async () => {
  const { store, exes } = await committedHourly(["RUNNING", "DONE", "DONE", "RUNNING", "DONE"]);
  const handler = build(store);
  const done = (definition: string) =>
    exes.filter((exe) => exe.status === "DONE" && exe.definition_id === definition)
      .map((exe) => exe.id).reverse();
  assert.deepEqual(await listed(handler, "/?status=DONE&definition=even"), done("even"));
  assert.deepEqual(await listed(handler, "/?status=DONE&definition=odd"), done("odd"));
  assert.deepEqual(await listed(handler, "/?status=any&definition=odd").then((ids) => ids.sort()), [
    "e1",
    "e3",
  ]);
});

Deno.test("an execution's page shows when it was last committed and expires, and its timers with the relay's state", async () => {
  const now = Math.floor(Date.now() / 1000);
  const store = new MemoryStore({ finishedTtlSeconds: 7 * 86_400 });
  const exe = newExecution({ definition_id: "order", status: "RUNNING" });
  await store.commit(exe, {
    timers: [
      { action: "schedule", path: "order.reminder", fireAt: now - 3 * HOUR },
      { action: "schedule", path: "order.payment", fireAt: now + 2 * HOUR },
    ],
  });
  await store.recordFailure(
    "timers",
    { executionId: exe.id, path: "order.reminder", fireAt: now - 3 * HOUR },
    { attempts: 10, retryAt: null, error: "mailer answered 421" },
  );
  const handler = build(store);
  const open = await (await handler(new Request(`${ORIGIN}/executions/${exe.id}`))).text();
  assert.match(open, /<dt>Last committed<\/dt><dd>[^<]+ UTC <span class="muted">\(\d+ s ago\)/);
  assert.match(open, /<dt>Expires<\/dt><dd><span class="muted">never<\/span>/);
  assert.match(open, /<h2 id="timers">Timers \(2\)<\/h2>/);
  assert.match(
    open,
    /order\.reminder<\/td>.*?dead<\/a> since .*?<td>10<\/td><td><span class="mono">mailer answered 421/s,
  );
  assert.match(open, /order\.payment<\/td>.*?\(in 2 h\)<\/span><\/td><td>armed<\/td><td>0<\/td>/s);

  exe.status = "DONE";
  await store.commit(exe, { timers: [{ action: "cancel", path: "order.payment" }] });
  const done = await (await handler(new Request(`${ORIGIN}/executions/${exe.id}`))).text();
  assert.match(done, /<dt>Expires<\/dt><dd>[^<]+ UTC <span class="muted">\(in 7 d\)/);
  assert.match(done, /<h2 id="timers">Timers \(1\)<\/h2>/);
});

Deno.test("an execution's trace and timers pages go through all of them, 50 a page, and refuse a bad before or after", async () => {
  const store = new MemoryStore({ traceMax: 0 });
  const exe = newExecution({ definition_id: "order", status: "RUNNING" });
  const paths = Array.from({ length: 120 }, (_, i) => `order.t${String(i).padStart(3, "0")}`);
  for (let at = 0; at < paths.length; at += 60) {
    await store.commit(exe, {
      timers: paths.slice(at, at + 60).map((path, i) => ({
        action: "schedule" as const,
        path,
        fireAt: 2e9 - at - i,
      })),
    });
  }
  for (let i = 0; i < 119; i++) await store.commit(exe, { trace: { event: `e${i}` } });
  const handler = build(store);
  const text = async (path: string) => {
    const response = await handler(new Request(`${ORIGIN}${path}`));
    return { status: response.status, page: await response.text() };
  };
  const open = await text(`/executions/${exe.id}`);
  assert.match(open.page, /Trace \(the newest 50 steps, oldest first\)/);
  assert.match(open.page, /Timers \(the first 50 by path of more\)/);

  const steps: number[] = [];
  let trace = (open.page.match(/rel="prev" href="([^"]+)"/)?.[1] ?? "").replaceAll("&amp;", "&");
  for (let pages = 0; trace; pages++) {
    assert.ok(pages < 5, "the trace pages end");
    const { status, page } = await text(trace);
    assert.equal(status, 200, trace);
    steps.push(...[...page.matchAll(/<span class="step">e(\d+)<\/span>/g)].map((m) => +m[1]!));
    trace = (page.match(/rel="prev" href="([^"]+)"/)?.[1] ?? "").replaceAll("&amp;", "&");
  }
  assert.deepEqual(steps, [
    ...Array.from({ length: 50 }, (_, i) => 19 + i),
    ...Array.from({ length: 19 }, (_, i) => i),
  ]);

  const seen: string[] = [];
  let timers: string | undefined = `/executions/${exe.id}/timers`;
  for (let pages = 0; timers; pages++) {
    assert.ok(pages < 5, "the timers pages end");
    const { status, page } = await text(timers);
    assert.equal(status, 200, timers);
    seen.push(...[...page.matchAll(/<tr><td class="mono">([^<]+)<\/td>/g)].map((m) => m[1]!));
    timers = page.match(/rel="next" href="([^"]+)"/)?.[1]?.replaceAll("&amp;", "&");
  }
  assert.deepEqual(seen, paths, "every timer once, by path");

  for (
    const path of [
      `/executions/${exe.id}/trace?before=x`,
      `/executions/${exe.id}/trace?before=1.5`,
      `/executions/${exe.id}/trace?before=1&before=2`,
      `/executions/${exe.id}/trace?cursor=1`,
      `/executions/${exe.id}/timers?after=${"p".repeat(2000)}`,
    ]
  ) {
    assert.equal((await text(path)).status, 400, path);
  }
});
