// How the execution page shows one trace step: what the step has (its event, where it came from
// and went, when), never an ellipsis for what it lacks.
import assert from "node:assert/strict";
import { executionPage } from "../../src/dashboard/_execution_page.ts";
import { newExecution } from "../../src/testing.ts";

/** The timeline's items of a page showing these steps. */
function steps(trace: Record<string, unknown>[]): string[] {
  const page = executionPage({
    basePath: "",
    execution: newExecution({ id: "e1", definition_id: "order" }),
    updatedAt: null,
    expiresAt: null,
    timers: [],
    now: 0,
    trace,
    csrf: null,
  }).toString();
  return [...page.matchAll(/<li>(.*?)<details>/gs)].map(([, item]) =>
    item!.replace(/<[^>]*>/g, "").trim()
  );
}

Deno.test("a trace step without `from` shows where it started as (start), not an ellipsis", () => {
  const [first, failed] = steps([
    { index: 0, event: "start", to: "order.awaiting_payment" },
    { index: 1, event: "label.refused", from: "order.shipping" },
  ]);
  assert.equal(first, "#0 start (start) → order.awaiting_payment");
  assert.equal(failed, "#1 label.refused from order.shipping");
  assert.ok(!/…/.test(`${first}${failed}`), "nothing reads as cut short");
});

Deno.test("a trace step shows its time in UTC, from `at`, `time` or `timestamp`, as ISO text (naive: UTC) or epoch seconds or milliseconds", () => {
  const shown = steps([
    { index: 0, event: "a", at: "2026-03-01T10:00:05.123+00:00" },
    { index: 1, event: "b", time: 1_772_359_206 },
    { index: 2, event: "c", timestamp: 1_772_359_207_000 },
    { index: 3, event: "d", at: "not a time" },
    { index: 4, event: "e" },
    { index: 5, event: "f", at: "2026-03-01T10:00:08.250000" }, // Python's naive isoformat()
  ]);
  assert.deepEqual(shown, [
    "#0 a 2026-03-01 10:00:05 UTC",
    "#1 b 2026-03-01 10:00:06 UTC",
    "#2 c 2026-03-01 10:00:07 UTC",
    "#3 d not a time",
    "#4 e",
    "#5 f 2026-03-01 10:00:08 UTC",
  ]);
});

Deno.test("a trace step's time is a <time> element with its ISO datetime", () => {
  const page = executionPage({
    basePath: "",
    execution: newExecution({ id: "e1", definition_id: "order" }),
    updatedAt: null,
    expiresAt: null,
    timers: [],
    now: 0,
    trace: [{ index: 0, event: "a", at: "2026-03-01T10:00:05Z" }],
    csrf: null,
  }).toString();
  assert.match(page, /<time datetime="2026-03-01T10:00:05.000Z">2026-03-01 10:00:05 UTC<\/time>/);
});
