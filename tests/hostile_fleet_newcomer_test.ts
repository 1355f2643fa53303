// Hostile review (fleet, newcomer, mistakes) after #18 and #19: a Python worker and Deno relays on
// the same tables, lost answers, and the mistakes a Deno user makes. Each test states the expected
// behaviour; the ones not marked REGRESSION failed on the code they were written against.
import assert from "node:assert/strict";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  type OutboxEntry,
  relayOutbox,
  StoreConflict,
  sweepTimers,
} from "../mod.ts";
import { endpoint, freshStore, pause, testClient, uniqueName } from "./_env.ts";
import { FaultProxy } from "./_fault_proxy.ts";

const PY_WORKER = new URL("./_hostile_py_worker.py", import.meta.url).pathname;

Deno.test("REGRESSION (passes today): with a Python worker Putting executions and bare outbox rows, Deno relays that fail, retry and dead-letter never break per (source, target) order and lose nothing", async () => {
  await using s1 = await freshStore();
  const prefix = s1.tables.outbox.name.replace(/_outbox$/, "");
  await using s2 = await DynamoDBStore.create({ endpoint: endpoint(), prefix });
  const stores = [s1, s2];
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    const exe = newExecution({ definition_id: "fleet", status: "RUNNING" });
    await s1.save(exe);
    ids.push(exe.id);
  }
  let rnd = 12345;
  const random = () => ((rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const seen = new Map<string, OutboxEntry>(); // event id -> first successful delivery
  const order: OutboxEntry[] = [];
  const written = new Set<string>(); // Deno event ids committed
  const errors: unknown[] = [];
  let failing = true;
  const deliver = async (entry: OutboxEntry) => {
    await pause(random() * 3);
    if (failing && random() < 0.3) throw new Error("boom");
    if (!seen.has(entry.event.id)) {
      seen.set(entry.event.id, entry);
      order.push(entry);
    }
  };
  const onError = (error: unknown) => {
    if (!(error instanceof Error && error.message === "boom")) errors.push(error);
  };
  const retry = { maxAttempts: 3, backoff: { minSeconds: 0, maxSeconds: 0 }, onError };
  const python = new Deno.Command("python3", {
    args: [PY_WORKER, endpoint(), prefix, ids.join(","), "8"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const until = Date.now() + 8000;
  const writer = async (w: number) => {
    while (Date.now() < until) {
      const store = stores[w % 2]!;
      const id = ids[Math.floor(random() * ids.length)]!;
      const exe = await store.load(id) as Execution;
      const n = ((exe.context.n as number | undefined) ?? 0) + 1;
      exe.context.n = n;
      const v = exe.version + 1;
      const events = [
        newEvent("deno", { src: id, n, w, v }),
        newEvent("deno", { src: id, n, w, v }),
      ];
      try {
        const { outbox } = await store.commit(exe, {
          emits: [{ target: "A", event: events[0]! }, { target: "B", event: events[1]! }],
        });
        for (const e of events) written.add(e.id);
        if (random() < 0.5) await relayOutbox(store, deliver, { ...retry, seqs: outbox });
      } catch (error) {
        if (!(error instanceof StoreConflict)) throw error;
      }
    }
  };
  const relay = async (store: DynamoDBStore) => {
    while (Date.now() < until) {
      await relayOutbox(store, deliver, { ...retry, limit: 7 });
      await pause(20);
    }
  };
  const operator = async () => {
    while (Date.now() < until) {
      for (const letter of await s2.deadLetters("outbox")) {
        await s2.retryDeadLetter("outbox", letter.key);
      }
      await pause(300);
    }
  };
  await Promise.all([writer(0), writer(1), writer(2), relay(s1), relay(s2), operator()]);
  const py = await python;
  assert.equal(py.code, 0, new TextDecoder().decode(py.stderr));
  failing = false;
  for (let i = 0; i < 50; i++) {
    for (const letter of await s1.deadLetters("outbox")) {
      await s1.retryDeadLetter("outbox", letter.key);
    }
    await relayOutbox(s1, deliver, retry);
    if ((await s1.pendingOutbox({ limit: Infinity })).length === 0) break;
  }
  assert.deepEqual(errors, []);
  assert.deepEqual(await s1.pendingOutbox({ limit: Infinity }), [], "nothing stuck");
  const lost = [...written].filter((id) => !seen.has(id));
  assert.deepEqual(lost, [], "every Deno entry delivered");
  // Per (source, target): the first deliveries of Deno entries come in commit order.
  const last = new Map<string, number>();
  for (const entry of order) {
    const data = entry.event.data as { src: string; n: number };
    if (entry.event.kind !== "deno") continue;
    const key = `${data.src}->${entry.targetId}`;
    assert.ok(
      data.n > (last.get(key) ?? 0),
      `${key}: n=${data.n} (seq ${entry.seq}) after n=${last.get(key)}`,
    );
    last.set(key, data.n);
  }
  // Seqs rise per execution in commit order, Python's commits (whole-item Puts) in between.
  const bySource = new Map<string, { v: number; seq: number }[]>();
  for (const entry of seen.values()) {
    const data = entry.event.data as { src: string; v: number };
    bySource.set(data.src, [...bySource.get(data.src) ?? [], { v: data.v, seq: entry.seq }]);
  }
  for (const [src, rows] of bySource) {
    rows.sort((a, b) => a.v - b.v || a.seq - b.seq);
    for (let i = 1; i < rows.length; i++) {
      assert.ok(
        rows[i]!.seq > rows[i - 1]!.seq,
        `${src}: v${rows[i]!.v} seq ${rows[i]!.seq} after v${rows[i - 1]!.v} seq ${
          rows[i - 1]!.seq
        }`,
      );
    }
  }
  using raw = testClient();
  const left = await raw.send(new ScanCommand({ TableName: s1.tables.outbox.name }));
  assert.deepEqual(left.Items, [], "the outbox is empty: Python rows delivered too");
  console.log(
    `python commits: ${
      new TextDecoder().decode(py.stdout).trim()
    }, deno entries ${written.size}, delivered ${seen.size}`,
  );
});

const CLI = new URL("../src/cli.ts", import.meta.url).pathname;

async function cli(store: DynamoDBStore, ...args: string[]) {
  const prefix = store.tables.outbox.name.replace(/_outbox$/, "");
  const out = await new Deno.Command("deno", {
    args: ["run", "-A", CLI, ...args, "--prefix", prefix, "--endpoint", endpoint()],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** A store with one dead timer of `exe` at path "p", fireAt 1_700_000_001. */
async function deadTimer(store: DynamoDBStore) {
  const exe = newExecution({ definition_id: "d" });
  await store.commit(exe, { timers: [{ action: "schedule", path: "p", fireAt: 1_700_000_001 }] });
  const report = await sweepTimers(store, () => Promise.reject(new Error("boom")), {
    now: 1_700_000_100,
    maxAttempts: 1,
    onError: () => {},
  });
  assert.equal(report.setAside, 1);
  return exe;
}

Deno.test("dropDeadLetter of a timer named with a fireAt it does not have answers false and keeps the dead letter (as retryDeadLetter does)", async () => {
  await using store = await freshStore();
  const exe = await deadTimer(store);
  const wrong = { executionId: exe.id, path: "p", fireAt: 1_600_000_000 };
  assert.equal(await store.retryDeadLetter("timers", wrong), false); // holds today
  assert.equal(await store.dropDeadLetter("timers", wrong), false);
  assert.deepEqual(
    (await store.deadLetters("timers")).map((letter) => letter.key),
    [{ executionId: exe.id, path: "p", fireAt: 1_700_000_001 }],
  );
});

Deno.test("cli drop of a timer dead letter with a mistyped FIRE_AT deletes nothing and says there is no such dead letter", async () => {
  await using store = await freshStore();
  const exe = await deadTimer(store);
  const out = await cli(store, "drop", "timers", exe.id, "p", "1700000010", "--yes");
  assert.equal((await store.deadLetters("timers")).length, 1, out.stdout + out.stderr);
  assert.doesNotMatch(out.stdout, /gone/);
});

Deno.test("dropDeadLetter of an outbox seq that never existed answers false, so an operator's typo is not reported as done", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "d" });
  const { outbox } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("k") }],
  });
  await relayOutbox(store, () => Promise.reject(new Error("boom")), {
    maxAttempts: 1,
    onError: () => {},
  });
  const [dead] = await store.deadLetters("outbox");
  assert.equal(dead?.key, outbox[0]);
  // The operator means the dead letter and types another seq.
  assert.equal(await store.dropDeadLetter("outbox", outbox[0]! + 4242), false);
  const out = await cli(store, "drop", "outbox", String(outbox[0]! + 4243), "--yes");
  assert.doesNotMatch(out.stdout, /gone/, "the CLI reports a seq that never existed as dropped");
});

Deno.test("cli outbox does not list a dead-lettered entry as pending backlog without saying it is dead", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "d" });
  const { outbox } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("k") }],
  });
  await relayOutbox(store, () => Promise.reject(new Error("boom")), {
    maxAttempts: 1,
    onError: () => {},
  });
  assert.equal((await store.deadLetters("outbox")).length, 1);
  const out = await cli(store, "outbox", "--json");
  assert.equal(out.code, 0, out.stderr);
  const shown = JSON.parse(out.stdout) as { outbox: number; oldest: Record<string, unknown>[] };
  const row = shown.oldest.find((r) => r.seq === outbox[0]);
  // Either leave it out of the backlog (it is in `dead-letters`), or flag it.
  assert.ok(
    row === undefined ? shown.outbox === 0 : /dead/i.test(JSON.stringify(row)),
    `the dead letter shows as backlog: ${JSON.stringify(shown)}`,
  );
});

Deno.test("relayOutbox with backoff { minSeconds: 10_000 } (milliseconds meant) says the backoff is in seconds", async () => {
  await using store = await freshStore();
  await assert.rejects(
    () => relayOutbox(store, async () => {}, { backoff: { minSeconds: 10_000 } }),
    (error: Error) => /millisecond/i.test(error.message),
  );
});

Deno.test("dropDeadLetter whose answer was lost still releases the target: the next inline delivery to it goes out at once", async () => {
  await using proxy = new FaultProxy(endpoint());
  const prefix = uniqueName("h2");
  await using store = await DynamoDBStore.create({ endpoint: proxy.endpoint, prefix });
  const a = newExecution({ definition_id: "d" });
  const first = await store.commit(a, { emits: [{ target: "T", event: newEvent("a") }] });
  await relayOutbox(store, () => Promise.reject(new Error("boom")), {
    maxAttempts: 1,
    onError: () => {},
  });
  assert.equal((await store.deadLetters("outbox"))[0]?.key, first.outbox[0]);
  let dropped = 0;
  proxy.script = {
    request: ({ operation }) =>
      // The drop is a one-item transaction (with an idempotency token).
      operation === "TransactWriteItems" && dropped++ === 0
        ? { kind: "drop-response" }
        : { kind: "pass" },
  };
  assert.equal(await store.dropDeadLetter("outbox", first.outbox[0]!), true);
  assert.equal(dropped > 0, true);
  // Another execution emits to the same target and delivers within its request.
  const b = newExecution({ definition_id: "d" });
  const { outbox } = await store.commit(b, { emits: [{ target: "T", event: newEvent("b") }] });
  const delivered: number[] = [];
  await relayOutbox(store, (entry) => Promise.resolve(void delivered.push(entry.seq)), {
    seqs: outbox,
  });
  assert.deepEqual(delivered, outbox, "left for the next cron pass: the hint still holds T");
});

Deno.test("cli timers --due does not list a dead-lettered timer as due without saying it is dead (dueTimers leaves it out)", async () => {
  await using store = await freshStore();
  await deadTimer(store);
  assert.deepEqual(await store.dueTimers(1_700_000_200), []);
  const out = await cli(store, "timers", "--due", "--json");
  assert.equal(out.code, 0, out.stderr);
  const shown = JSON.parse(out.stdout) as { total: number; timers: Record<string, unknown>[] };
  assert.ok(
    shown.timers.length === 0 || shown.timers.every((t) => /dead/i.test(JSON.stringify(t))),
    `the dead timer shows as due: ${out.stdout}`,
  );
});
