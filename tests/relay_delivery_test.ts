// Runners a fleet can trust (#18): one unreadable row never stops a pass, a failing target never
// takes the limit from the others, failed entries wait with backoff and end as dead letters an
// operator retries or drops, order per source and target holds across scan pages, and a worker
// delivers its own commit's entries within the request.
import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  type ExecutionStore,
  newEvent,
  newExecution,
  type OutboxEntry,
  relayOutbox,
  relaySpawns,
  sweepTimers,
  type Timer,
  UnreadableEntry,
} from "../mod.ts";
import { MemoryStore } from "../src/testing.ts";
import { freshStore, testClient, uniqueName } from "./_env.ts";

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
  await using store = await freshStore();
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
  await using store = await freshStore();
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
    const later = await store.relayBatch("timers", { now: now + 11, limit: 100 });
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
    const pending = (await store.relayBatch("outbox", { now: Date.now() / 1000 + 3600 })).items;
    assert.deepEqual(pending.map((q) => q.item.seq), [second[0], third[0]]);
  });
}

Deno.test("relayOutbox never delivers an entry of a source before an earlier one of the same target that landed behind the scan", async () => {
  // The relay's scans come in pages of 3; between pages, four sources commit two entries each
  // to one target. DynamoDB's scan order follows a hash of the key, so some first entries land
  // behind the scan while their second lands ahead of it.
  using writerClient = testClient();
  using relayClient = testClient();
  const prefix = uniqueName("pages");
  const writer = new DynamoDBStore(writerClient, { prefix });
  const relay = new DynamoDBStore(relayClient, { prefix });
  await writer.ensureTables();
  const filler = newExecution({ definition_id: "filler" });
  await writer.save(filler);
  await emitTo(writer, filler, "filler", 30);
  const sources = Array.from({ length: 4 }, () => newExecution({ definition_id: "src" }));
  for (const source of sources) await writer.save(source);
  let injecting = false;
  relayClient.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== "ScanCommand") return await next(args);
      (args.input as { Limit?: number }).Limit = 3;
      const page = await next(args);
      if (injecting) {
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
