/**
 * The execution-store conformance suite: the behaviour every {@linkcode ExecutionStore} must
 * show, as `Deno.test` steps, on DynamoDB, the memory twin and any new backend.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type Execution, newEvent, newExecution } from "../core/documents.ts";
import { InvalidCursor, StoreClosed, StoreConflict } from "../core/errors.ts";
import { HAREL_DEPTH } from "../core/_json.ts";
import type { CommitChanges, ExecutionStore } from "../core/types.ts";
import { checkJsonRule, jsonRuleCases, nestedObject, rejection, tooDeep, walk } from "./_shared.ts";
import { queueSteps } from "./_queues.ts";
import { clockSteps } from "./_clock_steps.ts";
import type { ConformanceStoreOptions, FakeClock, Step } from "./_steps.ts";

export type { ConformanceStoreOptions, FakeClock } from "./_steps.ts";
import { operatorSteps } from "./_operator.ts";
import { deadLetterSteps } from "./_dead_letters.ts";
import { executionOutboxSteps } from "./_execution_outbox.ts";
import { snapshotStore } from "./snapshot.ts";

/**
 * Makes a fresh, empty execution store with the given options (pass them all on: the steps move
 * the clock passed as `now`).
 *
 * @example A factory for the memory twin
 * ```ts
 * import { type ExecutionStoreFactory, MemoryStore } from "@harel/dynamodb/testing";
 *
 * const factory: ExecutionStoreFactory = (options) => Promise.resolve(new MemoryStore(options));
 * ```
 */
export type ExecutionStoreFactory = (options: ConformanceStoreOptions) => Promise<ExecutionStore>;

/**
 * Runs the execution-store conformance suite as steps of the calling test.
 *
 * @example Checking a backend
 * ```ts
 * import { executionStoreConformance, MemoryStore } from "@harel/dynamodb/testing";
 *
 * Deno.test("MemoryStore conforms", (t) =>
 *   executionStoreConformance(t, (options) => Promise.resolve(new MemoryStore(options))));
 * ```
 *
 * @param t The calling test's context.
 * @param factory Makes a fresh, empty store for each step.
 */
export async function executionStoreConformance(
  t: Deno.TestContext,
  factory: ExecutionStoreFactory,
): Promise<void> {
  const step: Step = (name, body, options = {}) =>
    t.step(name, async () => {
      // A clock of its own for every step: real time, moved on by what the step advances.
      let offset = 0;
      const clock: FakeClock = {
        now: () => Date.now() + offset,
        advance: (seconds) => void (offset += seconds * 1000),
      };
      const made = typeof options === "number" ? { traceMax: options } : options;
      await using store = await factory({ ...made, now: clock.now });
      await body(store, clock);
    });

  await step("save() inserts at version 1 and sequential saves reach version 3", async (store) => {
    const exe = newExecution({ definition_id: "order" });
    await store.save(exe);
    assert.equal(exe.version, 1);
    assert.equal((await store.load(exe.id))?.version, 1);
    await store.save(exe);
    await store.save(exe);
    assert.equal(exe.version, 3);
    assert.equal((await store.load(exe.id))?.version, 3);
  });

  await step(
    "load() round-trips context and unknown fields, and is null for a missing id",
    async (store) => {
      const exe = newExecution({
        definition_id: "order",
        context: {
          total: 42.5,
          items: [{ sku: "a", qty: 2 }],
          note: "ünïcødé \u{1F600}",
          none: null,
        },
        history: { "order.shipping": "order.shipping.packed" },
        future_field: { from: "a newer engine", list: [1, 2, 3] },
      });
      await store.save(exe);
      const loaded = await store.load(exe.id);
      assert.deepEqual(loaded, { ...exe });
      assert.notEqual(loaded, exe);
      assert.equal(await store.load("no-such-id"), null);
    },
  );

  await step(
    "a stale save raises StoreConflict with expected and found, and leaves the winner's document",
    async (store) => {
      const exe = newExecution({ definition_id: "order" });
      await store.save(exe);
      const a = (await store.load(exe.id))!;
      const b = (await store.load(exe.id))!;
      a.context = { winner: "a" };
      await store.save(a);
      b.context = { winner: "b" };
      const error = await rejection(store.save(b));
      assert.ok(error instanceof StoreConflict, String(error));
      assert.deepEqual([error.executionId, error.expected, error.found], [exe.id, 1, 2]);
      assert.equal(b.version, 1);
      assert.deepEqual((await store.load(exe.id))?.context, { winner: "a" });
    },
  );

  await step("a second insert of one id conflicts", async (store) => {
    const exe = newExecution({ definition_id: "order" });
    await store.save(exe);
    const twin = newExecution({ definition_id: "order", id: exe.id });
    const error = await rejection(store.save(twin));
    assert.ok(error instanceof StoreConflict);
    assert.deepEqual([error.expected, error.found, twin.version], [0, 1, 0]);
  });

  await queueSteps(step);

  await step(
    "the trace ring with traceMax 2 keeps [1, 2], then [2, 3]; a cancelled commit leaves no gap",
    async (store) => {
      assert.equal(store.traceMax, 2);
      const exe = newExecution({ definition_id: "t" });
      await store.save(exe);
      assert.deepEqual(await store.readTrace(exe.id), []);
      for (let i = 0; i <= 2; i++) await store.commit(exe, { trace: { step: i } });
      assert.deepEqual(await store.readTrace(exe.id), [{ step: 1, index: 1 }, {
        step: 2,
        index: 2,
      }]);
      const stale = structuredClone(exe);
      await store.commit(exe, { trace: { step: 3 } });
      await assert.rejects(store.commit(stale, { trace: { step: "lost" } }), StoreConflict);
      assert.deepEqual((await store.readTrace(exe.id)).map((s) => s.index), [2, 3]);
      await store.appendTrace(exe.id, { step: 4 });
      assert.deepEqual(await store.readTrace(exe.id), [{ step: 3, index: 3 }, {
        step: 4,
        index: 4,
      }]);
    },
    2,
  );

  await step("traceMax 0 keeps every step", async (store) => {
    const exe = newExecution({ definition_id: "t" });
    for (let i = 0; i <= 4; i++) await store.commit(exe, { trace: { i } });
    await store.appendTrace(exe.id, { i: 5 });
    assert.deepEqual((await store.readTrace(exe.id)).map((s) => s.index), [0, 1, 2, 3, 4, 5]);
  }, 0);

  await step(
    "of 16 concurrent commits from one version exactly one wins and one emit lands",
    async (store) => {
      const exe = newExecution({ definition_id: "race" });
      await store.save(exe);
      const results = await Promise.allSettled(
        Array.from({ length: 16 }, (_, i) =>
          store.commit(structuredClone(exe), {
            emits: [{ target: null, event: newEvent("won", { i }) }],
            processedEventId: `e-${i}`,
            trace: { i },
          })),
      );
      assert.equal(
        results.filter((r) => r.status === "fulfilled").length,
        1,
      );
      for (const r of results) {
        if (r.status === "rejected") assert.ok(r.reason instanceof StoreConflict, String(r.reason));
      }
      assert.equal((await store.pendingOutbox()).length, 1);
      assert.equal((await store.readTrace(exe.id)).length, 1);
      assert.equal((await store.load(exe.id))?.version, 2);
    },
  );

  await step(
    "listExecutions() pages exactly, covers every match once, and filters",
    async (store) => {
      const all: Execution[] = Array.from({ length: 30 }, (_, i) =>
        newExecution({
          definition_id: i % 3 === 0 ? "billing" : "order",
          status: (["RUNNING", "DONE", "FAILED"] as const)[i % 3 === 0 ? 0 : i % 2 + 1],
          parent_id: i % 5 === 0 ? "parent" : null,
        }));
      await Promise.all(all.map((exe) => store.save(exe)));
      const ids = (pred: (e: Execution) => boolean) => all.filter(pred).map((e) => e.id).sort();
      const { seen, sizes } = await walk(store, { limit: 7 });
      assert.deepEqual([...seen].sort(), ids(() => true));
      assert.deepEqual(sizes, [7, 7, 7, 7, 2]);
      assert.deepEqual(
        (await walk(store, { definitionId: "billing", limit: 4 })).seen.sort(),
        ids((e) => e.definition_id === "billing"),
      );
      assert.deepEqual(
        (await walk(store, { status: "DONE", limit: 3 })).seen.sort(),
        ids((e) => e.status === "DONE"),
      );
      assert.deepEqual(
        (await walk(store, { status: ["DONE", "FAILED"], limit: 5 })).seen.sort(),
        ids((e) => e.status === "DONE" || e.status === "FAILED"),
      );
      assert.deepEqual(
        (await walk(store, { rootsOnly: true, limit: 6 })).seen.sort(),
        ids((e) => e.parent_id === null),
      );
      const combined = await walk(store, {
        definitionId: "order",
        status: "FAILED",
        rootsOnly: true,
        limit: 2,
      });
      assert.deepEqual(
        combined.seen.sort(),
        ids((e) => e.definition_id === "order" && e.status === "FAILED" && e.parent_id === null),
      );
      const page = await store.listExecutions({ definitionId: "billing", limit: 1 });
      const exe = all.find((e) => e.id === page.items[0]!.id)!;
      const updatedAt = page.items[0]!.updated_at;
      assert.ok(typeof updatedAt === "number" && Math.abs(updatedAt - Date.now() / 1000) < 600);
      assert.deepEqual(page.items[0], {
        id: exe.id,
        definition_id: "billing",
        status: "RUNNING",
        outcome: null,
        active_path: null,
        version: 1,
        parent_id: exe.parent_id,
        updated_at: updatedAt,
      });
      const forged = new TextEncoder().encode('{"seq":1}').toBase64({ alphabet: "base64url" });
      for (const cursor of ["!!", forged]) {
        assert.ok((await rejection(store.listExecutions({ cursor }))) instanceof InvalidCursor);
      }
    },
  );

  await operatorSteps(step);
  await clockSteps(step);
  await deadLetterSteps(step);
  await executionOutboxSteps(step);

  await step(
    "trace indexes start at 0 and appendTrace() honours entry.index, as the seed",
    async (store) => {
      const exe = newExecution({ definition_id: "t" });
      await store.commit(exe, { trace: { n: 0 } });
      await store.appendTrace(exe.id, { n: 1, index: 5 });
      await store.appendTrace(exe.id, { n: 2 });
      assert.deepEqual((await store.readTrace(exe.id)).map((s) => [s.index, s.n]), [
        [0, 0],
        [5, 1],
        [6, 2],
      ]);
    },
  );

  await step(
    "deleteExecution() removes the execution, its timers, trace and dedupe marks, and nothing else",
    async (store) => {
      const exe = newExecution({ definition_id: "order", status: "RUNNING" });
      const other = newExecution({ definition_id: "order" });
      const timers = Array.from({ length: 30 }, (_, i) => ({
        action: "schedule" as const,
        path: `wait.${i}`,
        fireAt: 100 + i,
      }));
      const { outbox, spawns } = await store.commit(exe, {
        emits: [{ target: null, event: newEvent("order.created") }],
        spawns: [{ childId: "child", rootPath: "fork", context: {} }],
        processedEventId: "event-0",
        timers,
        trace: { n: 0 },
      });
      for (let n = 1; n <= 3; n++) {
        await store.commit(exe, { processedEventId: `event-${n}`, trace: { n } });
      }
      await store.appendTrace(exe.id, { note: "outside a commit" });
      await store.commit(other, {
        processedEventId: "event-0",
        timers: [{ action: "schedule", path: "wait.0", fireAt: 100 }],
        trace: { n: 0 },
      });
      const kept = await snapshotStore(store, [other.id]);

      assert.deepEqual(await store.deleteExecution(exe.id), {
        execution: true,
        timers: 30,
        trace: 5,
        processed: 4,
      });
      assert.equal(await store.load(exe.id), null);
      assert.deepEqual(await store.readTrace(exe.id), []);
      assert.equal(await store.isProcessed(exe.id, "event-2"), false);
      assert.deepEqual(
        (await store.listExecutions({ definitionId: "order" })).items.map((s) => s.id),
        [other.id],
      );
      kept.timers = kept.timers.filter((timer) => timer.executionId === other.id);
      const after = await snapshotStore(store, [other.id]);
      assert.deepEqual(after, kept, "the other execution, the outbox and the spawns stay");
      assert.deepEqual(after.outbox.map((e) => e.seq), outbox);
      assert.deepEqual(after.spawns.map((s) => s.seq), spawns);

      assert.deepEqual(
        await store.deleteExecution(exe.id),
        { execution: false, timers: 0, trace: 0, processed: 0 },
        "a second delete removes nothing",
      );
      const stale = await rejection(store.commit(exe));
      assert.ok(stale instanceof StoreConflict, String(stale));
      assert.deepEqual([stale.expected, stale.found], [4, null]);
      const again = newExecution({ definition_id: "order", id: exe.id });
      await store.commit(again, { trace: { n: "fresh" } });
      assert.equal(again.version, 1);
      assert.deepEqual((await store.readTrace(exe.id)).map((s) => s.n), ["fresh"]);
      await assert.rejects(store.deleteExecution(""), TypeError);
    },
    0,
  );

  await step(
    "mistakes are refused with errors that say what to do, and change nothing",
    async (store) => {
      const exe = newExecution({ definition_id: "d" });
      await store.save(exe);
      const before = await snapshotStore(store, [exe.id]);
      const nowMs = Date.now();
      const cases: [string, () => Promise<unknown>, RegExp][] = [
        [
          "a time in milliseconds",
          () => store.commit(exe, { timers: [{ action: "schedule", path: "p", fireAt: nowMs }] }),
          /epoch seconds/,
        ],
        ["dueTimers(Date.now())", () => store.dueTimers(nowMs), /epoch seconds/],
        ["a number DynamoDB cannot store", () => store.dueTimers(5e-324), /cannot store/],
        [
          "a document without status",
          () => store.save({ id: "x", definition_id: "d", version: 0 } as unknown as Execution),
          /exe\.status.*newExecution\(\)/,
        ],
        [
          "a Map in context",
          () => store.save({ ...exe, context: { tags: new Map() } }),
          /context\.tags is a Map/,
        ],
        ["a bad seq after duplicates", () => store.ackOutbox([3, 3, 3, -1]), /seq\[3\]/],
        [
          "a cursor of another listing",
          () =>
            store.listExecutions({
              cursor: new TextEncoder().encode(
                '{"table":"elsewhere_executions","query":"x","after":"x"}',
              ).toBase64({ alphabet: "base64url" }),
            }),
          /another listing/,
        ],
      ];
      for (const [what, call, message] of cases) {
        const error = await rejection(call());
        assert.match(error.message, message, what);
      }
      const first = store.commit(exe);
      const error = await rejection(store.commit(exe));
      assert.ok(error instanceof TypeError && /already being committed/.test(error.message));
      await first;
      assert.equal(exe.version, 2);
      before.executions[0] = await store.load(exe.id);
      assert.deepEqual(await snapshotStore(store, [exe.id]), before);
      await store.close();
      assert.ok((await rejection(store.load(exe.id))) instanceof StoreClosed);
      assert.ok((await rejection(store.commit(exe))) instanceof StoreClosed);
      assert.ok((await rejection(store.deleteExecution(exe.id))) instanceof StoreClosed);
    },
  );

  await step("input DynamoDB would reject is refused and changes nothing", async (store) => {
    const exe = newExecution({ definition_id: "d" });
    await store.commit(exe, { trace: { n: 1 } });
    const before = await snapshotStore(store, [exe.id]);
    const cases: [Execution, CommitChanges, typeof TypeError][] = [
      [
        exe,
        { emits: Array.from({ length: 100 }, () => ({ target: null, event: newEvent("e") })) },
        RangeError,
      ],
      [{ ...exe, context: { blob: "x".repeat(410_000) } }, {}, RangeError],
      [{ ...exe, context: { n: 1n } }, {}, TypeError],
      [exe, { timers: [{ action: "schedule", path: "p", fireAt: NaN }] }, RangeError],
      [{ ...exe, id: "" }, {}, TypeError],
      [exe, { processedEventId: "a\uD800" }, TypeError],
    ];
    for (const [input, changes, type] of cases) {
      const error = await rejection(
        store.commit(structuredClone({ ...input, context: { ...input.context } }), changes),
      );
      assert.ok(error instanceof type, `${error.name}: ${error.message}`);
    }
    await assert.rejects(store.dueTimers(-1), RangeError);
    await assert.rejects(store.load(""), TypeError);
    assert.deepEqual(await snapshotStore(store, [exe.id]), before);
  });
  await step(
    "documents follow the one JSON rule: classes refused, toJSON applied, cycles and depth named",
    async (store) => {
      for (const rule of jsonRuleCases()) {
        const exe = newExecution({ definition_id: "d" });
        await checkJsonRule(
          rule,
          (context) => store.commit({ ...exe, context }),
          async () => (await store.load(exe.id))?.context ?? null,
        );
      }
      // The execution is the first level, its context the second.
      const exe = newExecution({ definition_id: "d", context: nestedObject(HAREL_DEPTH - 1) });
      await store.commit(exe);
      assert.deepEqual((await store.load(exe.id))?.context, exe.context);
      const deeper = newExecution({ definition_id: "d", context: nestedObject(HAREL_DEPTH) });
      await assert.rejects(
        store.commit(deeper),
        (e) => e instanceof RangeError && tooDeep(HAREL_DEPTH).test(e.message),
      );
      assert.equal(await store.load(deeper.id), null);
    },
  );
}
