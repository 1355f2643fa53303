// executionOutbox() on DynamoDB: one execution's outbox entries found by key — the chains
// on its item walked back, its hold's lists read — at the same cost whatever else is stored, the
// Python store's rows (no source_id, no chains) included. tests/conformance runs the states on
// both stores.
import assert from "node:assert/strict";
import {
  type DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  relayOutbox,
} from "../../mod.ts";
import { DynamoDBStore as Store } from "../../src/execution/execution_store.ts";
import { capacityClient } from "../_support/capacity.ts";
import { endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";
import { fillExecutions } from "../_support/executions.ts";
import { putAll } from "../_support/put_all.ts";
import { outboxRow } from "../_support/relay_rows.ts";
import { seedPutExecution } from "../_support/seed.ts";
import { seedWrite } from "../_support/seed_writer.ts";

const HOUR = 3600;

/** `count` outbox rows of other executions, from seq `from`: dead ones for t0..t49, then pending. */
async function otherRows(store: DynamoDBStore, from: number, count: number): Promise<void> {
  using client = testClient();
  const now = Date.now() / 1000;
  const rows = Array.from({ length: count }, (_, i) =>
    outboxRow(from + i, now, {
      dead: i % 2 === 0,
      lastError: "503",
      extra: { source_id: { S: `other-${(from + i) % 97}` } },
    }));
  await putAll(client, store.tables.outbox.name, rows);
  await fillExecutions(client, store.tables.executions.name, count, {
    status: "RUNNING",
    from: now - HOUR,
  });
}

/**
 * An execution that emitted an entry to each of three targets in each of two commits, and another
 * that emitted three to the third, a target execution: after two relay passes, svc-a's first
 * entry waits for a retry with its second held behind it, svc-b's are delivered, and the
 * target's first entry is dead with its four others held behind it.
 */
async function measured(store: DynamoDBStore): Promise<{ source: Execution; target: Execution }> {
  const target = newExecution({ definition_id: "target" });
  await store.save(target);
  const source = newExecution({ definition_id: "source" });
  const seqs: number[] = [];
  for (let round = 0; round < 2; round++) {
    const { outbox } = await store.commit(source, {
      emits: ["svc-a", "svc-b", target.id].map((to) => ({
        target: to,
        event: newEvent(`e${round}`),
      })),
    });
    seqs.push(...outbox);
  }
  await store.recordFailure("outbox", seqs[0]!, {
    attempts: 1,
    retryAt: Date.now() / 1000 + HOUR,
    error: "down",
  });
  const other = newExecution({ definition_id: "other" });
  await store.commit(other, {
    emits: [1, 2, 3].map((n) => ({ target: target.id, event: newEvent(`to${n}`) })),
  });
  for (let pass = 0; pass < 2; pass++) {
    await relayOutbox(store, (entry) => {
      if (entry.targetId === target.id) throw new Error("down");
    }, { maxAttempts: 1 });
  }
  const seen = (await store.executionOutbox(source.id)).emitted.map((e) => e.state);
  assert.deepEqual(seen, ["waiting", "dead", "held", "held"]);
  const held = (await store.executionOutbox(target.id)).targeting.map((e) => e.state);
  assert.deepEqual(held, ["dead", "held", "held", "held", "held"]);
  return { source, target };
}

Deno.test("executionOutbox() reads as much with 3,000 other outbox rows and executions stored as with 300, all by key: no Query, no Scan", async () => {
  const { client, capacity } = capacityClient();
  const store = new Store(client, { prefix: uniqueName("eo") });
  try {
    await store.ensureTables();
    const { source, target } = await measured(store);
    const measure = async () => {
      const figures: Record<string, { units: number; calls: string[] }> = {};
      for (const [name, id] of [["source", source.id], ["target", target.id]] as const) {
        capacity.units = 0;
        capacity.calls.length = 0;
        const seen = await store.executionOutbox(id);
        figures[name] = { units: capacity.units, calls: [...capacity.calls].sort() };
        assert.ok(seen.emitted.length + seen.targeting.length > 0, name);
      }
      return figures;
    };
    await otherRows(store, 1_000_000, 300);
    const small = await measure();
    await otherRows(store, 2_000_000, 2_700);
    const large = await measure();
    const said = JSON.stringify({ small, large });
    for (const name of ["source", "target"]) {
      assert.deepEqual(large[name], small[name], said);
      assert.ok(!large[name]!.calls.some((c) => /Query|Scan/.test(c)), said);
    }
    console.log(`executionOutbox read units, 300 → 3,000 rows: ${said}`);
  } finally {
    client.destroy();
  }
});

Deno.test("executionOutbox() finds a Python worker's dead entries to a target by its hold, with no source", async () => {
  const prefix = uniqueName("eopy");
  await using store = await Store.create({ endpoint: endpoint(), prefix, otherWriters: true });
  const python = await seedWrite({ endpoint: endpoint(), prefix, emits: 2 }); // target-0, none
  await relayOutbox(store, () => Promise.reject(new Error("down")), { maxAttempts: 1 });
  const { targeting } = await store.executionOutbox("target-0");
  const theirs = python.outbox.find((o) => o.targetId === "target-0")!;
  assert.deepEqual(
    targeting.map((e) => [e.seq, e.sourceId, e.state, e.event?.id]),
    [[theirs.seq, null, "dead", theirs.eventId]],
  );
});

Deno.test("executionOutbox() walks an execution's entries to a target back to the first still pending, and says it may miss some once a Python Put dropped its chains", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "chain" });
  const seqs: number[] = [];
  for (let i = 0; i < 4; i++) {
    seqs.push(
      ...(await store.commit(exe, { emits: [{ target: "T", event: newEvent(`e${i}`) }] }))
        .outbox,
    );
  }
  await store.ackOutbox(seqs[0]!); // delivered: the walk stops before it
  const seen = await store.executionOutbox(exe.id);
  assert.deepEqual(seen.emitted.map((e) => [e.seq, e.state]), [
    [seqs[1], "pending"],
    [seqs[2], "pending"],
    [seqs[3], "pending"],
  ]);
  assert.equal(seen.emittedPartial, false);
  const cut = await store.executionOutbox(exe.id, { limit: 2 });
  assert.deepEqual([cut.emitted.length, cut.emittedPartial], [2, true]);

  using client = testClient();
  await seedPutExecution(client, store.tables.executions.name, {
    ...exe,
    version: exe.version + 1,
  });
  const after = await store.executionOutbox(exe.id);
  assert.deepEqual([after.emitted, after.emittedPartial], [[], true], "its chains are gone");
});
