// The conformance steps for dead letters retried or dropped in bulk, and a queue's backlog.
import assert from "node:assert/strict";
import { newEvent, newExecution } from "../core/documents.ts";
import type { ExecutionStore } from "../core/types.ts";
import { rejection } from "./_shared.ts";
import type { Step } from "./_steps.ts";

/** Commits one outbox entry to each target, and a spawn intent: their seqs. */
async function commitEntries(
  store: ExecutionStore,
  targets: string[],
): Promise<{ outbox: number[]; spawn: number }> {
  const { outbox, spawns } = await store.commit(newExecution({ definition_id: "dead" }), {
    emits: targets.map((target) => ({ target, event: newEvent("e") })),
    spawns: [{ childId: "child", rootPath: "fork", context: {} }],
  });
  return { outbox, spawn: spawns[0]! };
}

const dead = { attempts: 1, retryAt: null, error: "down" };

/** The dead-letter and backlog steps, in the suite's order. */
export async function deadLetterSteps(step: Step): Promise<void> {
  await step(
    "deadLetters() says which execution each came from: an outbox entry's emitter, a spawn's parent, a timer's execution",
    async (store) => {
      const exe = newExecution({ definition_id: "dead" });
      const fireAt = 1_700_000_000;
      const { outbox, spawns } = await store.commit(exe, {
        emits: [{ target: "payments", event: newEvent("e") }],
        spawns: [{ childId: "child", rootPath: "fork", context: {} }],
        timers: [{ action: "schedule", path: "wait", fireAt }],
      });
      await store.recordFailure("outbox", outbox[0]!, dead);
      await store.recordFailure("spawns", spawns[0]!, dead);
      await store.recordFailure("timers", { executionId: exe.id, path: "wait", fireAt }, dead);
      for (const kind of ["outbox", "spawns", "timers"] as const) {
        const letters = await store.deadLetters(kind);
        assert.deepEqual(letters.map((d) => d.sourceId), [exe.id], kind);
      }
    },
  );

  await step(
    "retryDeadLetters() and dropDeadLetters() resolve to how many they acted on, with or without onProgress",
    async (store) => {
      const { outbox, spawn } = await commitEntries(store, ["T", "T", "U"]);
      for (const seq of outbox) assert.equal(await store.recordFailure("outbox", seq, dead), true);
      assert.equal(await store.recordFailure("spawns", spawn, dead), true);
      assert.equal(await store.retryDeadLetters("outbox", { targetId: "T" }), 2);
      assert.deepEqual((await store.deadLetters("outbox")).map((d) => d.key), [outbox[2]]);
      const seen: number[] = [];
      assert.equal(await store.dropDeadLetters("outbox", { onProgress: (n) => seen.push(n) }), 1);
      assert.deepEqual(seen, [1]);
      assert.equal(await store.dropDeadLetters("spawns"), 1);
      assert.equal(await store.dropDeadLetters("spawns"), 0);
      assert.equal(await store.retryDeadLetters("outbox"), 0);
      assert.deepEqual((await store.pendingOutbox()).map((e) => e.seq), outbox.slice(0, 2));
    },
  );

  await step(
    "the bulk dead-letter calls, deadLetters() and backlog() refuse an option they do not know, naming the near miss, before acting",
    async (store) => {
      const { outbox } = await commitEntries(store, ["T", "U"]);
      for (const seq of outbox) await store.recordFailure("outbox", seq, dead);
      const misspelt = { target: "T" } as unknown as { targetId: string };
      for (
        const call of [
          () => store.dropDeadLetters("outbox", misspelt),
          () => store.retryDeadLetters("outbox", misspelt),
          () => store.deadLetters("outbox", misspelt),
        ]
      ) {
        const error = await rejection(call());
        assert.ok(error instanceof TypeError, String(error));
        assert.match(error.message, /no option "target": did you mean "targetId"\?/);
      }
      const limit = await rejection(
        store.backlog("outbox", { limt: 5 } as unknown as { limit: number }),
      );
      assert.ok(limit instanceof TypeError && /did you mean "limit"/.test(limit.message));
      assert.deepEqual((await store.deadLetters("outbox")).map((d) => d.key), outbox);
    },
  );

  await step(
    "backlog() counts an item whose retry is due as pending, and one whose retry is to come as waiting",
    async (store) => {
      const now = Date.now() / 1000;
      const { outbox, spawn } = await commitEntries(store, ["due", "later"]);
      await store.recordFailure("outbox", outbox[0]!, {
        attempts: 1,
        retryAt: now - 5,
        error: "x",
      });
      await store.recordFailure("outbox", outbox[1]!, {
        attempts: 1,
        retryAt: now + 3600,
        error: "x",
      });
      await store.recordFailure("spawns", spawn, { attempts: 1, retryAt: now - 5, error: "x" });
      const outboxBacklog = await store.backlog("outbox");
      assert.deepEqual(
        { ...outboxBacklog, oldestAt: undefined },
        { pending: 1, waiting: 1, dead: 0, heldTargets: 1, capped: false, oldestAt: undefined },
      );
      const spawns = await store.backlog("spawns");
      assert.deepEqual([spawns.pending, spawns.waiting, spawns.dead], [1, 0, 0]);
    },
  );
}
