// Hostile tests: what a Python harel worker (the seed) leaves in the execution store's tables.
// Each test fails on the code it was written against and names the behaviour a fix must give.
import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { newEvent, newExecution, relayOutbox, sweepTimers } from "../../mod.ts";
import { freshStore, testClient } from "../_support/env.ts";

// Python's json.dumps (allow_nan=True, its default) writes NaN and ±Infinity as bare words, and
// puts a space after ":" and ",". These are its bytes for the documents below.
const PY_EVENT = '{"id": "py-event-1", "kind": "scored", "data": {"score": NaN, "top": Infinity}}';
const PY_STEP = '{"event": "scored", "score": NaN}';
const PY_CONTEXT = '{"ratio": -Infinity, "name": "x"}';

Deno.test("entries a Python worker wrote with NaN in their JSON read as null, and never wedge a reader", async (t) => {
  await using store = await freshStore();
  using client = testClient();
  const exe = newExecution({ definition_id: "py" });
  // One entry of ours, before the Python worker's: a relay must be able to deliver it.
  await store.commit(exe, {
    emits: [{ target: "a", event: newEvent("ours") }],
    trace: { step: "ours" },
  });
  const put = (table: string, item: Record<string, { S: string } | { N: string }>) =>
    client.send(new PutItemCommand({ TableName: table, Item: item }));
  await put(store.tables.outbox.name, {
    seq: { N: "900000001" },
    target_id: { S: "b" },
    event: { S: PY_EVENT },
  });
  await put(store.tables.spawns.name, {
    seq: { N: "900000002" },
    parent_id: { S: exe.id },
    child_id: { S: "child-1" },
    root_path: { S: "fork.a" },
    context: { S: PY_CONTEXT },
  });
  await put(store.tables.trace.name, {
    execution_id: { S: exe.id },
    idx: { N: "1" },
    entry: { S: PY_STEP },
  });
  const pyExe = newExecution({ definition_id: "py" });
  await put(store.tables.executions.name, {
    id: { S: pyExe.id },
    data: {
      S: JSON.stringify({ ...pyExe, version: 1 }).replace(
        '"context":{}',
        '"context": {"score": NaN}',
      ),
    },
    version: { N: "1" },
    definition_id: { S: "py" },
  });

  await t.step("pendingOutbox() reads the Python entry, NaN as null", async () => {
    const entries = await store.pendingOutbox();
    assert.deepEqual(entries.map((e) => e.event.kind), ["ours", "scored"]);
    assert.equal(entries[1]!.event.data.score, null);
  });
  await t.step("relayOutbox() delivers both entries", async () => {
    const delivered: string[] = [];
    const report = await relayOutbox(store, (entry) => {
      delivered.push(entry.event.kind);
      return Promise.resolve();
    });
    assert.deepEqual([report.delivered, report.failed, report.setAside], [2, 0, 0]);
    assert.deepEqual(delivered.sort(), ["ours", "scored"]);
  });
  await t.step("pendingSpawns() reads a context with -Infinity", async () => {
    const spawns = await store.pendingSpawns();
    assert.equal(spawns.length, 1);
    assert.deepEqual(spawns[0]!.context, { ratio: null, name: "x" });
  });
  await t.step("readTrace() reads a step with NaN", async () => {
    const steps = await store.readTrace(exe.id);
    assert.deepEqual(steps.map((s) => s.index), [0, 1]);
    assert.equal(steps[1]!.score, null);
  });
  await t.step("listExecutions() lists it", async () => {
    const page = await store.listExecutions({ definitionId: "py" });
    assert.deepEqual(page.items.map((item) => item.id).sort(), [exe.id, pyExe.id].sort());
  });
  await t.step("load() reads an execution whose context holds NaN", async () => {
    const loaded = await store.load(pyExe.id);
    assert.equal(loaded?.version, 1);
    assert.equal(loaded?.context.score, null);
  });
});

Deno.test("a timer whose fire_at another writer stored with more digits than a double is swept once, not every pass", async () => {
  await using store = await freshStore();
  using client = testClient();
  // str(Decimal(1700000000.1)) in Python: boto3 takes it (31 digits, exact), and it reads
  // back here as the double 1700000000.1.
  await client.send(
    new PutItemCommand({
      TableName: store.tables.timers.name,
      Item: {
        execution_id: { S: "py-exe" },
        path: { S: "order.waiting" },
        fire_at: { N: "1700000000.099999904632568359375" },
      },
    }),
  );
  const [timer] = await store.dueTimers(1_700_000_001);
  assert.equal(timer?.fireAt, 1_700_000_000.1);
  const fired: string[] = [];
  const fire = (_: unknown, event: { id: string }) => {
    fired.push(event.id);
    return Promise.resolve();
  };
  await sweepTimers(store, fire, { now: 1_700_000_001 });
  await sweepTimers(store, fire, { now: 1_700_000_001 });
  await sweepTimers(store, fire, { now: 1_700_000_001 });
  // At least once is fine; on every pass forever is not: the first pass must claim it.
  assert.deepEqual(fired, ["timeout:py-exe:order.waiting:1700000000.1"]);
  assert.deepEqual(await store.dueTimers(1_700_000_001), []);
});
