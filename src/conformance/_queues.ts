// The execution-store conformance suite's steps for the relay queues: outbox entries, spawn
// intents and timers as commits leave them, and the bounded reads relays make of them.
import assert from "node:assert/strict";
import { newEvent, newExecution } from "../core/documents.ts";
import { StoreConflict } from "../core/errors.ts";
import type { Step } from "./_steps.ts";
import { rejection } from "./_shared.ts";
import { snapshotStore } from "./snapshot.ts";

/** The queue steps, in the suite's order. */
export async function queueSteps(step: Step): Promise<void> {
  await step(
    "commit() writes outbox entries and the dedupe mark also on the first insert",
    async (store) => {
      const exe = newExecution({ definition_id: "order" });
      const event = newEvent("order.created", { n: 1 });
      const result = await store.commit(exe, {
        emits: [{ target: "other", event }],
        processedEventId: "incoming-1",
      });
      assert.equal(result.version, 1);
      assert.deepEqual(await store.pendingOutbox(), [{
        seq: result.outbox[0],
        targetId: "other",
        event,
      }]);
      assert.equal(await store.isProcessed(exe.id, "incoming-1"), true);
      assert.equal(await store.isProcessed(exe.id, "incoming-2"), false);
      for (const eventId of ["incoming-1", "incoming-2"]) {
        const { execution, processed } = await store.loadForEvent(exe.id, eventId);
        assert.deepEqual(execution, { ...exe });
        assert.equal(processed, await store.isProcessed(exe.id, eventId));
      }
      assert.deepEqual(await store.loadForEvent("unknown", "e"), {
        execution: null,
        processed: false,
      });
    },
  );

  await step(
    "the outbox comes back ordered by seq across executions, and a null target round-trips",
    async (store) => {
      const a = newExecution({ definition_id: "d" });
      const b = newExecution({ definition_id: "d" });
      const seqs: number[] = [];
      for (const exe of [a, b, a, b]) {
        const { outbox } = await store.commit(exe, {
          emits: [{ target: null, event: newEvent("x") }, { target: exe.id, event: newEvent("y") }],
        });
        assert.ok(outbox[0]! < outbox[1]!);
        seqs.push(...outbox);
      }
      const pending = await store.pendingOutbox();
      assert.deepEqual(pending.map((e) => e.seq), [...seqs].sort((x, y) => x - y));
      assert.equal(new Set(seqs).size, 8);
      assert.equal(pending.filter((e) => e.targetId === null).length, 4);
      await store.ackOutbox(pending[0]!.seq);
      await store.ackOutbox(pending.map((e) => e.seq));
      assert.deepEqual(await store.pendingOutbox(), []);
    },
  );

  await step(
    "a lost CAS leaks no outbox entry, spawn, dedupe mark, timer or trace step",
    async (store) => {
      const exe = newExecution({ definition_id: "order" });
      await store.commit(exe, { trace: { step: 1 } });
      const stale = structuredClone(exe);
      await store.save(exe);
      const before = await snapshotStore(store, [exe.id]);
      const error = await rejection(store.commit(stale, {
        emits: [{ target: null, event: newEvent("leak") }],
        spawns: [{ childId: "child-1", rootPath: "fork.a", context: { x: 1 } }],
        processedEventId: "evt-leak",
        timers: [{ action: "schedule", path: "wait", fireAt: 1 }],
        trace: { step: "leak" },
      }));
      assert.ok(error instanceof StoreConflict);
      assert.equal(stale.version, 1);
      assert.deepEqual(await snapshotStore(store, [exe.id]), before);
      assert.equal(await store.isProcessed(exe.id, "evt-leak"), false);
    },
  );

  await step("spawns round-trip in seq order and ackSpawn removes them", async (store) => {
    const parent = newExecution({ definition_id: "fork" });
    const { spawns } = await store.commit(parent, {
      spawns: [
        { childId: "c1", rootPath: "fork.left", context: { side: "left" } },
        { childId: "c2", rootPath: "fork.right", context: { side: "right", n: [1, 2] } },
      ],
    });
    assert.deepEqual(await store.pendingSpawns(), [
      {
        seq: spawns[0],
        parentId: parent.id,
        childId: "c1",
        rootPath: "fork.left",
        context: { side: "left" },
      },
      {
        seq: spawns[1],
        parentId: parent.id,
        childId: "c2",
        rootPath: "fork.right",
        context: { side: "right", n: [1, 2] },
      },
    ]);
    await store.ackSpawn(spawns[0]!);
    assert.deepEqual((await store.pendingSpawns()).map((s) => s.childId), ["c2"]);
    await store.ackSpawn([spawns[1]!]);
    assert.deepEqual(await store.pendingSpawns(), []);
  });

  await step(
    "timers: schedule, not due, due, re-schedule, guarded delete, cancel, last change wins",
    async (store) => {
      const exe = newExecution({ definition_id: "t" });
      await store.save(exe);
      await store.commit(exe, { timers: [{ action: "schedule", path: "wait", fireAt: 100.5 }] });
      assert.deepEqual(await store.dueTimers(100), []);
      assert.deepEqual(await store.dueTimers(100.5), [{
        executionId: exe.id,
        path: "wait",
        fireAt: 100.5,
      }]);
      await store.commit(exe, { timers: [{ action: "schedule", path: "wait", fireAt: 200 }] });
      assert.deepEqual(await store.dueTimers(150), []);
      assert.equal(await store.deleteTimer(exe.id, "wait", 100.5), false);
      assert.equal(await store.deleteTimer(exe.id, "wait", 200), true);
      assert.deepEqual(await store.dueTimers(1e9), []);
      await store.commit(exe, {
        timers: [
          { action: "schedule", path: "a", fireAt: 10 },
          { action: "schedule", path: "b", fireAt: 5 },
          { action: "cancel", path: "a" },
          { action: "schedule", path: "c", fireAt: 1 },
          { action: "schedule", path: "c", fireAt: 3 },
        ],
      });
      assert.deepEqual(await store.dueTimers(1e9), [
        { executionId: exe.id, path: "c", fireAt: 3 },
        { executionId: exe.id, path: "b", fireAt: 5 },
      ]);
      await store.commit(exe, {
        timers: [{ action: "cancel", path: "b" }, { action: "cancel", path: "never-set" }],
      });
      assert.deepEqual((await store.dueTimers(1e9)).map((x) => x.path), ["c"]);
    },
  );

  await step(
    "bounded reads return the limit lowest seqs and earliest due timers, in order",
    async (store) => {
      const exe = newExecution({ definition_id: "bounded" });
      await store.save(exe);
      for (let round = 0; round < 3; round++) {
        await store.commit(exe, {
          emits: Array.from({ length: 10 }, (_, i) => ({
            target: `t${i % 3}`,
            event: newEvent("e", { round, i }),
          })),
          spawns: [{ childId: `c${round}`, rootPath: "r", context: { round } }],
          timers: [
            { action: "schedule", path: `p${round}`, fireAt: 100 - round },
            { action: "schedule", path: `q${round}`, fireAt: 200 + round },
          ],
        });
      }
      const outbox = await store.pendingOutbox({ limit: Infinity });
      assert.equal(outbox.length, 30);
      assert.deepEqual(outbox.map((e) => e.seq), outbox.map((e) => e.seq).sort((a, b) => a - b));
      assert.deepEqual(await store.pendingOutbox(), outbox, "the default limit (1000) covers 30");
      assert.deepEqual(await store.pendingOutbox({}), outbox);
      for (const limit of [1, 7, 29, 30, 31]) {
        assert.deepEqual(await store.pendingOutbox({ limit }), outbox.slice(0, limit));
      }
      const spawns = await store.pendingSpawns({ limit: Infinity });
      assert.deepEqual(spawns.map((s) => s.childId), ["c0", "c1", "c2"]);
      assert.deepEqual(await store.pendingSpawns({ limit: 2 }), spawns.slice(0, 2));
      const timers = await store.dueTimers(1e9, { limit: Infinity });
      assert.deepEqual(timers.map((x) => x.fireAt), [98, 99, 100, 200, 201, 202]);
      assert.deepEqual(await store.dueTimers(1e9, { limit: 4 }), timers.slice(0, 4));
      assert.deepEqual(await store.dueTimers(150, { limit: 2 }), timers.slice(0, 2));
      assert.deepEqual(await store.dueTimers(150, { limit: 5 }), timers.slice(0, 3));
      await store.ackOutbox(outbox.slice(0, 5).map((e) => e.seq));
      assert.deepEqual(await store.pendingOutbox({ limit: 3 }), outbox.slice(5, 8));
    },
  );

  await step("a bad limit is refused with a RangeError naming it", async (store) => {
    for (const limit of [0, -1, 1.5, NaN, -Infinity, 2 ** 53, "5", null]) {
      const reads = [
        store.pendingOutbox({ limit: limit as number }),
        store.pendingSpawns({ limit: limit as number }),
        store.dueTimers(1, { limit: limit as number }),
      ];
      for (const read of reads) {
        const error = await rejection(read);
        assert.ok(error instanceof RangeError, `${limit}: ${error.name}`);
        assert.match(error.message, /limit must be a positive integer or Infinity/);
      }
    }
    const error = await rejection(store.pendingOutbox(5 as unknown as { limit: number }));
    assert.ok(error instanceof TypeError, error.message);
  });
}
