// Runners a fleet can trust: one unreadable row never stops a pass, a failing target never
// takes the limit from the others, failed entries wait with backoff and end as dead letters an
// operator retries or drops, order per source and target holds across scan pages, and a worker
// delivers its own commit's entries within the request.
import assert from "node:assert/strict";
import { DynamoDBClient, PutItemCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  type Execution,
  type ExecutionStore,
  newEvent,
  newExecution,
  type OutboxEntry,
  relayOutbox,
  relaySpawns,
  StoreConflict,
  sweepTimers,
  type Timer,
  UnreadableEntry,
} from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { endpoint, freshStore, pause, testClient, uniqueName } from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";
import { FaultProxy } from "../_support/fault_proxy.ts";
import { passOutbox, passRows } from "../_support/passes.ts";

const backends: [string, () => Promise<ExecutionStore>][] = [
  ["DynamoDBStore", () => freshStore()],
  ["MemoryStore", () => Promise.resolve(new MemoryStore())],
];

/** One commit per call of `count` emits to `target`, from one execution. */
async function emitTo(
  store: ExecutionStore,
  exe: ReturnType<typeof newExecution>,
  target: string | null,
  count: number,
): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < count; i += 25) {
    const { outbox } = await store.commit(exe, {
      emits: Array.from({ length: Math.min(25, count - i) }, (_, j) => ({
        target,
        event: newEvent("e", { n: i + j }),
      })),
    });
    seqs.push(...outbox);
  }
  return seqs;
}

/** A raw outbox row, as another writer (or a bug) could leave it. */
async function putRawOutbox(store: DynamoDBStore, seq: number, event: string, target = "t-bad") {
  using client = testClient();
  await client.send(
    new PutItemCommand({
      TableName: store.tables.outbox.name,
      Item: { seq: { N: String(seq) }, target_id: { S: target }, event: { S: event } },
    }),
  );
}

Deno.test("relayOutbox sets aside an outbox row that is not JSON, reports it with its seq and delivers every other entry", async () => {
  await using store = await freshStore({ otherWriters: true });
  const exe = newExecution({ definition_id: "d" });
  await store.save(exe);
  const good = await emitTo(store, exe, "t-good", 5);
  await putRawOutbox(store, 5_000_000, "{not json");
  const later = await emitTo(store, exe, "t-bad", 2); // the bad row's target goes on too
  const errors: unknown[] = [];
  const delivered: number[] = [];
  const report = await relayOutbox(
    store,
    (entry) => Promise.resolve(void delivered.push(entry.seq)),
    {
      onError: (error) => errors.push(error),
    },
  );
  assert.deepEqual(delivered.sort((a, b) => a - b), [...good, ...later].sort((a, b) => a - b));
  assert.equal(report.setAside, 1);
  assert.equal(report.delivered, 7);
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof UnreadableEntry);
  assert.equal((errors[0] as UnreadableEntry).key, 5_000_000);
  // Set aside, never deleted: a dead letter with its raw text, skipped by the next passes.
  const dead = await store.deadLetters("outbox");
  assert.deepEqual(dead.map((d) => [d.key, d.item, d.raw.event]), [[5_000_000, null, "{not json"]]);
  assert.match(dead[0]!.lastError!, /unreadable/);
  const again = await relayOutbox(store, () => Promise.reject(new Error("nothing to deliver")));
  assert.deepEqual([again.delivered, again.failed, again.setAside], [0, 0, 0]);
  // An operator drops it (or fixes the row and retries it).
  assert.equal(await store.dropDeadLetter("outbox", 5_000_000), true);
  assert.deepEqual(await store.deadLetters("outbox"), []);
});

Deno.test("relaySpawns sets aside a spawn whose context is not JSON and starts every other", async () => {
  await using store = await freshStore({ otherWriters: true });
  const exe = newExecution({ definition_id: "d" });
  await store.save(exe);
  await store.commit(exe, {
    spawns: [1, 2, 3].map((i) => ({ childId: `c${i}`, rootPath: "r", context: { i } })),
  });
  using client = testClient();
  await client.send(
    new PutItemCommand({
      TableName: store.tables.spawns.name,
      Item: {
        seq: { N: "5000000" },
        parent_id: { S: "p" },
        child_id: { S: "c0" },
        root_path: { S: "r" },
        context: { S: "NaN]" },
      },
    }),
  );
  const started: string[] = [];
  const errors: unknown[] = [];
  const report = await relaySpawns(
    store,
    (spawn) => Promise.resolve(void started.push(spawn.childId)),
    {
      onError: (error) => errors.push(error),
    },
  );
  assert.deepEqual(started.sort(), ["c1", "c2", "c3"]);
  assert.deepEqual([report.delivered, report.setAside], [3, 1]);
  assert.ok(errors[0] instanceof UnreadableEntry);
  assert.deepEqual((await store.deadLetters("spawns")).map((d) => d.key), [5_000_000]);
});

for (const [backend, make] of backends) {
  Deno.test(`relayOutbox on ${backend}: a target that always fails never takes the limit from the others`, async () => {
    await using store = await make();
    const exe = newExecution({ definition_id: "d" });
    await store.save(exe);
    const limit = 10;
    await emitTo(store, exe, "down", 2 * limit); // ahead of everyone else
    const others = [
      ...await emitTo(store, exe, "a", 10),
      ...await emitTo(store, exe, "b", 10),
      ...await emitTo(store, exe, "c", 10),
    ];
    const delivered: number[] = [];
    const perPass: number[] = [];
    const deliver = (entry: OutboxEntry) =>
      entry.targetId === "down"
        ? Promise.reject(new Error("down"))
        : Promise.resolve(void delivered.push(entry.seq));
    for (let pass = 1; pass <= 5; pass++) {
      const before = delivered.length;
      await relayOutbox(store, deliver, { limit });
      perPass.push(delivered.length - before);
    }
    // The first pass spends itself on "down" (its head fails, the rest waits behind it); from
    // the second on, each pass fills its limit with the other targets' entries.
    assert.deepEqual(perPass, [0, 10, 10, 10, 0]);
    assert.deepEqual(delivered.sort((a, b) => a - b), others);
    assert.equal((await store.pendingOutbox({ limit: Infinity })).length, 0, "down waits");
  });

  Deno.test(`relayOutbox on ${backend}: a failing entry waits with backoff, is dead-lettered after maxAttempts, keeps holding its target, and an operator retries or drops it`, async () => {
    await using store = await make();
    const exe = newExecution({ definition_id: "d" });
    await store.save(exe);
    const seqs = await emitTo(store, exe, "t", 3);
    const other = await emitTo(store, exe, "u", 1);
    let up = false;
    const seen: number[] = [];
    const deliver = (entry: OutboxEntry) => {
      if (entry.targetId === "t" && !up) return Promise.reject(new Error("HTTP 503"));
      seen.push(entry.seq);
      return Promise.resolve();
    };
    const options = { maxAttempts: 2, backoff: { minSeconds: 0, maxSeconds: 0 } };
    const first = await relayOutbox(store, deliver, options);
    assert.deepEqual([first.delivered, first.failed, first.setAside], [1, 1, 0]);
    assert.deepEqual(seen, other);
    const second = await relayOutbox(store, deliver, options);
    assert.deepEqual([second.delivered, second.failed, second.setAside], [0, 1, 1]);
    const [dead] = await store.deadLetters("outbox");
    assert.equal(dead!.key, seqs[0]);
    assert.equal(dead!.attempts, 2);
    assert.match(dead!.lastError!, /HTTP 503/);
    assert.deepEqual(dead!.item?.targetId, "t");
    up = true;
    const third = await relayOutbox(store, deliver, options);
    assert.equal(third.delivered, 0, "the dead entry holds its target's later entries");
    assert.equal(await store.retryDeadLetter("outbox", seqs[0]!), true);
    const fourth = await relayOutbox(store, deliver, options);
    assert.equal(fourth.delivered, 3);
    assert.deepEqual(seen, [...other, ...seqs], "in seq order once retried");
    assert.equal(
      await store.dropDeadLetter("outbox", seqs[0]!),
      false,
      "delivered: no dead letter to drop",
    );
  });

  Deno.test(`relayOutbox on ${backend}: dropping a dead letter lets its target go on; a pending entry is not dropped`, async () => {
    await using store = await make();
    const exe = newExecution({ definition_id: "d" });
    await store.save(exe);
    const seqs = await emitTo(store, exe, "t", 3);
    const seen: number[] = [];
    const deliver = (entry: OutboxEntry) =>
      entry.seq === seqs[0]
        ? Promise.reject(new Error("poison"))
        : Promise.resolve(void seen.push(entry.seq));
    await relayOutbox(store, deliver, { maxAttempts: 1 });
    assert.equal(await store.dropDeadLetter("outbox", seqs[1]!), false, "pending, not dead");
    assert.equal(await store.dropDeadLetter("outbox", seqs[0]!), true);
    assert.equal((await relayOutbox(store, deliver)).delivered, 2);
    assert.deepEqual(seen, seqs.slice(1));
  });

  Deno.test(`relaySpawns and sweepTimers on ${backend}: failing spawns and timers never take the limit`, async () => {
    await using store = await make();
    const exe = newExecution({ definition_id: "d" });
    await store.save(exe);
    await store.commit(exe, {
      spawns: Array.from(
        { length: 20 },
        (_, i) => ({ childId: `bad-${i}`, rootPath: "r", context: {} }),
      ),
    });
    await store.commit(exe, {
      spawns: Array.from(
        { length: 5 },
        (_, i) => ({ childId: `ok-${i}`, rootPath: "r", context: {} }),
      ),
    });
    const start = (spawn: { childId: string }) =>
      spawn.childId.startsWith("bad") ? Promise.reject(new Error("no")) : Promise.resolve();
    const spawnPasses = [];
    for (let i = 0; i < 3; i++) {
      spawnPasses.push((await relaySpawns(store, start, { limit: 10 })).delivered);
    }
    assert.deepEqual(
      spawnPasses,
      [0, 0, 5],
      "bad spawns wait out their backoff; ok spawns get the limit",
    );

    await store.commit(exe, {
      timers: [
        ...Array.from(
          { length: 20 },
          (_, i) => ({ action: "schedule" as const, path: `bad-${i}`, fireAt: 1000 + i }),
        ),
        ...Array.from(
          { length: 5 },
          (_, i) => ({ action: "schedule" as const, path: `ok-${i}`, fireAt: 2000 + i }),
        ),
      ],
    });
    const fire = (timer: Timer) =>
      timer.path.startsWith("bad") ? Promise.reject(new Error("no")) : Promise.resolve();
    const now = Date.now() / 1000;
    const sweeps = [];
    for (let i = 0; i < 3; i++) {
      sweeps.push((await sweepTimers(store, fire, { limit: 10, now })).delivered);
    }
    assert.deepEqual(sweeps, [0, 0, 5]);
    assert.deepEqual((await store.dueTimers(now)).map((t) => t.path), [], "failed timers wait");
    const later = await passRows(store, "timers", { now: now + 11, limit: 100 });
    assert.equal(later.items.length, 20, "due again after their backoff, with their attempts");
    assert.ok(later.items.every((q) => q.attempts === 1));
  });

  Deno.test(`relayOutbox on ${backend}: { seqs } delivers a commit's own entries within the request, never ahead of a pending earlier entry of the same source and target`, async () => {
    await using store = await make();
    const exe = newExecution({ definition_id: "d" });
    await store.save(exe);
    const seen: number[] = [];
    const deliver = (entry: OutboxEntry) => Promise.resolve(void seen.push(entry.seq));
    const { outbox: first } = await store.commit(exe, {
      emits: [{ target: "t", event: newEvent("one") }, { target: "u", event: newEvent("two") }],
    });
    const inline = await relayOutbox(store, deliver, { seqs: first });
    assert.equal(inline.delivered, 2);
    assert.deepEqual(seen, first);
    assert.deepEqual(await store.pendingOutbox(), []);

    // An inline delivery that fails leaves the entry pending for the next pass, with backoff.
    const { outbox: second } = await store.commit(exe, {
      emits: [{ target: "t", event: newEvent("three") }],
    });
    const failed = await relayOutbox(store, () => Promise.reject(new Error("busy")), {
      seqs: second,
    });
    assert.deepEqual([failed.delivered, failed.failed], [0, 1]);
    // A later commit's entry to the same target waits behind it, inline and in passes.
    const { outbox: third } = await store.commit(exe, {
      emits: [{ target: "t", event: newEvent("four") }, { target: "v", event: newEvent("five") }],
    });
    const held = await relayOutbox(store, deliver, { seqs: third });
    assert.equal(held.delivered, 1, "only the entry to v");
    assert.deepEqual(seen.slice(2), [third[1]]);
    const pending = (await passOutbox(store, { now: Date.now() / 1000 + 3600 })).items;
    assert.deepEqual(pending.map((q) => q.item.seq), [second[0], third[0]]);
  });
}

Deno.test("relayOutbox never delivers an entry of a source before an earlier one of the same target that landed behind its read", async () => {
  // The relay's reads come in pages of 3; between pages, four sources commit two entries each
  // to one target, some first entries behind the read and their second ahead of it.
  using writerClient = testClient();
  using relayClient = testClient();
  const prefix = uniqueName("pages");
  const writer = new DynamoDBStore(writerClient, { prefix, otherWriters: true });
  const relay = new DynamoDBStore(relayClient, { prefix, otherWriters: true });
  await writer.ensureTables();
  const filler = newExecution({ definition_id: "filler" });
  await writer.save(filler);
  await emitTo(writer, filler, "filler", 30);
  const sources = Array.from({ length: 4 }, () => newExecution({ definition_id: "src" }));
  for (const source of sources) await writer.save(source);
  let injecting = false;
  relayClient.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== "QueryCommand") return await next(args);
      (args.input as { Limit?: number }).Limit = 3;
      const page = await next(args);
      if (injecting) {
        injecting = false; // once a pass, between two of its pages
        for (const source of sources) {
          for (const n of [1, 2]) {
            await writer.commit(source, {
              emits: [{ target: "T", event: newEvent("e", { source: source.id, n }) }],
            });
          }
        }
      }
      return page;
    },
    { step: "initialize", name: "pagedScan" },
  );
  const lastSeen = new Map<string, number>();
  const violations: string[] = [];
  const deliver = (entry: OutboxEntry) => {
    const source = entry.event.data.source as string | undefined;
    if (source !== undefined) {
      const last = lastSeen.get(source) ?? 0;
      if (last > entry.seq) violations.push(`${source}: seq ${entry.seq} after ${last}`);
      lastSeen.set(source, Math.max(last, entry.seq));
    }
    return Promise.resolve();
  };
  for (let pass = 0; pass < 8; pass++) {
    injecting = pass < 2;
    await relayOutbox(relay, deliver);
  }
  assert.deepEqual(violations, []);
  assert.deepEqual(await writer.pendingOutbox({ limit: Infinity }), [], "all delivered");
  assert.equal(lastSeen.size, sources.length, "every source reached T");
});

// The relay against another writer on the same tables, lost answers, limits and the timer
// index, against DynamoDB Local.

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
  await seedPutExecution(client, store.tables.executions.name, next);
  exe.version = next.version;
}

const collect = (seen: number[]) => (entry: OutboxEntry) =>
  Promise.resolve(void seen.push(entry.seq));

/** A store on `direct`'s tables whose calls go through a fault proxy (the SDK retries 3 times). */
function behindProxy(direct: DynamoDBStore) {
  const proxy = new FaultProxy(endpoint());
  const client = new DynamoDBClient({
    endpoint: proxy.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 3,
  });
  const prefix = direct.tables.executions.name.replace(/_executions$/, "");
  const store = new DynamoDBStore(client, { prefix });
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

Deno.test("recordFailure, retryDeadLetter and dropDeadLetter answer exactly when their answer is lost", async () => {
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

Deno.test("two concurrent relay passes plus inline deliveries, with a flaky receiver, keep order per source and target and leave nothing pending", async () => {
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
  // Drain what is left (each attempt fails 15% of the time: a pass may deliver little). An entry
  // stuck where no pass sees it would outlast any bound: 200 passes is a liveness bound only.
  for (let i = 0; i < 200 && (await writer.pendingOutbox({ limit: Infinity })).length; i++) {
    await relayOutbox(r1, deliver, opts);
  }
  assert.deepEqual(violations, []);
  assert.equal(delivered.size, committed);
  assert.deepEqual(await writer.pendingOutbox({ limit: Infinity }), []);
});

/** Each backend with a clock a test moves (`clock.ms`): two stores on the same tables. */
const clocked: [string, (clock: { ms: number }) => Promise<[ExecutionStore, ExecutionStore]>][] = [
  ["DynamoDBStore", async (clock) => {
    const prefix = uniqueName("lapse");
    const open = (ensureTables = false) =>
      DynamoDBStore.create({ endpoint: endpoint(), prefix, ensureTables, now: () => clock.ms });
    return [await open(true), await open()];
  }],
  ["MemoryStore", (clock) => {
    const store = new MemoryStore({ now: () => clock.ms });
    return Promise.resolve([store, store]);
  }],
];

for (const [name, make] of clocked) {
  Deno.test(`${name}: an entry a pass delivers after its lease ran out, while another relay's pass failed it and set the next entry apart behind it, releases its target when acknowledged: the next pass delivers the rest`, async () => {
    const clock = { ms: Date.now() };
    const [store, other] = await make(clock);
    const exe = newExecution({ definition_id: "d" });
    await store.save(exe);
    const { outbox: [first] } = await store.commit(exe, {
      emits: [{ target: "T", event: newEvent("first") }],
    });
    let reached!: () => void, go!: () => void;
    const delivering = new Promise<void>((r) => reached = r);
    const gate = new Promise<void>((r) => go = r);
    const seen: number[] = [];
    // Pass 1 hands out `first` (no head then) and delivers it, slowly: its lease runs out.
    const slow = relayOutbox(store, async (e) => {
      reached();
      await gate;
      seen.push(e.seq);
    });
    await delivering;
    const { outbox: [second] } = await store.commit(exe, {
      emits: [{ target: "T", event: newEvent("second") }],
    });
    clock.ms += 45_000;
    // Another relay takes the outbox: its delivery of `first` fails (it holds T), and its next
    // pass sets `second` apart.
    const failing = await relayOutbox(other, () => Promise.reject(new Error("down")), {
      backoff: { minSeconds: 3600, maxSeconds: 3600 },
    });
    assert.deepEqual([failing.failed, failing.held], [1, 1]);
    assert.equal((await relayOutbox(other, collect(seen))).held, 1);
    go();
    assert.equal((await slow).delivered, 1); // `first` acknowledged: it holds T no more
    assert.deepEqual((await store.pendingOutbox()).map((e) => e.seq), [second], "pendingOutbox");
    await relayOutbox(store, collect(seen));
    assert.deepEqual(seen, [first, second]);
    assert.deepEqual(await store.pendingOutbox(), []);
    await store.close();
    await other.close();
  });
}

// --- one bad row ------------------------------------------------------------------------

Deno.test("an unreadable outbox row set aside by an earlier pass never silently blocks its target: later entries (of its source and of others) are delivered or dead-lettered", async () => {
  await using store = await freshStore({ otherWriters: true });
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
  await using store = await freshStore({ otherWriters: true });
  await putRaw(store, {
    seq: { N: "7" },
    target_id: { N: "5" },
    event: { S: JSON.stringify(newEvent("x")) },
  });
  const got: OutboxEntry[] = [];
  await relayOutbox(store, (e) => Promise.resolve(void got.push(e)));
  assert.deepEqual(got.map((e) => [e.seq, e.targetId]), [], "delivered to the wrong target");
  // The pass's feed round found it, another writer's row with no target, and set it aside.
  assert.deepEqual((await store.deadLetters("outbox")).map((d) => [d.key, d.lastError]), [
    [7, "unreadable: no target_id (a string, or NULL)"],
  ]);
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
  await using store = await freshStore({ otherWriters: true });
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

// --- failed timers ---------------------------------------------------------------------

Deno.test("a failed timer due for its retry fires although `limit` earlier failed timers still wait for theirs", async () => {
  await using store = await freshStore();
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

// Dead letters in a fleet: a Python worker and Deno relays on the same tables, lost answers, and
// the mistakes an operator or a Deno user makes with dead letters, the CLI and the backoff.
const PY_WORKER = new URL("../_support/python_worker.py", import.meta.url).pathname;

Deno.test("with a Python worker Putting executions and bare outbox rows, Deno relays that fail, retry and dead-letter never break per (source, target) order and lose nothing", async () => {
  await using s1 = await freshStore({ otherWriters: true });
  const prefix = s1.tables.outbox.name.replace(/_outbox$/, "");
  await using s2 = await DynamoDBStore.create({ endpoint: endpoint(), prefix, otherWriters: true });
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

const CLI = new URL("../../src/cli.ts", import.meta.url).pathname;

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
  assert.deepEqual(delivered, outbox, "left for the next cron pass: the hold still holds T");
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
