// Writes whose answer is lost after DynamoDB applied them: a proxy between the
// client and DynamoDB Local forwards a write, lets DynamoDB apply it and cuts the connection
// instead of answering. The request then reaches DynamoDB again: re-sent by the SDK after the
// error (a fresh connection), or by Deno's HTTP client, unseen by the SDK (a kept-alive one).
// No method may answer "nothing happened" for what its own first copy did.
import assert from "node:assert/strict";
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStateStore,
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  OutcomeUnknown,
} from "../../mod.ts";
import { endpoint, freshStateStore, freshStore, testClient } from "../_support/env.ts";
import { type Fault, FaultProxy, type FaultScript } from "../_support/fault_proxy.ts";
import { concurrently, type Variant } from "../_support/concurrent_steps.ts";

const WRITES = ["PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"];

/**
 * Drops the answers of `times` writes (of the `operations` given), after letting `skip` of
 * them through: DynamoDB applies each, the client hears nothing.
 */
function losing(
  times: number,
  { operations = WRITES, skip = 0 }: { operations?: string[]; skip?: number } = {},
): FaultScript {
  let seen = 0;
  return {
    request: ({ operation }): Fault => {
      if (!operations.includes(operation)) return { kind: "pass" };
      seen++;
      return seen > skip && seen <= skip + times ? { kind: "drop-response" } : { kind: "pass" };
    },
  };
}

/** How the request gets re-sent: the connection it was lost on. */
const CONNECTIONS = [
  { name: "on a fresh connection (the SDK retries)", warm: false },
  { name: "on a kept-alive connection (Deno's HTTP client re-sends)", warm: true },
] as const;

/** A client through a new fault proxy. */
function lossyClient() {
  const proxy = new FaultProxy(endpoint());
  const client = new DynamoDBClient({
    endpoint: proxy.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  return {
    proxy,
    client,
    async close() {
      client.destroy();
      await proxy.close();
    },
  };
}

/** A state store through the proxy, and a direct one on the same table to arrange and look. */
async function stateStores(warm: boolean) {
  const direct = await freshStateStore();
  const { proxy, client, close } = lossyClient();
  const lossy = new DynamoDBStateStore(client, { tableName: direct.tableName });
  return {
    direct,
    lossy,
    proxy,
    client,
    /** From now on, `script` decides; a warm store has sent a request on its connection. */
    async lose(script: FaultScript) {
      if (warm) await lossy.exists("warm-up");
      proxy.script = script;
    },
    lost: () => proxy.stats.byKind["drop-response"] ?? 0,
    async [Symbol.asyncDispose]() {
      await close();
      await direct.close();
    },
  };
}

/** An execution store through the proxy, and a direct one on the same tables. */
async function executionStores(warm: boolean) {
  const direct = await freshStore({ traceMax: 5 });
  const { proxy, client, close } = lossyClient();
  const prefix = direct.tables.executions.name.replace(/_executions$/, "");
  const lossy = new DynamoDBStore(client, {
    prefix,
    traceMax: 5,
    ambiguousRetries: 1,
  });
  return {
    direct,
    lossy,
    proxy,
    async lose(script: FaultScript) {
      if (warm) await lossy.load("warm-up");
      proxy.script = script;
    },
    lost: () => proxy.stats.byKind["drop-response"] ?? 0,
    async [Symbol.asyncDispose]() {
      await close();
      await direct.close();
    },
  };
}

async function withTimer(store: DynamoDBStore, fireAt = 10): Promise<Execution> {
  const exe = newExecution({ definition_id: "lost" });
  await store.commit(exe, { timers: [{ action: "schedule", path: "wait", fireAt }] });
  return exe;
}

/** Outbox rows as the Python store writes them: no relay index attributes. */
async function putBareOutboxRows(store: DynamoDBStore, seqs: number[]): Promise<void> {
  using client = testClient();
  for (const seq of seqs) {
    await client.send(
      new PutItemCommand({
        TableName: store.tables.outbox.name,
        Item: {
          seq: { N: String(seq) },
          target_id: { S: "py" },
          event: { S: JSON.stringify(newEvent("py")) },
        },
      }),
    );
  }
}

const isUnknown = (operation: string, key: string) => (error: unknown) =>
  error instanceof OutcomeUnknown && error.operation === operation && error.key === key;

// The cases below, each on each connection with its first answer or two lost, run 8 at a time as
// the steps of one test: most of their time is spent waiting for re-sends.
const variants: Variant[] = [];
const matrix = (name: string, fn: () => Promise<void>) => void variants.push({ name, fn });

for (const { name, warm } of CONNECTIONS) {
  for (const times of [1, 2]) {
    const lostAnswers = times === 1
      ? "its first answer was lost"
      : "its first two answers were lost";

    matrix(`deleteTimer() answers true when ${lostAnswers}, ${name}`, async () => {
      await using env = await executionStores(warm);
      const exe = await withTimer(env.direct);
      await env.lose(losing(times));
      assert.equal(await env.lossy.deleteTimer(exe.id, "wait", 10), true, "the timer was claimed");
      assert.equal(env.lost(), times);
      assert.deepEqual(await env.direct.dueTimers(100), []);
    });

    matrix(
      `deleteTimer() still answers false for a re-scheduled timer when ${lostAnswers}, ${name}`,
      async () => {
        await using env = await executionStores(warm);
        const exe = await withTimer(env.direct, 20);
        await env.lose(losing(times));
        assert.equal(await env.lossy.deleteTimer(exe.id, "wait", 10), false);
        assert.deepEqual((await env.direct.dueTimers(100)).map((t) => t.fireAt), [20]);
      },
    );

    matrix(`adoptRows() counts every row it adopted when ${lostAnswers}, ${name}`, async () => {
      await using env = await executionStores(warm);
      await putBareOutboxRows(env.direct, [901, 902, 903]);
      await env.lose(losing(times));
      assert.equal(await env.lossy.adoptRows("outbox"), 3);
      assert.equal(env.lost(), times);
      assert.deepEqual((await env.direct.pendingOutbox()).map((e) => e.seq), [901, 902, 903]);
    });

    matrix(
      `recordFailure(), retryDeadLetter(), dropDeadLetter() and retryDeadLetters() of outbox entries answer exactly when ${lostAnswers}, ${name}`,
      async () => {
        await using env = await executionStores(warm);
        const { outbox } = await env.direct.commit(newExecution({ definition_id: "lost" }), {
          emits: ["T", "T", "U", "V"].map((target) => ({ target, event: newEvent("e") })),
        });
        const dead = { attempts: 1, retryAt: null, error: "down" };
        await env.lose(losing(times));
        assert.equal(await env.lossy.recordFailure("outbox", outbox[0]!, dead), true);
        for (const seq of outbox.slice(2)) await env.direct.recordFailure("outbox", seq, dead);
        await env.lose(losing(times));
        assert.equal(await env.lossy.retryDeadLetter("outbox", outbox[0]!), true);
        await env.lose(losing(times));
        assert.equal(await env.lossy.dropDeadLetter("outbox", outbox[2]!), true);
        await env.lose(losing(times));
        assert.equal(await env.lossy.retryDeadLetters("outbox"), 1);
        assert.deepEqual(await env.direct.deadLetters("outbox"), []);
        assert.deepEqual(
          (await env.direct.pendingOutbox()).map((e) => e.seq),
          [outbox[0], outbox[1], outbox[3]],
        );
      },
    );

    matrix(`appendTrace() appends its step once when ${lostAnswers}, ${name}`, async () => {
      await using env = await executionStores(warm);
      const exe = newExecution({ definition_id: "lost" });
      await env.direct.commit(exe, { trace: { n: 0 } });
      await env.lose(losing(times));
      await env.lossy.appendTrace(exe.id, { n: 1 });
      assert.equal(env.lost(), times);
      assert.deepEqual((await env.direct.readTrace(exe.id)).map((s) => [s.index, s.n]), [
        [0, 0],
        [1, 1],
      ]);
    });

    matrix(`delete() answers true when ${lostAnswers}, ${name}`, async () => {
      await using env = await stateStores(warm);
      await env.direct.set("k", "v");
      await env.lose(losing(times));
      assert.equal(await env.lossy.delete("k"), true);
      assert.equal(env.lost(), times);
      assert.equal(await env.direct.exists("k"), false);
      assert.equal(await env.lossy.delete("k"), false, "a second delete finds nothing");
    });

    matrix(`expire(key, 0) answers true when ${lostAnswers}, ${name}`, async () => {
      await using env = await stateStores(warm);
      await env.direct.hset("k", "f", 1);
      await env.lose(losing(times));
      assert.equal(await env.lossy.expire("k", 0), true);
      assert.equal(env.lost(), times);
      assert.equal(await env.direct.exists("k"), false);
    });

    matrix(`expire(key, seconds) answers true when ${lostAnswers}, ${name}`, async () => {
      await using env = await stateStores(warm);
      await env.direct.set("k", "v");
      await env.lose(losing(times));
      assert.equal(await env.lossy.expire("k", 600), true);
      assert.ok((await env.direct.ttl("k"))! > 500);
    });

    matrix(`hset() of a new field does not answer 0 when ${lostAnswers}, ${name}`, async () => {
      await using env = await stateStores(warm);
      await env.direct.hset("h", "old", 1);
      await env.lose(losing(times));
      await assert.rejects(env.lossy.hset("h", "new", 2), isUnknown("hset", "h"));
      assert.equal(env.lost(), times);
      assert.deepEqual({ ...await env.direct.hgetall("h") }, { old: 1, new: 2 });
    });

    matrix(`hset() on a missing key answers 1 when ${lostAnswers}, ${name}`, async () => {
      await using env = await stateStores(warm);
      await env.lose(losing(times, { operations: ["PutItem"] }));
      assert.equal(await env.lossy.hset("fresh", "f", 1), 1);
      assert.equal(env.lost(), times);
      assert.deepEqual({ ...await env.direct.hgetall("fresh") }, { f: 1 });
    });

    matrix(
      `hset() migrating a legacy hash answers 1 for a new field when ${lostAnswers}, ${name}`,
      async () => {
        await using env = await stateStores(warm);
        await env.direct.set("legacy", { a: 1 });
        // The first UpdateItem finds no Map (its answer arrives); the migration's is lost.
        await env.lose(losing(times, { operations: ["UpdateItem"], skip: 1 }));
        assert.equal(await env.lossy.hset("legacy", "b", 2), 1);
        assert.equal(env.lost(), times);
        assert.deepEqual({ ...await env.direct.hgetall("legacy") }, { a: 1, b: 2 });
      },
    );

    matrix(`hdel() of a removed field does not answer 0 when ${lostAnswers}, ${name}`, async () => {
      await using env = await stateStores(warm);
      await env.direct.hset("h", "a", 1);
      await env.direct.hset("h", "b", 2);
      await env.lose(losing(times));
      await assert.rejects(env.lossy.hdel("h", "a"), isUnknown("hdel", "h"));
      assert.equal(env.lost(), times);
      assert.deepEqual({ ...await env.direct.hgetall("h") }, { b: 2 });
    });

    matrix(
      `hdel() of a hash's last field does not answer 0 and still deletes the key when ${lostAnswers}, ${name}`,
      async () => {
        await using env = await stateStores(warm);
        await env.direct.hset("h", "a", 1);
        await env.lose(losing(times, { operations: ["UpdateItem"] }));
        await assert.rejects(env.lossy.hdel("h", "a", "b"), isUnknown("hdel", "h"));
        assert.equal(env.lost(), times);
        assert.equal(await env.direct.exists("h"), false);
        const raw = await env.client.send(
          new PutItemCommand({
            TableName: env.direct.tableName,
            Item: { pk: { S: "h" }, value: { S: "1" } },
            ReturnValues: "ALL_OLD",
          }),
        );
        assert.equal(raw.Attributes, undefined, "the emptied item was deleted");
      },
    );

    matrix(
      `hdel() of a legacy hash's last fields answers their count when ${lostAnswers}, ${name}`,
      async () => {
        await using env = await stateStores(warm);
        await env.direct.set("legacy", { a: 1, b: 2 });
        await env.lose(losing(times, { operations: ["TransactWriteItems"] }));
        assert.equal(await env.lossy.hdel("legacy", "a", "b", "c"), 2);
        assert.equal(env.lost(), times);
        assert.equal(await env.direct.exists("legacy"), false);
      },
    );
  }
}

Deno.test("each write answers what its first copy did when its first answer or two were lost and it was re-sent", async (t) => {
  await concurrently(t, variants, 8);
});

/**
 * Drops the answer of the first write and holds its re-sent copy back for `ms`: other writers
 * get in between (more than the three write ids an item keeps).
 */
function losingThenLate(ms: number): FaultScript {
  let seen = 0;
  return {
    request: ({ operation }): Fault => {
      if (!WRITES.includes(operation)) return { kind: "pass" };
      seen++;
      if (seen === 1) return { kind: "drop-response" };
      return seen === 2 ? { kind: "delay", ms } : { kind: "pass" };
    },
  };
}

/** Waits until the proxy has dropped an answer, then lets `writes` through the direct store. */
async function meanwhile(lost: () => number, writes: () => Promise<unknown>): Promise<void> {
  while (lost() === 0) await new Promise((r) => setTimeout(r, 5));
  await writes();
}

for (const { name, warm } of CONNECTIONS) {
  Deno.test(`hdel() does not answer 0 when four other writes come before its re-sent copy, ${name}`, async () => {
    await using env = await stateStores(warm);
    await env.direct.hset("h", "a", 1);
    await env.direct.hset("h", "keep", 1);
    await env.lose(losingThenLate(1000));
    const others = meanwhile(env.lost, async () => {
      for (let i = 0; i < 4; i++) await env.direct.hset("h", `other${i}`, i);
    });
    await assert.rejects(env.lossy.hdel("h", "a"), isUnknown("hdel", "h"));
    await others;
    assert.equal(await env.direct.hget("h", "a"), null);
  });

  Deno.test(`hset() does not answer 0 for a new field when four other writes come before its re-sent copy, ${name}`, async () => {
    await using env = await stateStores(warm);
    await env.direct.hset("h", "keep", 1);
    await env.lose(losingThenLate(1000));
    const others = meanwhile(env.lost, async () => {
      for (let i = 0; i < 4; i++) await env.direct.hset("h", `other${i}`, i);
    });
    await assert.rejects(env.lossy.hset("h", "new", 1), isUnknown("hset", "h"));
    await others;
    assert.equal(await env.direct.hget("h", "new"), 1);
  });
}

Deno.test("when every answer is lost, deleteTimer() throws OutcomeUnknown and the timer is gone", async () => {
  await using env = await executionStores(true);
  const exe = await withTimer(env.direct);
  await env.lose(losing(Infinity));
  const error = await env.lossy.deleteTimer(exe.id, "wait", 10).catch((e) => e);
  assert.ok(isUnknown("deleteTimer", `${exe.id}/wait`)(error), String(error));
  assert.equal(error.name, "OutcomeUnknown");
  assert.deepEqual(await env.direct.dueTimers(100), []);
});

Deno.test("when its answer is lost and its re-sends are throttled, deleteTimer() throws OutcomeUnknown, not the throttle, and the timer is gone", async () => {
  await using env = await executionStores(false);
  const exe = await withTimer(env.direct);
  let writes = 0;
  await env.lose({
    request: ({ operation }): Fault =>
      !WRITES.includes(operation)
        ? { kind: "pass" }
        : writes++ === 0
        ? { kind: "drop-response" }
        : { kind: "throttle" },
  });
  const error = await env.lossy.deleteTimer(exe.id, "wait", 10).catch((e) => e);
  assert.ok(isUnknown("deleteTimer", `${exe.id}/wait`)(error), String(error));
  assert.deepEqual(await env.direct.dueTimers(100), []);
});

Deno.test("when every answer is lost, delete() throws OutcomeUnknown and the key is gone", async () => {
  await using env = await stateStores(true);
  await env.direct.set("k", "v");
  await env.lose(losing(Infinity));
  await assert.rejects(env.lossy.delete("k"), isUnknown("delete", "k"));
  assert.equal(await env.direct.exists("k"), false);
});

Deno.test("two writers on one key, each losing its first answer, never both answer 0 for a new field", async () => {
  await using env = await stateStores(true);
  const other = lossyClient();
  try {
    const second = new DynamoDBStateStore(other.client, { tableName: env.direct.tableName });
    await env.direct.hset("h", "seed", 0);
    await second.exists("warm-up");
    await env.lose(losing(1));
    other.proxy.script = losing(1);
    const answers = await Promise.allSettled([
      env.lossy.hset("h", "x", 1),
      second.hset("h", "x", 2),
    ]);
    const counted = answers.map((a) =>
      a.status === "fulfilled" ? a.value : isUnknown("hset", "h")(a.reason) ? "unknown" : a.reason
    );
    // One of them created the field: it answers 1 or says it cannot tell, never 0 for both.
    assert.ok(counted.some((c) => c === 1 || c === "unknown"), JSON.stringify(counted));
    assert.ok(counted.every((c) => c === 0 || c === 1 || c === "unknown"), String(counted));
    assert.ok([1, 2].includes((await env.direct.hget<number>("h", "x"))!));
  } finally {
    await other.close();
  }
});

Deno.test("two writers removing one field, each losing its first answer, count it at most once", async () => {
  await using env = await stateStores(true);
  const other = lossyClient();
  try {
    const second = new DynamoDBStateStore(other.client, { tableName: env.direct.tableName });
    await env.direct.hset("h", "x", 1);
    await env.direct.hset("h", "keep", 1);
    await second.exists("warm-up");
    await env.lose(losing(1));
    other.proxy.script = losing(1);
    const answers = await Promise.allSettled([env.lossy.hdel("h", "x"), second.hdel("h", "x")]);
    const counts = answers.flatMap((a) => a.status === "fulfilled" ? [a.value] : []);
    for (const a of answers) {
      if (a.status === "rejected") assert.ok(isUnknown("hdel", "h")(a.reason), String(a.reason));
    }
    assert.ok(counts.reduce((n, c) => n + c, 0) <= 1, JSON.stringify(counts));
    if (counts.length === 2) assert.equal(counts[0]! + counts[1]!, 1);
    assert.deepEqual({ ...await env.direct.hgetall("h") }, { keep: 1 });
  } finally {
    await other.close();
  }
});
