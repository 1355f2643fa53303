import assert from "node:assert/strict";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  CommitOutcomeUnknown,
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
} from "../../mod.ts";
import { buildClient } from "../../src/dynamo/connect.ts";
import { endpoint, freshStore, uniqueName } from "../_support/env.ts";
import { type Fault, FaultProxy } from "../_support/fault_proxy.ts";

/** A store talking through a fault proxy, plus a direct store on the same tables to read back. */
async function setup(maxAttempts: number) {
  const direct = await freshStore({ traceMax: 3 });
  const proxy = new FaultProxy(endpoint());
  const client = new DynamoDBClient({
    endpoint: proxy.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts,
  });
  const prefix = direct.tables.executions.name.replace(/_executions$/, "");
  const store = new DynamoDBStore(client, {
    prefix,
    traceMax: 3,
    ambiguousRetries: 2,
  });
  return {
    direct,
    proxy,
    store,
    async [Symbol.asyncDispose]() {
      client.destroy();
      await proxy.close();
      await direct.close();
    },
  };
}

/** Faults only the first `times` TransactWriteItems requests (all when `times` is Infinity). */
function onCommits(fault: Fault, times: number) {
  let hit = 0;
  return {
    request: ({ operation }: { operation: string }): Fault =>
      operation === "TransactWriteItems" && hit++ < times ? fault : { kind: "pass" },
  };
}

const changes = (tag: string) => ({
  emits: [{ target: null, event: newEvent(tag) }, { target: "t", event: newEvent(tag) }],
  spawns: [{ childId: `child-${tag}`, rootPath: "fork", context: {} }],
  processedEventId: `event-${tag}`,
  timers: [{ action: "schedule" as const, path: "wait", fireAt: 10 }],
  trace: { tag },
});

async function started(store: DynamoDBStore): Promise<Execution> {
  const exe = newExecution({ definition_id: "amb" });
  await store.commit(exe, changes("first"));
  return exe;
}

for (
  const [name, fault] of [
    ["response is lost", { kind: "drop-response" }],
    ["response is cut short", { kind: "truncate", bytes: 40 }],
  ] as const
) {
  for (const maxAttempts of [1, 3]) {
    Deno.test(`a commit whose ${name} is re-sent with the same token and applied once (SDK attempts: ${maxAttempts})`, async () => {
      await using env = await setup(maxAttempts);
      const exe = await started(env.store);
      env.proxy.script = onCommits(fault, 1);
      const result = await env.store.commit(exe, changes("second"));
      assert.equal(result.version, 2);
      assert.equal(exe.version, 2);
      assert.equal(env.proxy.stats.faults, 1);
      const outbox = await env.direct.pendingOutbox();
      assert.equal(outbox.length, 4, "no second copy of the outbox entries");
      assert.deepEqual(outbox.slice(2).map((e) => e.seq), result.outbox);
      assert.equal((await env.direct.pendingSpawns()).length, 2);
      assert.deepEqual((await env.direct.readTrace(exe.id)).map((s) => s.index), [0, 1]);
      // The same store carries on.
      await env.store.commit(exe, changes("third"));
      assert.equal((await env.direct.load(exe.id))?.version, 3);
    });
  }
}

Deno.test("when every answer is lost, commit() throws CommitOutcomeUnknown and the commit is there exactly once", async () => {
  await using env = await setup(1);
  const exe = await started(env.store);
  env.proxy.script = onCommits({ kind: "drop-response" }, Infinity);
  const error = await env.store.commit(exe, changes("second")).then(() => null, (e) => e);
  assert.ok(error instanceof CommitOutcomeUnknown, String(error));
  assert.equal(error.name, "CommitOutcomeUnknown");
  assert.equal(error.attemptedVersion, 2);
  assert.equal(exe.version, 1, "the caller's copy is not bumped: it must read back");
  assert.ok(env.proxy.stats.faults >= 3, "re-sent after the first loss");
  // The after state, once: the idempotency token made the re-sends no-ops.
  const stored = await env.direct.load(exe.id);
  assert.equal(stored?.version, 2);
  assert.equal((await env.direct.pendingOutbox()).length, 4);
  assert.equal((await env.direct.pendingSpawns()).length, 2);
  assert.equal(await env.direct.isProcessed(exe.id, "event-second"), true);
  assert.deepEqual((await env.direct.readTrace(exe.id)).map((s) => s.index), [0, 1]);
  // Carry on from what was read back.
  env.proxy.script = { request: () => ({ kind: "pass" }) };
  await env.store.commit(stored!, changes("third"));
  assert.deepEqual((await env.direct.readTrace(exe.id)).map((s) => s.index), [0, 1, 2]);
});

for (const maxAttempts of [1, 2]) {
  Deno.test(`a commit whose answer is lost and whose re-sends are throttled throws CommitOutcomeUnknown, not the throttle: it was applied (SDK attempts: ${maxAttempts})`, async () => {
    await using env = await setup(maxAttempts);
    const exe = await started(env.store);
    let commits = 0;
    env.proxy.script = {
      request: ({ operation }) =>
        operation !== "TransactWriteItems"
          ? { kind: "pass" }
          : commits++ === 0
          ? { kind: "drop-response" }
          : { kind: "throttle" },
    };
    const error = await env.store.commit(exe, changes("second")).then(() => null, (e) => e);
    assert.ok(error instanceof CommitOutcomeUnknown, String(error));
    assert.equal(exe.version, 1, "the caller's copy is not bumped: it must read back");
    assert.equal((await env.direct.load(exe.id))?.version, 2, "the first copy was applied");
  });
}

Deno.test("when no request gets through, commit() throws CommitOutcomeUnknown and nothing of it is written", async () => {
  await using env = await setup(1);
  const exe = await started(env.store);
  env.proxy.script = onCommits({ kind: "reset" }, Infinity);
  await assert.rejects(env.store.commit(exe, changes("second")), CommitOutcomeUnknown);
  assert.equal((await env.direct.load(exe.id))?.version, 1);
  assert.equal((await env.direct.pendingOutbox()).length, 2);
  assert.equal((await env.direct.pendingSpawns()).length, 1);
  assert.equal(await env.direct.isProcessed(exe.id, "event-second"), false);
  assert.deepEqual((await env.direct.readTrace(exe.id)).map((s) => s.index), [0]);
  env.proxy.script = { request: () => ({ kind: "pass" }) };
  await env.store.commit(exe, changes("again"));
  assert.deepEqual((await env.direct.readTrace(exe.id)).map((s) => s.index), [0, 1]);
});

Deno.test("delays, resets and refused connections on reads are retried without changing answers", async () => {
  await using env = await setup(3);
  const exe = await started(env.store);
  const cycle: Fault[] = [{ kind: "delay", ms: 200 }, { kind: "reset" }, { kind: "pass" }];
  let n = 0;
  env.proxy.script = {
    request: ({ operation }) =>
      operation === "TransactWriteItems" ? { kind: "pass" } : cycle[n++ % cycle.length]!,
    refuseConnection: (index) => index % 2 === 1,
  };
  for (let i = 0; i < 5; i++) {
    assert.equal((await env.store.load(exe.id))?.version, 1);
    assert.deepEqual(await env.store.loadForEvent(exe.id, "event-first"), {
      execution: await env.direct.load(exe.id),
      processed: true,
    });
  }
  assert.ok(env.proxy.stats.faults > 0 && env.proxy.stats.refused > 0);
});

Deno.test("a transaction that DynamoDB cancels for a conflict is retried with a new token", async () => {
  // Many writers on one item at once make DynamoDB report TransactionConflict; the store
  // retries those and the final losers get StoreConflict, never a raw cancellation.
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "hot" });
  await store.save(exe);
  for (let round = 0; round < 5; round++) {
    const current = (await store.load(exe.id))!;
    const results = await Promise.allSettled(
      Array.from(
        { length: 8 },
        () => store.commit(structuredClone(current), changes(uniqueName("r"))),
      ),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    for (const r of results) {
      if (r.status === "rejected") assert.equal((r.reason as Error).name, "StoreConflict");
    }
  }
});

Deno.test("a commit whose answer comes later than the request timeout is applied once", async () => {
  const direct = await freshStore();
  await using proxy = new FaultProxy(endpoint());
  const client = buildClient({ endpoint: proxy.endpoint, requestTimeoutMs: 300 });
  try {
    const prefix = direct.tables.executions.name.replace(/_executions$/, "");
    const store = new DynamoDBStore(client, { prefix });
    const exe = await started(store);
    // The first send reaches DynamoDB only after the client gave up on it; the re-send with
    // the same token must not apply the commit a second time.
    proxy.script = onCommits({ kind: "delay", ms: 600 }, 1);
    const result = await store.commit(exe, changes("slow"));
    assert.equal(result.version, 2);
    await new Promise((r) => setTimeout(r, 700)); // let the slow first send land
    assert.equal((await direct.load(exe.id))?.version, 2);
    assert.equal((await direct.pendingOutbox()).length, 4);
    assert.equal((await direct.pendingSpawns()).length, 2);
  } finally {
    client.destroy();
    await direct.close();
  }
});
