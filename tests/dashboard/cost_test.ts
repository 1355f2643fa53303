// What each dashboard page costs on DynamoDB Local, in calls and in the read units DynamoDB
// reports (ReturnConsumedCapacity): the same at 3,000 executions, dead letters and pending
// entries as at 300 (within 2×), and no page scans a table unless it lists in the table's order.
import assert from "node:assert/strict";
import { BatchWriteItemCommand, type WriteRequest } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newEvent, newExecution } from "../../mod.ts";
import { dashboard } from "../../src/dashboard.ts";
import { pendingPlace, placeOf, relayAttributes } from "../../src/execution/queue/_relay_index.ts";
import type { DynamoDBSender } from "../../src/dynamo/_dynamo.ts";
import { capacityClient } from "../_support/capacity.ts";
import { uniqueName } from "../_support/env.ts";
import { fillExecutions } from "../_support/executions.ts";

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
  const rows: WriteRequest[] = Array.from({ length: count }, (_, i) => {
    const seq = from + i;
    const item = {
      seq: { N: String(seq) },
      target_id: { S: `t${seq % 50}` },
      event: { S: JSON.stringify(newEvent("invoice.requested", { total: seq })) },
      created_at: { N: String(now - 60) },
      ...(dead
        ? {
          attempts: { N: "10" },
          last_error: { S: "billing webhook answered 503" },
          dead_at: { N: String(now - 30) },
        }
        : {}),
    };
    const place = dead ? placeOf("outbox", item, now)! : pendingPlace("outbox", item);
    return { PutRequest: { Item: { ...item, ...relayAttributes(place) } } };
  });
  for (let i = 0; i < rows.length; i += 25) {
    let pending = rows.slice(i, i + 25);
    while (pending.length > 0) {
      const result = await client.send(
        new BatchWriteItemCommand({ RequestItems: { [table]: pending } }),
      );
      pending = result.UnprocessedItems?.[table] ?? [];
    }
  }
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
