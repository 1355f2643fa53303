// The conformance steps on time: every time a store writes or reads, and the runners measure, is
// its own clock's, so a fake clock moves all of it on both stores.
import assert from "node:assert/strict";
import { newEvent, newExecution } from "../core/documents.ts";
import { relayOutbox, relaySpawns, sweepTimers } from "../relay.ts";
import type { Step } from "./_steps.ts";

/** A clock far from today (2033): a store measuring on `Date.now()` instead shows at once. */
const FAR = Date.UTC(2033, 0, 1) / 1000;

/** The time steps, in the suite's order. */
export async function clockSteps(step: Step): Promise<void> {
  await step(
    "a failed entry waits its backoff on the store's clock, then is retried and dead-lettered at its time",
    async (store, clock) => {
      clock.advance(FAR - clock.now() / 1000);
      const exe = newExecution({ definition_id: "clock" });
      const { outbox: [seq] } = await store.commit(exe, {
        emits: [{ target: "t", event: newEvent("e") }],
      });
      const fail = () => Promise.reject(new Error("down"));
      const options = { backoff: { minSeconds: 60 }, maxAttempts: 2 };
      assert.equal((await relayOutbox(store, fail, options)).failed, 1);
      assert.deepEqual(await store.pendingOutbox(), [], "waiting for its retry");
      // 5 s of the backoff left, for the real time a pass takes on a shared machine.
      clock.advance(55);
      assert.equal((await relayOutbox(store, fail, options)).failed, 0, "not yet");
      clock.advance(6);
      assert.equal((await relayOutbox(store, fail, options)).failed, 1, "due: tried, dead");
      const [letter] = await store.deadLetters("outbox");
      assert.equal(letter?.key, seq);
      assert.ok(Math.abs(letter!.deadAt - clock.now() / 1000) < 1, `dead at ${letter!.deadAt}`);
    },
  );

  await step(
    "relay lag and due timers are measured on the store's clock",
    async (store, clock) => {
      clock.advance(FAR - clock.now() / 1000);
      const exe = newExecution({ definition_id: "clock" });
      await store.commit(exe, {
        spawns: [{ childId: "c", rootPath: "r", context: {} }],
        timers: [{ action: "schedule", path: "p", fireAt: FAR + 30 }],
      });
      clock.advance(10);
      const report = await relaySpawns(store, () => {});
      assert.equal(report.delivered, 1);
      assert.ok(
        report.lagSeconds !== null && Math.abs(report.lagSeconds - 10) < 1,
        `lag ${report.lagSeconds}`,
      );
      assert.equal((await sweepTimers(store, () => {})).delivered, 0, "due in 20 s");
      clock.advance(21);
      assert.equal((await sweepTimers(store, () => {})).delivered, 1);
    },
  );

  await step(
    "a failure's error is kept to its first 1,000 UTF-8 bytes, cut between characters",
    async (store) => {
      const exe = newExecution({ definition_id: "clock" });
      const { outbox: [seq] } = await store.commit(exe, {
        emits: [{ target: "t", event: newEvent("e") }],
      });
      const error = "é".repeat(1000) + "!";
      assert.equal(
        await store.recordFailure("outbox", seq!, { attempts: 1, retryAt: null, error }),
        true,
      );
      const [letter] = await store.deadLetters("outbox");
      assert.equal(letter?.lastError, "é".repeat(500), "1,000 bytes: 500 characters of é");
    },
  );
}
