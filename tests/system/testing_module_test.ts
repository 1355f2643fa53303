/**
 * The testing module needs no permissions: a user's unit test that imports only
 * `@harel/dynamodb/testing` runs under `deno test --no-prompt` with no `--allow-*` flag.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

const USER_TEST = `
import assert from "node:assert/strict";
import {
  type Event,
  type Execution,
  type ExecutionStore,
  executionStoreConformance,
  MemoryStateStore,
  MemoryStore,
  newEvent,
  newExecution,
  relayOutbox,
  relaySpawns,
  StoreConflict,
  sweepTimers,
  timeoutEvent,
} from "@harel/dynamodb/testing";

async function startOrder(store: ExecutionStore): Promise<Execution> {
  const exe = newExecution({ definition_id: "order", context: { total: 42 } });
  await store.save(exe);
  return exe;
}

Deno.test("a unit test of user code runs on the twins", async () => {
  const store = new MemoryStore();
  const exe = await startOrder(store);
  const paid: Event = newEvent("order.paid", { amount: 42 });
  const loaded = await store.loadForEvent(exe.id, paid.id);
  assert.equal(loaded.execution?.version, 1);
  const stale = structuredClone(exe);
  await store.commit(exe, { processedEventId: paid.id });
  await assert.rejects(store.commit(stale), StoreConflict);
  let now = 0;
  const state = new MemoryStateStore({ now: () => now });
  await state.set("otp", "1234", { ttl: 60 });
  now += 61_000;
  assert.equal(await state.get("otp"), null);
});

Deno.test("the relay, the spawn relay and the sweeper run on the twin", async () => {
  const store = new MemoryStore();
  const exe = newExecution({ definition_id: "order" });
  await store.commit(exe, {
    emits: [
      { target: null, event: newEvent("order.created") },
      { target: "parent", event: newEvent("child.started") },
    ],
    spawns: [{ childId: "child-1", rootPath: "order.pick", context: {} }],
    timers: [{ action: "schedule", path: "order.pay", fireAt: 1_700_000_000 }],
  });
  const delivered: string[] = [];
  const relayed = await relayOutbox(store, async (entry) => {
    delivered.push(\`\${entry.targetId ?? "(broadcast)"} \${entry.event.kind}\`);
  });
  assert.deepEqual([relayed.delivered, relayed.failed, relayed.setAside], [2, 0, 0]);
  assert.deepEqual(delivered.sort(), ["(broadcast) order.created", "parent child.started"]);
  const started: string[] = [];
  const spawned = await relaySpawns(store, async (s) => void started.push(s.childId));
  assert.deepEqual([spawned.delivered, spawned.failed, spawned.setAside], [1, 0, 0]);
  assert.deepEqual(started, ["child-1"]);
  const fired: string[] = [];
  const swept = await sweepTimers(store, async (_timer, event) => void fired.push(event.id), {
    now: 1_700_000_001,
  });
  assert.deepEqual([swept.delivered, swept.failed, swept.setAside], [1, 0, 0]);
  assert.deepEqual(fired, [timeoutEvent(exe.id, "order.pay", 1_700_000_000).id]);
  assert.equal(fired[0], \`timeout:\${exe.id}:order.pay:1700000000.0\`);
  assert.deepEqual(await store.pendingOutbox(), []);
  assert.deepEqual(await store.dueTimers(1_800_000_000), []);
});

Deno.test("the conformance suite runs on the twin", (t) =>
  executionStoreConformance(t, (options) => Promise.resolve(new MemoryStore(options))));
`;

Deno.test("a test importing only @harel/dynamodb/testing passes with no permissions", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harel_testing_module_" });
  try {
    const file = `${dir}/user_test.ts`;
    await Deno.writeTextFile(file, USER_TEST);
    const { code, stdout, stderr } = await new Deno.Command("deno", {
      // --config: resolve "@harel/dynamodb/testing" to this package, as a user's import map would.
      args: ["test", "--no-prompt", "--config", new URL("deno.json", ROOT).pathname, file],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const output = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
    assert.doesNotMatch(output, /NotCapable|Requires \w+ access/, output);
    assert.equal(code, 0, output);
    assert.match(output, /ok \| 3 passed/, output);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
