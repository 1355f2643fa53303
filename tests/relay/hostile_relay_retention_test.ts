// Hostile review of the relay rework (#18) and retention (#21), against DynamoDB Local: another
// writer on the same tables, lost answers, limits, and the timer index. Each test states the
// behaviour the contract promises; see the review report for what fails today.
import assert from "node:assert/strict";
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  type OutboxEntry,
  relayOutbox,
  sweepTimers,
} from "../../mod.ts";
import { endpoint, freshStore, testClient } from "../_support/env.ts";
import { FaultProxy } from "../_support/fault_proxy.ts";

/** A raw outbox row, as another writer (or a bug) could leave it. */
async function putRaw(store: DynamoDBStore, item: Record<string, unknown>) {
  using client = testClient();
  // deno-lint-ignore no-explicit-any
  await client.send(new PutItemCommand({ TableName: store.tables.outbox.name, Item: item as any }));
}

/** The Python store's commit: a whole-item Put of the execution (drops every extra attribute). */
async function pythonPut(store: DynamoDBStore, exe: Execution) {
  using client = testClient();
  const next = { ...exe, version: exe.version + 1 };
  await client.send(
    new PutItemCommand({
      TableName: store.tables.executions.name,
      Item: {
        id: { S: exe.id },
        data: { S: JSON.stringify(next) },
        version: { N: String(next.version) },
        definition_id: { S: exe.definition_id },
      },
    }),
  );
  exe.version = next.version;
}

const collect = (seen: number[]) => (entry: OutboxEntry) =>
  Promise.resolve(void seen.push(entry.seq));

/** A store on `direct`'s tables whose calls go through a fault proxy (the SDK retries 3 times). */
function behindProxy(direct: DynamoDBStore, options: { timerIndex?: boolean } = {}) {
  const proxy = new FaultProxy(endpoint());
  const client = new DynamoDBClient({
    endpoint: proxy.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 3,
  });
  const prefix = direct.tables.executions.name.replace(/_executions$/, "");
  const store = new DynamoDBStore(client, { prefix, ...options });
  return {
    proxy,
    store,
    /** The next request of `operation` is applied and its answer lost; the SDK sends it again. */
    dropOnce(operation: string) {
      let hit = 0;
      proxy.script = {
        request: (info) =>
          info.operation === operation && hit++ === 0
            ? { kind: "drop-response" }
            : { kind: "pass" },
      };
    },
    async [Symbol.asyncDispose]() {
      client.destroy();
      await proxy.close();
    },
  };
}

async function outcome<T>(call: () => Promise<T>): Promise<T | Error> {
  try {
    return await call();
  } catch (error) {
    return error as Error;
  }
}

// --- lost answers ------------------------------------------------------------------------

Deno.test("deleteExecution() whose DeleteItem answer is lost either says it removed the execution or raises an outcome-unknown error, never `execution: false`", async () => {
  await using direct = await freshStore();
  await using env = behindProxy(direct);
  const exe = newExecution({ definition_id: "d" });
  await direct.save(exe);
  env.dropOnce("DeleteItem");
  const result = await outcome(() => env.store.deleteExecution(exe.id));
  assert.equal(await direct.load(exe.id), null, "the first send applied");
  if (result instanceof Error) {
    assert.match(result.name, /OutcomeUnknown/, String(result));
  } else {
    assert.equal(result.execution, true, "it did remove a live execution");
  }
});

Deno.test("REGRESSION (passes today): recordFailure, retryDeadLetter and dropDeadLetter answer exactly when their answer is lost", async () => {
  await using direct = await freshStore();
  await using env = behindProxy(direct);
  const exe = newExecution({ definition_id: "d" });
  await direct.save(exe);
  const { outbox } = await direct.commit(exe, {
    emits: [1, 2].map((n) => ({ target: `T${n}`, event: newEvent("e") })),
    timers: [{ action: "schedule", path: "p", fireAt: 100 }],
  });
  const timer = { executionId: exe.id, path: "p", fireAt: 100 };
  env.dropOnce("UpdateItem");
  assert.equal(
    await env.store.recordFailure("outbox", outbox[0]!, { attempts: 1, retryAt: null, error: "x" }),
    true,
  );
  env.dropOnce("UpdateItem");
  assert.equal(await env.store.retryDeadLetter("outbox", outbox[0]!), true);
  await direct.recordFailure("outbox", outbox[1]!, { attempts: 1, retryAt: null, error: "x" });
  env.dropOnce("DeleteItem");
  assert.equal(await env.store.dropDeadLetter("outbox", outbox[1]!), true);
  env.dropOnce("UpdateItem");
  assert.equal(
    await env.store.recordFailure("timers", timer, { attempts: 1, retryAt: null, error: "x" }),
    true,
  );
  env.dropOnce("UpdateItem");
  assert.equal(await env.store.retryDeadLetter("timers", timer), true);
  assert.deepEqual(await direct.deadLetters("outbox"), []);
  assert.deepEqual((await direct.pendingOutbox()).map((e) => e.seq), [outbox[0]]);
  assert.deepEqual(await direct.dueTimers(1000), [timer]);
});

// --- order per (source, target) with the inline { seqs } delivery ------------------------

Deno.test("relayOutbox({ seqs }) never delivers an entry ahead of a pending earlier entry of the same source and target, also after that execution emitted to more than 100 targets", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "d" });
  await store.save(exe);
  const { outbox: [first] } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("first") }],
  });
  for (let c = 0; c < 5; c++) {
    await store.commit(exe, {
      emits: Array.from(
        { length: 25 },
        (_, i) => ({ target: `other-${c}-${i}`, event: newEvent("o") }),
      ),
    });
  }
  const { outbox: [second] } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("second") }],
  });
  const seen: number[] = [];
  await relayOutbox(store, collect(seen), { seqs: [second!] });
  assert.deepEqual(
    seen,
    [],
    `seq ${second} delivered while ${first} of the same source to T is pending`,
  );
});

Deno.test("relayOutbox({ seqs }) never delivers an entry ahead of a pending earlier entry of the same source and target after a Python worker's whole-item Put of the execution", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "d" });
  await store.save(exe);
  const { outbox: [first] } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("first") }],
  });
  await pythonPut(store, exe); // drops outbox_last
  const { outbox: [second] } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("second") }],
  });
  const seen: number[] = [];
  await relayOutbox(store, collect(seen), { seqs: [second!] });
  assert.deepEqual(
    seen,
    [],
    `seq ${second} delivered while ${first} of the same source to T is pending`,
  );
});

Deno.test("REGRESSION (passes today): two concurrent relay passes plus inline deliveries, with a flaky receiver, keep order per source and target and leave nothing pending", async () => {
  await using writer = await freshStore();
  const prefix = writer.tables.executions.name.replace(/_executions$/, "");
  await using r1 = await DynamoDBStore.create({ endpoint: endpoint(), prefix });
  await using r2 = await DynamoDBStore.create({ endpoint: endpoint(), prefix });
  const sources = Array.from({ length: 4 }, () => newExecution({ definition_id: "s" }));
  for (const s of sources) await writer.save(s);
  const highest = new Map<string, number>();
  const delivered = new Set<number>();
  const violations: string[] = [];
  const deliver = async (e: OutboxEntry) => {
    await new Promise((r) => setTimeout(r, Math.random() * 5));
    if (Math.random() < 0.15) throw new Error("flaky");
    if (delivered.has(e.seq)) return; // the receiver dedupes
    delivered.add(e.seq);
    const key = `${e.event.data.source}|${e.targetId}`;
    const last = highest.get(key) ?? 0;
    if (last > e.seq) violations.push(`${key}: ${e.seq} after ${last}`);
    highest.set(key, Math.max(last, e.seq));
  };
  const opts = { backoff: { minSeconds: 0, maxSeconds: 0 }, maxAttempts: 1000, limit: 7 };
  let stop = false;
  const relays = [r1, r2].map(async (r) => {
    while (!stop) await relayOutbox(r, deliver, opts);
  });
  let committed = 0;
  await Promise.all(sources.map(async (s) => {
    for (let i = 0; i < 15; i++) {
      const { outbox } = await writer.commit(s, {
        emits: ["A", "B"].map((t) => ({ target: t, event: newEvent("e", { source: s.id, i }) })),
      });
      committed += outbox.length;
      await relayOutbox(writer, deliver, { ...opts, seqs: outbox });
    }
  }));
  stop = true;
  await Promise.all(relays);
  for (let i = 0; i < 20 && (await writer.pendingOutbox()).length; i++) {
    await relayOutbox(r1, deliver, opts);
  }
  assert.deepEqual(violations, []);
  assert.equal(delivered.size, committed);
  assert.deepEqual(await writer.pendingOutbox({ limit: Infinity }), []);
});

// --- one bad row ------------------------------------------------------------------------

Deno.test("an unreadable outbox row set aside by an earlier pass never silently blocks its target: later entries (of its source and of others) are delivered or dead-lettered", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "d" });
  const other = newExecution({ definition_id: "d" });
  await store.save(exe);
  await store.save(other);
  const { outbox: [a] } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("a") }],
  });
  // Another writer (or a bug) garbles the row: the next pass sets it aside.
  await putRaw(store, { seq: { N: String(a) }, target_id: { S: "T" }, event: { S: "{garbled" } });
  assert.equal((await relayOutbox(store, collect([]))).setAside, 1);
  const { outbox: [b] } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("b") }],
  });
  const { outbox: [c] } = await store.commit(other, {
    emits: [{ target: "T", event: newEvent("c") }],
  });
  const seen: number[] = [];
  for (let pass = 0; pass < 3; pass++) await relayOutbox(store, collect(seen));
  const dead = (await store.deadLetters("outbox")).map((d) => d.key);
  const pending = (await store.pendingOutbox()).map((e) => e.seq);
  for (const seq of [b!, c!]) {
    assert.ok(
      seen.includes(seq) || dead.includes(seq),
      `seq ${seq} neither delivered nor dead-lettered (seen ${seen}, dead ${dead}, pendingOutbox ${pending})`,
    );
  }
});

Deno.test("an outbox row whose target_id is a number is set aside, never delivered to the null target", async () => {
  await using store = await freshStore();
  await putRaw(store, {
    seq: { N: "7" },
    target_id: { N: "5" },
    event: { S: JSON.stringify(newEvent("x")) },
  });
  const got: OutboxEntry[] = [];
  const report = await relayOutbox(store, (e) => Promise.resolve(void got.push(e)));
  assert.deepEqual(got.map((e) => [e.seq, e.targetId]), [], "delivered to the wrong target");
  assert.equal(report.setAside, 1);
  assert.deepEqual((await store.deadLetters("outbox")).map((d) => d.key), [7]);
});

Deno.test("an outbox row with a negative or fractional seq costs only itself: the pass settles and every other delivered entry is acknowledged", async () => {
  await using store = await freshStore();
  const event = { S: JSON.stringify(newEvent("x")) };
  for (const seq of ["-1", "1.5", "3", "4"]) {
    await putRaw(store, { seq: { N: seq }, target_id: { S: `t${seq}` }, event });
  }
  const first: number[] = [];
  const report = await outcome(() => relayOutbox(store, collect(first)));
  assert.ok(!(report instanceof Error), `the pass rejected: ${report}`);
  const again: number[] = [];
  await outcome(() => relayOutbox(store, collect(again)));
  assert.ok(!again.includes(3) && !again.includes(4), `re-delivered on every pass: ${again}`);
});

Deno.test("an outbox row whose seq a double cannot hold (2^53 + 1) is delivered or dead-lettered, never skipped unseen forever", async () => {
  await using store = await freshStore();
  await putRaw(store, {
    seq: { N: "9007199254740993" },
    target_id: { S: "T" },
    event: { S: JSON.stringify(newEvent("x")) },
  });
  const seen: number[] = [];
  for (let pass = 0; pass < 2; pass++) await relayOutbox(store, collect(seen));
  const dead = await store.deadLetters("outbox");
  assert.ok(seen.length > 0 || dead.length > 0, "neither delivered nor dead-lettered");
});

// --- limits -----------------------------------------------------------------------------

Deno.test("an outbox entry near 400 KB whose delivery keeps failing waits its backoff and is dead-lettered after maxAttempts", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "d" });
  await store.save(exe);
  // The largest event a commit accepts.
  let size = 409_600;
  for (;;) {
    const error = await outcome(() =>
      store.commit(exe, {
        emits: [{ target: "T", event: newEvent("big", { pad: "x".repeat(size) }) }],
      })
    );
    if (!(error instanceof RangeError)) break;
    size -= 20;
  }
  const longError = new Error("界".repeat(5000)); // a receiver's long error page
  const fail = () => Promise.reject(longError);
  const errors: unknown[] = [];
  const options = { maxAttempts: 1, onError: (e: unknown) => errors.push(e) };
  const passes = [];
  for (let pass = 0; pass < 3; pass++) {
    passes.push((await relayOutbox(store, fail, options)).failed);
  }
  assert.deepEqual(
    passes,
    [1, 0, 0],
    "dead-lettered at its first failure (maxAttempts 1), then left alone",
  );
  assert.equal((await store.deadLetters("outbox")).length, 1);
  assert.deepEqual(
    errors.filter((e) => e !== longError).map(String),
    [],
    "recording the failure failed",
  );
});

// --- the timer index ---------------------------------------------------------------------

Deno.test("with timerIndex, a failed timer due for its retry fires although `limit` earlier failed timers still wait for theirs", async () => {
  await using store = await freshStore({ timerIndex: true });
  const exe = newExecution({ definition_id: "d" });
  await store.commit(exe, {
    timers: ["a", "b", "c"].map((path, i) => ({
      action: "schedule" as const,
      path,
      fireAt: 100 + i,
    })),
  });
  const fail = () => Promise.reject(new Error("down"));
  // a and b fail and wait an hour; then c fails with no backoff: it is due again at once.
  assert.equal(
    (await sweepTimers(store, fail, { limit: 2, backoff: { minSeconds: 3600 } })).failed,
    2,
  );
  assert.equal(
    (await sweepTimers(store, fail, { limit: 2, backoff: { minSeconds: 0, maxSeconds: 0 } }))
      .failed,
    1,
  );
  const fired: string[] = [];
  await sweepTimers(store, (t) => Promise.resolve(void fired.push(t.path)), { limit: 2 });
  assert.deepEqual(fired, ["c"], "c is due, a and b are not");
});
