// The dashboard's actions on the memory twin, once a POST has passed the checks of
// handler_test.ts: what each does to the store, the confirmations of the destructive ones, the
// notices a page shows afterwards, and forms that name nothing properly.
import assert from "node:assert/strict";
import { MemoryStore, newEvent, newExecution } from "../../src/testing.ts";
import type { ExecutionStore, RelayKind } from "../../mod.ts";
import { BULK_BUDGET_MS, onEveryDeadLetter } from "../../src/dashboard/_store_calls.ts";
import {
  build,
  deadSeqs,
  openSession,
  ORIGIN,
  overriding,
  post,
  seeded,
} from "../_support/dashboard.ts";

/** A store with `count` dead outbox entries, for targets t0 to t4 in turn; their seqs. */
async function deadOutbox(store: MemoryStore, count: number): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < count; i += 90) {
    const emits = Array.from({ length: Math.min(90, count - i) }, (_, j) => ({
      target: `t${(i + j) % 5}`,
      event: newEvent("invoice"),
    }));
    seqs.push(...(await store.commit(newExecution({ definition_id: "d" }), { emits })).outbox);
  }
  for (const seq of seqs) {
    await store.recordFailure("outbox", seq, { attempts: 3, retryAt: null, error: "HTTP 503" });
  }
  return seqs;
}

Deno.test("a POST from the dashboard's own page with the session's token retries the dead letter and redirects back with a notice", async () => {
  const { store, outbox } = await seeded();
  const handler = build(store);
  const { cookie, csrf } = await openSession(handler);
  const response = await post(handler, "/dead-letters/outbox/retry", {
    csrf,
    seq: String(outbox[0]),
  }, {
    cookie,
  });
  assert.equal(response.status, 303);
  assert.equal(response.headers.get("location"), "/dead-letters/outbox?done=retried");
  assert.deepEqual(await deadSeqs(store), outbox.slice(1));
  const back = await handler(
    new Request(`${ORIGIN}/dead-letters/outbox?done=retried`, { headers: { cookie } }),
  );
  assert.match(
    await back.text(),
    /<p class="notice" role="status">Retried: the dead letter is due again/,
  );
  assert.equal(back.headers.get("set-cookie"), null, "the session goes on");

  const again = await post(
    handler,
    "/dead-letters/outbox/retry",
    { csrf, seq: String(outbox[0]) },
    {
      cookie,
    },
  );
  assert.equal(
    again.headers.get("location"),
    "/dead-letters/outbox?done=gone",
    "it is no longer dead",
  );
});

Deno.test("destructive actions answer a confirmation page first, and act only once confirmed", async (t) => {
  const { store, exe, outbox, timer } = await seeded();
  const handler = build(store);
  const { cookie, csrf } = await openSession(handler);
  const confirmFirst = async (path: string, fields: Record<string, string>, label: string) => {
    const asked = await post(handler, path, { csrf, ...fields }, { cookie });
    assert.equal(asked.status, 200);
    const page = await asked.text();
    assert.match(page, new RegExp(`<button type="submit" class="danger">${label}</button>`));
    assert.match(page, /name="confirm" value="yes"/);
    assert.match(page, /This cannot be undone/);
    return post(handler, path, { csrf, ...fields, confirm: "yes" }, { cookie });
  };
  await t.step("Drop", async () => {
    const pending = confirmFirst("/dead-letters/outbox/drop", { seq: String(outbox[0]) }, "Drop");
    assert.deepEqual(await deadSeqs(store), outbox, "nothing dropped while asking");
    const done = await pending;
    assert.equal(done.headers.get("location"), "/dead-letters/outbox?done=dropped");
    assert.deepEqual(await deadSeqs(store), outbox.slice(1));
  });
  await t.step("Drop all of a timer queue", async () => {
    const done = await confirmFirst("/dead-letters/timers/drop-all", {}, "Drop all");
    assert.equal(done.headers.get("location"), "/dead-letters/timers?done=dropped-all&n=1");
    assert.deepEqual(await store.deadLetters("timers"), []);
    assert.equal(await store.retryDeadLetter("timers", timer), false, "gone");
  });
  await t.step("Delete", async () => {
    const done = await confirmFirst(`/executions/${exe.id}/delete`, {}, "Delete");
    assert.equal(done.headers.get("location"), "/?done=deleted");
    assert.equal(await store.load(exe.id), null);
  });
  await t.step("confirm must be exactly yes", async () => {
    const response = await post(handler, "/dead-letters/outbox/drop", {
      csrf,
      seq: String(outbox[1]),
      confirm: "true",
    }, { cookie });
    assert.equal(response.status, 200, "asked again");
    await response.body?.cancel();
    assert.deepEqual(await deadSeqs(store), outbox.slice(1));
  });
});

Deno.test("Retry all and Drop all of an outbox target act on that target's dead letters only", async () => {
  const { store, outbox } = await seeded();
  const handler = build(store);
  const { cookie, csrf } = await openSession(handler);
  const retried = await post(
    handler,
    "/dead-letters/outbox/retry-all",
    { csrf, target: "billing" },
    {
      cookie,
    },
  );
  assert.equal(retried.headers.get("location"), "/dead-letters/outbox?done=retried-all&n=2");
  assert.deepEqual(await deadSeqs(store), [outbox[2]], "crm's stays dead");
  const page = await handler(
    new Request(`${ORIGIN}/dead-letters/outbox?done=retried-all&n=2`, { headers: { cookie } }),
  );
  assert.match(await page.text(), /Retried 2 dead letters\./);
  const dropped = await post(handler, "/dead-letters/outbox/drop-all", {
    csrf,
    target: "crm",
    confirm: "yes",
  }, { cookie });
  assert.equal(dropped.headers.get("location"), "/dead-letters/outbox?done=dropped-all&n=1");
  assert.deepEqual(await deadSeqs(store), []);
  assert.deepEqual((await store.pendingOutbox()).map((entry) => entry.seq), outbox.slice(0, 2));
});

Deno.test("an action's form that does not name a dead letter properly is 400 and changes nothing", async () => {
  const { store, outbox, timer } = await seeded();
  const handler = build(store);
  const { cookie, csrf } = await openSession(handler);
  const bad: [string, Record<string, string>][] = [
    ["/dead-letters/outbox/retry", { csrf }],
    ["/dead-letters/outbox/retry", { csrf, seq: "one" }],
    ["/dead-letters/outbox/retry", { csrf, seq: "Infinity" }],
    ["/dead-letters/timers/retry", {
      csrf,
      execution_id: timer.executionId,
      path: timer.path,
      fire_at: "NaN",
    }],
    ["/dead-letters/timers/retry", { csrf, execution_id: "", path: timer.path, fire_at: "1" }],
    ["/dead-letters/timers/retry", {
      csrf,
      execution_id: "e",
      path: "p",
      fire_at: "1700000000000000",
    }],
    ["/dead-letters/timers/retry-all", { csrf, target: "e" }],
    ["/dead-letters/outbox/retry-all", { csrf, target: "x".repeat(3000) }],
  ];
  for (const [path, fields] of bad) {
    const response = await post(handler, path, fields, { cookie });
    assert.equal(response.status, 400, `${path} ${JSON.stringify(fields).slice(0, 80)}`);
    await response.body?.cancel();
  }
  assert.deepEqual(await deadSeqs(store), outbox);
  assert.equal((await store.deadLetters("timers")).length, 1);
});

Deno.test("a form over 16 KB is 413 and a body that is not a form is 415, and neither changes anything", async () => {
  const { store, outbox } = await seeded();
  const handler = build(store);
  const { cookie, csrf } = await openSession(handler);
  const large = await post(handler, "/dead-letters/outbox/retry", {
    csrf,
    seq: String(outbox[0]),
    pad: "x".repeat(20_000),
  }, { cookie });
  assert.equal(large.status, 413);
  const json = await post(handler, "/dead-letters/outbox/retry", { csrf, seq: String(outbox[0]) }, {
    cookie,
    "content-type": "application/json",
  });
  assert.equal(json.status, 415);
  await large.body?.cancel();
  await json.body?.cancel();
  assert.deepEqual(await deadSeqs(store), outbox);
});

Deno.test("Retry all of a queue retries every dead letter in one request, past a thousand, and the notice says how many", async () => {
  const store = new MemoryStore();
  const seqs = await deadOutbox(store, 1_234);
  const handler = build(store);
  const { cookie, csrf } = await openSession(handler);
  const response = await post(handler, "/dead-letters/outbox/retry-all", { csrf }, { cookie });
  assert.equal(response.headers.get("location"), "/dead-letters/outbox?done=retried-all&n=1234");
  assert.deepEqual(await deadSeqs(store), []);
  assert.equal((await store.backlog("outbox", { limit: 10_000 })).pending, seqs.length);
  const page = await handler(
    new Request(`${ORIGIN}/dead-letters/outbox?done=retried-all&n=1234`, { headers: { cookie } }),
  );
  const text = await page.text();
  assert.match(text, /Retried 1234 dead letters\./);
  assert.match(text, /No dead outbox entries\./);
});

Deno.test("Drop all of an outbox target drops only that target's dead letters, however many others there are", async () => {
  const store = new MemoryStore();
  const seqs = await deadOutbox(store, 500);
  const handler = build(store);
  const { cookie, csrf } = await openSession(handler);
  const dropped = await post(
    handler,
    "/dead-letters/outbox/drop-all",
    { csrf, target: "t3", confirm: "yes" },
    { cookie },
  );
  assert.equal(dropped.headers.get("location"), "/dead-letters/outbox?done=dropped-all&n=100");
  assert.deepEqual(await deadSeqs(store), seqs.filter((_, i) => i % 5 !== 3));
});

Deno.test("a bulk action cut short answers with the count so far, and its notice asks to press it again", async () => {
  const store = new MemoryStore();
  await deadOutbox(store, 10);
  const stop = new AbortController();
  // The store's own bulk call, its progress watched: the time budget runs out after 3.
  const watched = overriding(store, {
    retryDeadLetters: (
      kind: RelayKind,
      options: Parameters<ExecutionStore["retryDeadLetters"]>[1],
    ) =>
      store.retryDeadLetters(kind, {
        ...options,
        onProgress: (n: number) => {
          options?.onProgress?.(n);
          if (n === 3) stop.abort(new DOMException("time budget", "TimeoutError"));
        },
      }),
  });
  const outcome = await onEveryDeadLetter(watched, "outbox", "retry", null, stop.signal);
  assert.deepEqual(outcome, { done: 3, stopped: true });
  assert.equal((await store.deadLetters("outbox")).length, 7, "the rest wait for the next press");
  const again = await onEveryDeadLetter(
    store,
    "outbox",
    "retry",
    null,
    new AbortController().signal,
  );
  assert.deepEqual(again, { done: 7, stopped: false });

  const handler = build(store);
  const page = await handler(
    new Request(`${ORIGIN}/dead-letters/outbox?done=retried-all&n=3&more=1`),
  );
  assert.match(
    await page.text(),
    new RegExp(
      `Retried 3 dead letters\\. It stopped after ${
        BULK_BUDGET_MS / 1000
      } s with more to do: press it again to go on\\.`,
    ),
  );
});

Deno.test("a bulk action that fails for another reason than its budget is a failure, not a partial count", async () => {
  const store = new MemoryStore();
  await deadOutbox(store, 3);
  const failing = overriding(store, {
    dropDeadLetters: () => Promise.reject(new Error("throttled")),
  });
  await assert.rejects(
    onEveryDeadLetter(failing, "outbox", "drop", null, new AbortController().signal),
    /throttled/,
  );
  const seen: unknown[] = [];
  const handler = build(failing, { onError: (error) => seen.push(error) });
  const { cookie, csrf } = await openSession(handler);
  const response = await post(handler, "/dead-letters/outbox/drop-all", { csrf, confirm: "yes" }, {
    cookie,
  });
  assert.equal(response.status, 500);
  await response.body?.cancel();
  assert.match(String(seen[0]), /throttled/);
  assert.equal((await store.deadLetters("outbox")).length, 3);
});
