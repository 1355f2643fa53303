// Every view of the dashboard is bounded, on DynamoDBStore over DynamoDB Local: a filter few
// executions match reads a budget of rows a page and links the next (whose pages, followed, find
// every match once), and a request the browser gave up on stops reading at once.
import assert from "node:assert/strict";
import { DynamoDBStore, newExecution } from "../../mod.ts";
import { dashboard } from "../../src/dashboard.ts";
import { buildClient } from "../../src/dynamo/connect.ts";
import { examineBudget } from "../../src/dashboard/_store_calls.ts";
import { testClient, uniqueName } from "../_support/env.ts";
import { countingProxy } from "../_support/counting_proxy.ts";
import { fillExecutions } from "../_support/executions.ts";

const HOUR = 3600;

Deno.test("a filter few executions match answers short pages within the budget, and following Next page finds each match once", async () => {
  using client = testClient();
  const store = new DynamoDBStore(client, { prefix: uniqueName("bounds") });
  await store.ensureTables();
  const rare: string[] = [];
  for (let i = 0; i < 3; i++) {
    const exe = newExecution({ definition_id: "rare", status: "RUNNING" });
    await store.commit(exe);
    rare.push(exe.id);
  }
  const from = Date.now() / 1000 + HOUR; // entered their status after the rare ones: read first
  await fillExecutions(client, store.tables.executions.name, 1500, { status: "RUNNING", from });
  const handler = dashboard(store, { authorize: () => true, pageSize: 20 });
  const found: string[] = [];
  let path = "/?definition=rare";
  let pages = 0, short = 0;
  for (; path; pages++) {
    assert.ok(pages < 20, "the pages end");
    const response = await handler(new Request(`http://localhost${path}`));
    const page = await response.text();
    assert.equal(response.status, 200);
    found.push(...[...page.matchAll(/<tr><td><a class="mono" href="\/executions\/([0-9a-f]+)">/g)]
      .map((m) => m[1]!));
    if (/id="budget"/.test(page)) {
      short++;
      assert.match(page, new RegExp(`in the ${examineBudget(20)} stored rows this page read`));
    }
    const next = page.match(/rel="next" href="([^"]+)"/)?.[1];
    path = next ? next.replaceAll("&amp;", "&") : "";
  }
  assert.deepEqual(found.sort(), rare.toSorted(), "each match once");
  assert.ok(short >= 2, `pages stopped at their budget (${short} of ${pages})`);
});

Deno.test("a request aborted mid-way makes no further DynamoDB call: the listing and the backlog stop reading", async () => {
  let abort = () => {};
  let release = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  let releasedAt = Infinity;
  const arrivals: number[] = [];
  // Every answer waits until the test lets go: by then the request was aborted, and whatever
  // the dashboard sends after an answer came back is a call it made after the abort.
  await using proxy = (() => {
    let armedAt: number | null = null;
    const p = countingProxy(0, async (_call, count) => {
      arrivals.push(performance.now());
      if (armedAt === null) return;
      if (count - armedAt === 3) {
        abort();
        setTimeout(() => {
          releasedAt = performance.now();
          release();
        }, 200);
      }
      await released;
    });
    return Object.assign(p, {
      arm: () => void (armedAt = p.calls.length),
      [Symbol.asyncDispose]: () => p.server.shutdown(),
    });
  })();
  const client = buildClient({ endpoint: proxy.url });
  try {
    const store = new DynamoDBStore(client, { prefix: uniqueName("abort") });
    await store.ensureTables();
    using direct = testClient();
    const from = Date.now() / 1000 - 48 * HOUR;
    await fillExecutions(direct, store.tables.executions.name, 600, { status: "RUNNING", from });
    const handler = dashboard(store, { authorize: () => true, onError: () => {} });
    const controller = new AbortController();
    abort = () => controller.abort(new DOMException("the browser went away", "AbortError"));
    proxy.arm();
    const before = arrivals.length;
    const response = await handler(
      new Request("http://localhost/?definition=rare", { signal: controller.signal }),
    );
    await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const made = arrivals.length - before;
    const after = arrivals.filter((at) => at > releasedAt + 20).length;
    assert.ok(made >= 3, `it had started reading (${made} calls)`);
    assert.equal(after, 0, `no call after the abort (${made} before it, ${after} after)`);
    assert.equal(response.status, 503);
  } finally {
    client.destroy();
  }
});
