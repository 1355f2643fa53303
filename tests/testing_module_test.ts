/**
 * The testing module needs no permissions: a user's unit test that imports only
 * `@harel/dynamodb/testing` runs under `deno test --no-prompt` with no `--allow-*` flag.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

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
  StoreConflict,
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
    assert.match(output, /ok \| 2 passed/, output);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
