// The relay and the sweeper on both backends (DynamoDB Local and MemoryStore), and harel's
// Timeout event id checked against Python's own repr().
//
// The repr check runs 2,000 random doubles with a fixed seed; HAREL_REPR_RUNS=N runs N.
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type Event,
  type ExecutionStore,
  newEvent,
  newExecution,
  type OutboxEntry,
  relayOutbox,
  type RelayReport,
  relaySpawns,
  sweepTimers,
  timeoutEvent,
  type Timer,
} from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { pythonFloatRepr } from "../../src/core/_py_repr.ts";
import { MAX_EPOCH_SECONDS } from "../../src/core/_validate.ts";
import { freshStore, pause } from "../_support/env.ts";

const backends: [string, () => Promise<ExecutionStore>][] = [
  ["DynamoDBStore", () => freshStore()],
  ["MemoryStore", () => Promise.resolve(new MemoryStore())],
];

/** The pass counted these deliveries and failures, and set nothing aside. */
function assertCounts(report: RelayReport, delivered: number, failed: number): void {
  assert.deepEqual(
    { delivered: report.delivered, failed: report.failed, setAside: report.setAside },
    { delivered, failed, setAside: 0 },
  );
}

/** Commits `count` entries round-robin over `targets` (null = broadcast), in seq order. */
async function emit(store: ExecutionStore, targets: (string | null)[], count: number) {
  const exe = newExecution({ definition_id: "relay" });
  await store.save(exe);
  for (let i = 0; i < count; i += 10) {
    await store.commit(exe, {
      emits: Array.from({ length: Math.min(10, count - i) }, (_, j) => ({
        target: targets[(i + j) % targets.length]!,
        event: newEvent("e", { n: i + j }),
      })),
    });
  }
  return await store.pendingOutbox({ limit: Infinity });
}

for (const [backend, make] of backends) {
  Deno.test(`relayOutbox on ${backend}: seq order per target, one in flight per target, targets in parallel, acked`, async () => {
    await using store = await make();
    const entries = await emit(store, ["a", "b", "c", "d", null], 60);
    const seen = new Map<string | null, number[]>();
    const inFlight = new Map<string | null, number>();
    let concurrent = 0, maxConcurrent = 0, maxPerTarget = 0;
    const report = await relayOutbox(store, async (entry) => {
      const now = (inFlight.get(entry.targetId) ?? 0) + 1;
      inFlight.set(entry.targetId, now);
      maxPerTarget = Math.max(maxPerTarget, now);
      maxConcurrent = Math.max(maxConcurrent, ++concurrent);
      await pause(2);
      seen.set(entry.targetId, [...(seen.get(entry.targetId) ?? []), entry.seq]);
      inFlight.set(entry.targetId, now - 1);
      concurrent--;
    });
    assertCounts(report, 60, 0);
    assert.equal(maxPerTarget, 1, "one delivery in flight per target");
    assert.equal(maxConcurrent, 5, "the five targets in parallel");
    for (const [target, seqs] of seen) {
      const expected = entries.filter((e) => e.targetId === target).map((e) => e.seq);
      assert.deepEqual(seqs, expected, `seq order for ${target}`);
    }
    assert.deepEqual(await store.pendingOutbox(), []);
  });

  Deno.test(`relayOutbox on ${backend}: a failed entry holds back its target's later entries only`, async () => {
    await using store = await make();
    const entries = await emit(store, ["a", "b", "c"], 30);
    const ofB = entries.filter((e) => e.targetId === "b");
    const errors: unknown[] = [];
    const report = await relayOutbox(store, (entry) => {
      if (entry.seq === ofB[3]!.seq) return Promise.reject(new Error("b is down"));
      return Promise.resolve();
    }, { onError: (error) => errors.push(error), backoff: { minSeconds: 0 } });
    assertCounts(report, 23, 1);
    assert.equal((errors[0] as Error).message, "b is down");
    const left = await store.pendingOutbox();
    assert.deepEqual(left, ofB.slice(3), "the failed entry and every later one of b");
    const again: OutboxEntry[] = [];
    assertCounts(
      await relayOutbox(store, (entry) => Promise.resolve(void again.push(entry))),
      7,
      0,
    );
    assert.deepEqual(again, ofB.slice(3), "next pass: b resumes in order");
    assert.deepEqual(await store.pendingOutbox(), []);
  });

  Deno.test(`relayOutbox on ${backend}: limit, concurrency and the signal bound one pass`, async (t) => {
    await using store = await make();
    const entries = await emit(store, ["a", "b", "c", "d", "e", "f"], 40);
    await t.step("limit reads the lowest seqs only", async () => {
      const got: number[] = [];
      const report = await relayOutbox(
        store,
        (entry) => Promise.resolve(void got.push(entry.seq)),
        { limit: 7 },
      );
      assert.equal(report.delivered, 7);
      assert.deepEqual(got.sort((a, b) => a - b), entries.slice(0, 7).map((e) => e.seq));
    });
    await t.step("concurrency bounds the targets in flight", async () => {
      let concurrent = 0, maxConcurrent = 0;
      await relayOutbox(store, async () => {
        maxConcurrent = Math.max(maxConcurrent, ++concurrent);
        await pause(2);
        concurrent--;
      }, { concurrency: 2, limit: 12 });
      assert.equal(maxConcurrent, 2);
    });
    await t.step(
      "an aborted signal stops between entries; what was delivered is acked",
      async () => {
        const before = await store.pendingOutbox();
        const controller = new AbortController();
        let calls = 0;
        const report = await relayOutbox(store, () => {
          if (++calls === 3) controller.abort();
          return Promise.resolve();
        }, { concurrency: 1, signal: controller.signal });
        assertCounts(report, 3, 0);
        // One lane: the first target's first three entries went out and were acknowledged.
        const sent = before.filter((e) => e.targetId === before[0]!.targetId).slice(0, 3);
        assert.deepEqual(await store.pendingOutbox(), before.filter((e) => !sent.includes(e)));
        assertCounts(
          await relayOutbox(store, () => Promise.reject(new Error("never")), {
            signal: AbortSignal.abort(),
          }),
          0,
          0,
        );
      },
    );
    await t.step("bad options are refused before anything is read", async () => {
      const left = await store.pendingOutbox();
      const noop = () => Promise.resolve();
      await assert.rejects(relayOutbox(store, noop, { limit: 0 }), /limit must be a positive/);
      await assert.rejects(relayOutbox(store, noop, { concurrency: 0 }), RangeError);
      await assert.rejects(relayOutbox(store, noop, { concurrency: 1.5 }), RangeError);
      await assert.rejects(
        relayOutbox(store, noop, { signal: "stop" as unknown as AbortSignal }),
        TypeError,
      );
      await assert.rejects(relayOutbox(store, "deliver" as unknown as typeof noop), TypeError);
      await assert.rejects(relaySpawns(store, noop, { limit: -1 }), RangeError);
      await assert.rejects(sweepTimers(store, noop, { now: -1 }), RangeError);
      assert.deepEqual(await store.pendingOutbox(), left);
    });
  });

  Deno.test(`relaySpawns on ${backend}: in parallel, acked, failures stay pending`, async () => {
    await using store = await make();
    const exe = newExecution({ definition_id: "parent" });
    await store.save(exe);
    await store.commit(exe, {
      spawns: Array.from({ length: 8 }, (_, i) => ({
        childId: `child-${i}`,
        rootPath: "r",
        context: { i },
      })),
    });
    let concurrent = 0, maxConcurrent = 0;
    const report = await relaySpawns(store, async (spawn) => {
      maxConcurrent = Math.max(maxConcurrent, ++concurrent);
      await pause(5);
      concurrent--;
      if (spawn.childId === "child-2" || spawn.childId === "child-5") throw new Error("later");
    }, { backoff: { minSeconds: 0 } });
    assertCounts(report, 6, 2);
    assert.equal(maxConcurrent, 8);
    assert.deepEqual((await store.pendingSpawns()).map((s) => s.childId), ["child-2", "child-5"]);
  });

  Deno.test(`sweepTimers on ${backend}: fire, then the guarded delete; a failed fire comes again with the same event id`, async () => {
    await using store = await make();
    const exe = newExecution({ definition_id: "timers" });
    await store.save(exe);
    await store.commit(exe, {
      timers: [
        { action: "schedule", path: "a", fireAt: 1_700_000_001 },
        { action: "schedule", path: "b", fireAt: 1_700_000_002.25 },
        { action: "schedule", path: "c", fireAt: 1_700_000_003 },
        { action: "schedule", path: "later", fireAt: 1_800_000_000 },
      ],
    });
    const fired: [Timer, Event][] = [];
    const report = await sweepTimers(store, async (timer, event) => {
      if (timer.path === "b") throw new Error("receiver down");
      if (timer.path === "c") {
        // A commit re-schedules c while it fires: the guarded delete keeps the new timer.
        const current = (await store.load(exe.id))!;
        await store.commit(current, {
          timers: [{ action: "schedule", path: "c", fireAt: 1_700_000_500 }],
        });
      }
      fired.push([timer, event]);
    }, { now: 1_700_000_010, backoff: { minSeconds: 0 } });
    assertCounts(report, 2, 1);
    assert.deepEqual(fired.map(([, event]) => [event.id, event.kind, event.data]), [
      [`timeout:${exe.id}:a:1700000001.0`, "Timeout", { path: "a" }],
      [`timeout:${exe.id}:c:1700000003.0`, "Timeout", { path: "c" }],
    ]);
    assert.deepEqual(
      (await store.dueTimers(1_700_001_000)).map((x) => [x.path, x.fireAt]),
      [["b", 1_700_000_002.25], ["c", 1_700_000_500]],
    );
    const retried: Event[] = [];
    assertCounts(
      await sweepTimers(store, (_, event) => Promise.resolve(void retried.push(event)), {
        now: 1_700_000_010,
      }),
      1,
      0,
    );
    assert.equal(retried[0]!.id, `timeout:${exe.id}:b:1700000002.25`, "the same id again");
    assert.deepEqual((await store.dueTimers(1e10)).map((x) => x.path), ["c", "later"]);
  });
}

Deno.test("the runners take plain functions as callbacks: returning nothing delivers, throwing is a failed attempt", async () => {
  const store = new MemoryStore();
  const exe = newExecution({ definition_id: "plain" });
  await store.commit(exe, {
    emits: [{ target: "a", event: newEvent("ok") }, { target: "b", event: newEvent("down") }],
    spawns: [{ childId: "c", rootPath: "r", context: {} }],
    timers: [{ action: "schedule", path: "t", fireAt: 1 }],
  });
  const kinds: string[] = [];
  const outbox = await relayOutbox(store, (entry) => {
    if (entry.event.kind === "down") throw new Error("b is down");
    kinds.push(entry.event.kind);
  });
  assertCounts(outbox, 1, 1);
  assert.deepEqual(kinds, ["ok"]);
  assertCounts(await relaySpawns(store, () => {}), 1, 0);
  assertCounts(await sweepTimers(store, () => {}, { now: 2 }), 1, 0);
  assert.deepEqual([await store.pendingSpawns(), await store.dueTimers(2)], [[], []]);
});

Deno.test("timeoutEvent is harel's Timeout event: id, kind, data, and newEvent's other fields", () => {
  const event = timeoutEvent("exe-1", "order.waiting", 1_700_000_001);
  assert.equal(event.id, "timeout:exe-1:order.waiting:1700000001.0");
  assert.equal(event.kind, "Timeout");
  assert.deepEqual(event.data, { path: "order.waiting" });
  assert.equal(event.received_time, null);
  assert.ok(Math.abs(Date.parse(event.created_time!) - Date.now()) < 5_000);
  assert.deepEqual(Object.keys(event).sort(), Object.keys(newEvent("x")).sort());
  assert.equal(timeoutEvent("e", "p", 1_700_000_002.25).id, "timeout:e:p:1700000002.25");
  assert.throws(() => timeoutEvent("", "p", 1), TypeError);
  assert.throws(() => timeoutEvent("e", "p", -1), RangeError);
  assert.throws(() => timeoutEvent("e", "p", NaN), RangeError);
});

/** Python's repr(float(x)) of each value, from python3 itself. */
async function pythonReprs(values: number[]): Promise<string[]> {
  const child = new Deno.Command("python3", {
    args: [
      "-c",
      "import json, sys\nfor x in json.load(sys.stdin): print(repr(float(x)))",
    ],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify(values)));
  await writer.close();
  const { code, stdout } = await child.output();
  assert.equal(code, 0);
  return new TextDecoder().decode(stdout).trimEnd().split("\n");
}

Deno.test("the timeout id formats fire_at exactly as Python's repr of a float", async (t) => {
  const fixed = [
    0,
    1,
    1_700_000_001,
    1_700_000_002.25,
    1_700_000_000.123456,
    253_402_300_799,
    0.5,
    0.1,
    0.0001,
    0.00012,
    0.00001,
    1.5e-5,
    1e-7,
    1.234e-7,
    5e-324,
    2.2250738585072014e-308,
    1e15,
    999_999_999_999_999.9,
    1e16,
    1.5e16,
    2 ** 53,
    2 ** 53 + 2,
    9_999_999_999_999_998,
    1e21,
    1e22,
    1.2345678901234568e18,
    1.7976931348623157e308,
    123.456,
    100,
    1e-4,
    9.5e-5,
  ];
  await t.step("whole, fractional, tiny and large values", async () => {
    const python = await pythonReprs(fixed);
    assert.deepEqual(fixed.map(pythonFloatRepr), python);
    // A timer's fire_at is a time DynamoDB can store; timeoutEvent refuses the others.
    const storable = fixed.map((x, i) => [x, python[i]!] as const).filter(([x]) =>
      x === 0 || (x >= 1e-130 && x <= MAX_EPOCH_SECONDS)
    );
    assert.ok(storable.length >= 10, `${storable.length} storable values`);
    assert.deepEqual(
      storable.map(([x]) => timeoutEvent("e", "p", x).id),
      storable.map(([, r]) => `timeout:e:p:${r}`),
      "as the id's fire_at",
    );
    for (const x of [5e-324, 1.7976931348623157e308, Date.now()]) {
      assert.throws(() => timeoutEvent("e", "p", x), RangeError, `${x}`);
    }
  });
  await t.step("random doubles of every magnitude, and random epoch times", async () => {
    const runs = Number(Deno.env.get("HAREL_REPR_RUNS") ?? 2000);
    const doubles = fc.sample(
      fc.oneof(
        fc.double({ min: 0, noNaN: true, noDefaultInfinity: true }),
        fc.double({ min: 0, max: 253_402_300_799, noNaN: true }),
        fc.integer({ min: 0, max: 253_402_300_799 }).map((s) => s + Math.round(Math.random()) / 4),
      ),
      { numRuns: runs, seed: 12 },
    ).map((x) => Object.is(x, -0) ? 0 : x);
    assert.deepEqual(doubles.map(pythonFloatRepr), await pythonReprs(doubles));
  });
});
