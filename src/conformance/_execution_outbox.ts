// The conformance steps for one execution's outbox: what it emitted, and what is to it and
// failed or is held, with the relay's state of each.
import assert from "node:assert/strict";
import { newEvent, newExecution } from "../core/documents.ts";
import type { ExecutionStore, OutboxEntryState } from "../core/types.ts";
import { rejection } from "./_shared.ts";
import { applyPlan, readOutbox } from "../core/_outbox_pipeline.ts";
import type { Step } from "./_steps.ts";

/** An entry's seq, event kind, source, target, state and what it waits behind, in a line. */
function line(seqs: Map<number, string>) {
  return (e: OutboxEntryState) =>
    `${seqs.get(e.seq)} ${e.event?.kind} ${e.state}${
      e.heldBehind === null ? "" : ` behind ${seqs.get(e.heldBehind)}`
    }`;
}

/** The executionOutbox steps, in the suite's order. */
export async function executionOutboxSteps(step: Step): Promise<void> {
  await step(
    "executionOutbox() lists what an execution emitted and what failed on its way to it, pending, waiting, dead or held, after a relay pass",
    async (store: ExecutionStore) => {
      const now = Date.now() / 1000;
      const target = newExecution({ definition_id: "target" });
      await store.save(target);
      const source = newExecution({ definition_id: "source" });
      const { outbox } = await store.commit(source, {
        emits: [
          { target: "svc", event: newEvent("e1") },
          { target: "svc", event: newEvent("e2") },
          { target: null, event: newEvent("e3") },
          { target: target.id, event: newEvent("t1") },
          { target: target.id, event: newEvent("t2") },
        ],
      });
      const [e1, , , t1] = outbox;
      const names = new Map(outbox.map((seq, i) => [seq, ["e1", "e2", "e3", "t1", "t2"][i]!]));
      await store.recordFailure("outbox", e1!, { attempts: 1, retryAt: now + 3600, error: "503" });
      await store.recordFailure("outbox", t1!, { attempts: 10, retryAt: null, error: "gone" });
      // A pass's reads and writes, delivering nothing: e2 and t2 set apart behind their heads.
      const queue = store.outboxQueue;
      await applyPlan(queue, await readOutbox(queue, { now: queue.now(), limit: 1000 }));

      const emitted = await store.executionOutbox(source.id);
      assert.deepEqual(emitted.emitted.map(line(names)), [
        "e1 e1 waiting",
        "e2 e2 held behind e1",
        "e3 e3 pending",
        "t1 t1 dead",
        "t2 t2 held behind t1",
      ]);
      assert.deepEqual([emitted.emittedPartial, emitted.targeting, emitted.targetingPartial], [
        false,
        [],
        false,
      ]);
      const [first] = emitted.emitted;
      assert.deepEqual(
        { ...first, event: first!.event?.kind },
        {
          seq: e1,
          sourceId: source.id,
          targetId: "svc",
          event: "e1",
          state: "waiting",
          attempts: 1,
          retryAt: now + 3600,
          deadAt: null,
          lastError: "503",
          heldBehind: null,
        },
      );

      const to = await store.executionOutbox(target.id);
      assert.deepEqual(to.targeting.map(line(names)), ["t1 t1 dead", "t2 t2 held behind t1"]);
      assert.deepEqual(to.targeting.map((e) => e.sourceId), [source.id, source.id]);
      assert.deepEqual([to.emitted, to.emittedPartial, to.targetingPartial], [[], false, false]);

      const cut = await store.executionOutbox(source.id, { limit: 2 });
      assert.deepEqual([cut.emitted.length, cut.emittedPartial], [2, true]);
      const gone = await store.executionOutbox("no-such-execution");
      assert.deepEqual(gone, {
        emitted: [],
        emittedPartial: true,
        targeting: [],
        targetingPartial: false,
      });
    },
  );

  await step(
    "executionOutbox() refuses an empty id, a limit out of 1 to 1000 and an option it does not know, naming it",
    async (store: ExecutionStore) => {
      assert.ok((await rejection(store.executionOutbox(""))) instanceof TypeError);
      for (const limit of [0, 1001, 2.5]) {
        const error = await rejection(store.executionOutbox("e", { limit }));
        assert.ok(error instanceof RangeError, String(error));
        assert.match(error.message, /options\.limit must be an integer from 1 to 1000/);
      }
      const misspelt = { limt: 5 } as unknown as { limit: number };
      const error = await rejection(store.executionOutbox("e", misspelt));
      assert.ok(error instanceof TypeError && /did you mean "limit"/.test(error.message));
    },
  );
}
