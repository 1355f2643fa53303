// What each dashboard page costs on DynamoDB Local, in calls and in the read units DynamoDB
// reports (ReturnConsumedCapacity): the same at 3,000 executions, dead letters and pending
// entries as at 300 (within 2×), and no page scans a table unless it lists in the table's order.
import assert from "node:assert/strict";
import { DynamoDBStore, newExecution } from "../../mod.ts";
import { dashboard } from "../../src/dashboard.ts";
import type { DynamoDBSender } from "../../src/dynamo/_dynamo.ts";
import { capacityClient } from "../_support/capacity.ts";
import { uniqueName } from "../_support/env.ts";
import { committedItem, fillExecutions } from "../_support/executions.ts";
import { putAll } from "../_support/put_all.ts";
import { outboxRow } from "../_support/relay_rows.ts";
import { EXAMINE_BUDGET } from "../../src/dashboard/_store_calls.ts";

const HOUR = 3600;

/**
 * Writes outbox entries `from` to `from + count - 1` straight into the table, as this module
 * leaves them (relay index attributes included): dead letters (ten attempts, an error) for
 * targets t0 to t49, or pending entries committed a minute ago.
 */
async function fillOutbox(
  client: DynamoDBSender,
  table: string,
  from: number,
  count: number,
  dead: boolean,
): Promise<void> {
  const now = Date.now() / 1000;
  const lastError = "billing webhook answered 503";
  const rows = Array.from(
    { length: count },
    (_, i) => outboxRow(from + i, now, { dead, lastError }),
  );
  await putAll(client, table, rows, 8);
}

/** Adds `count` executions (a third RUNNING, the rest DONE), dead letters and pending entries. */
async function grow(
  client: DynamoDBSender,
  store: DynamoDBStore,
  count: number,
  seqFrom: number,
): Promise<void> {
  const table = store.tables.executions.name;
  const from = Date.now() / 1000 - 48 * HOUR;
  await fillExecutions(client, table, count / 3, { status: "RUNNING", from });
  await fillExecutions(client, table, (2 * count) / 3, { status: "DONE", from });
  await fillOutbox(client, store.tables.outbox.name, seqFrom, count, true);
  await fillOutbox(client, store.tables.outbox.name, seqFrom + count, count, false);
}

Deno.test("each dashboard page reads as much at 3,000 executions and dead letters as at 300 (within 2×), and only status any scans", async () => {
  const { client, capacity } = capacityClient();
  const store = new DynamoDBStore(client, { prefix: uniqueName("dash") });
  try {
    await store.ensureTables();
    const shown = newExecution({ definition_id: "order", status: "RUNNING" });
    for (let i = 0; i < 5; i++) {
      await store.commit(shown, {
        trace: { event: `step ${i}` },
        timers: [{ action: "schedule", path: `order.t${i}`, fireAt: Date.now() / 1000 + HOUR }],
      });
    }
    const handler = dashboard(store, { authorize: () => true, actions: true, hosts: ["ops.test"] });
    const get = async (path: string) => {
      const response = await handler(new Request(`http://ops.test${path}`));
      const text = await response.text();
      assert.equal(response.status, 200, path);
      return text;
    };
    const cursorOf = (page: string) =>
      decodeURIComponent(page.match(/rel="next" href="\/\?cursor=([^"&]+)"/)![1]!);
    const pages = async () => {
      const next = cursorOf(await get("/"));
      return [
        "/",
        `/?cursor=${encodeURIComponent(next)}`,
        "/?status=DONE",
        `/?status=RUNNING&before=${Math.floor(Date.now() / 1000 - 24 * HOUR)}`,
        "/?status=any",
        `/executions/${shown.id}`,
        "/dead-letters/outbox",
      ];
    };
    const measure = async () => {
      const figures: Record<string, { units: number; calls: number; scans: number }> = {};
      for (const path of await pages()) {
        capacity.units = 0;
        capacity.calls.length = 0;
        await get(path);
        figures[path.replace(/cursor=[^&]+/, "cursor=…").replace(/before=\d+/, "before=…")] = {
          units: Math.round(capacity.units * 10) / 10,
          calls: capacity.calls.length,
          scans: capacity.calls.filter((call) => call === "ScanCommand").length,
        };
      }
      return figures;
    };
    await grow(client, store, 300, 1);
    const small = await measure();
    await grow(client, store, 2700, 1_000);
    const large = await measure();
    const said = JSON.stringify({ small, large });
    console.log(`each page, 300 → 3,000: ${said}`);
    assert.equal(Object.keys(large).length, 7);
    for (const [path, cost] of Object.entries(large)) {
      const before = small[path]!;
      assert.ok(cost.calls <= before.calls * 2, `${path} calls: ${said}`);
      assert.ok(cost.units <= Math.max(before.units * 2, 1), `${path} read units: ${said}`);
      assert.equal(cost.scans, path === "/?status=any" ? 1 : 0, `${path} scans: ${said}`);
    }
  } finally {
    client.destroy();
  }
});

/**
 * Adds `count` executions of definition "bulk": a third RUNNING that entered their status two
 * days ago but were committed a minute ago (busy: `?before=` an hour ago reads past them), the
 * rest DONE. None matches `?definition=rare`.
 */
async function growBulk(client: DynamoDBSender, table: string, count: number): Promise<void> {
  const now = Date.now() / 1000;
  const items = Array.from({ length: count }, (_, i) => {
    const exe = newExecution({
      definition_id: "bulk",
      status: i % 3 === 0 ? "RUNNING" : "DONE",
      version: 1,
      context: { note: "x".repeat(400) },
    });
    const item = committedItem(exe, now - 48 * HOUR + i)!.Item!;
    return { ...item, updated_at: { N: String(now - 60) } };
  });
  await putAll(client, table, items, 8);
}

Deno.test("a filtered view reads at most its budget: as many read units at 6,000 executions as at 3,000, and a cursor goes on", async () => {
  const { client, capacity } = capacityClient();
  const store = new DynamoDBStore(client, { prefix: uniqueName("dash_budget") });
  try {
    await store.ensureTables();
    // The ones a filter looks for, committed first: the newest-first walks meet them last.
    for (let i = 0; i < 3; i++) {
      await store.commit(newExecution({ definition_id: "rare", status: "RUNNING" }));
    }
    const handler = dashboard(store, { authorize: () => true, hosts: ["ops.test"] });
    const before = Math.floor(Date.now() / 1000 - HOUR);
    const paths = [
      "/?definition=rare",
      "/?status=any&definition=rare",
      `/?status=RUNNING&before=${before}`,
    ];
    const measure = async () => {
      const figures: Record<string, { units: number; calls: number; next: boolean }> = {};
      for (const path of paths) {
        capacity.units = 0;
        capacity.calls.length = 0;
        const response = await handler(new Request(`http://ops.test${path}`));
        const page = await response.text();
        assert.equal(response.status, 200, path);
        figures[path.replace(/before=\d+/, "before=…")] = {
          units: Math.round(capacity.units * 10) / 10,
          calls: capacity.calls.length,
          next: /rel="next"/.test(page),
        };
      }
      return figures;
    };
    const table = store.tables.executions.name;
    await growBulk(client, table, 300);
    const few = await measure(); // under the budget: read to the end
    await growBulk(client, table, 2700);
    const small = await measure();
    await growBulk(client, table, 3000);
    const large = await measure();
    const said = JSON.stringify({ few, small, large });
    console.log(`filtered views, 300 → 3,000 → 6,000 executions: ${said}`);
    for (const [path, cost] of Object.entries(large)) {
      const was = small[path]!;
      assert.ok(cost.units <= was.units * 1.25 + 1, `${path} read units stay flat: ${said}`);
      // At most a read unit a row of the budget (items under 4 KB), the backlog's beside it.
      assert.ok(cost.units <= EXAMINE_BUDGET, `${path} read units are bounded: ${said}`);
      assert.ok(cost.next, `${path}: the budget is spent, a next page goes on: ${said}`);
    }
  } finally {
    client.destroy();
  }
});

Deno.test("an execution's page reads a page of its trace and of its timers: as little with 5,000 steps and 3,000 timers as with 300 and 300", async () => {
  const { client, capacity } = capacityClient();
  const store = new DynamoDBStore(client, {
    prefix: uniqueName("dash_parts"),
    traceMax: 0,
  });
  try {
    await store.ensureTables();
    const exe = newExecution({ definition_id: "order", status: "RUNNING" });
    await store.commit(exe);
    const handler = dashboard(store, { authorize: () => true, hosts: ["ops.test"] });
    let steps = 0, timers = 0;
    const grow = async (toSteps: number, toTimers: number) => {
      const rows = [];
      for (; steps < toSteps; steps++) {
        rows.push({
          execution_id: { S: exe.id },
          idx: { N: String(steps) },
          entry: {
            S: JSON.stringify({ event: `e${steps}`, from: "a", to: "b", detail: "y".repeat(150) }),
          },
        });
      }
      await putAll(client, store.tables.trace.name, rows, 8);
      const armed = [];
      for (; timers < toTimers; timers++) {
        armed.push({
          execution_id: { S: exe.id },
          path: { S: `order.t${String(timers).padStart(5, "0")}` },
          fire_at: { N: String(2_000_000_000 + timers) },
        });
      }
      await putAll(client, store.tables.timers.name, armed, 8);
    };
    const measure = async () => {
      capacity.units = 0;
      capacity.calls.length = 0;
      const response = await handler(new Request(`http://ops.test/executions/${exe.id}`));
      const page = await response.text();
      assert.equal(response.status, 200);
      return {
        units: Math.round(capacity.units * 10) / 10,
        calls: capacity.calls.length,
        kb: Math.round(new TextEncoder().encode(page).length / 1024),
        steps: page.match(/<span class="step">/g)?.length ?? 0,
        timers: page.match(/<tr><td class="mono">order\.t/g)?.length ?? 0,
      };
    };
    await grow(300, 300);
    const small = await measure();
    await grow(5000, 3000);
    const large = await measure();
    const said = JSON.stringify({ small, large });
    console.log(`execution page, 300 → 5,000 steps and 300 → 3,000 timers: ${said}`);
    assert.deepEqual([large.steps, large.timers], [50, 50], said);
    assert.equal(large.calls, small.calls, said);
    assert.ok(large.units <= small.units + 1, `read units stay flat: ${said}`);
    assert.ok(large.kb <= small.kb + 2, `the page's size stays flat: ${said}`);
    assert.ok(large.units <= 20, `read units are O(page): ${said}`);
  } finally {
    client.destroy();
  }
});
