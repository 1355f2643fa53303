// The twins on one fake clock: the same steps on DynamoDBStore and MemoryStore, on a clock
// far from today, must report the same — what a relay pass reports and what backlog() counts,
// before and after a pass has set apart what a failed entry holds.
import assert from "node:assert/strict";
import { type ExecutionStore, newEvent, newExecution, relayOutbox } from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { freshStore } from "../_support/env.ts";
import { passOutbox } from "../_support/passes.ts";

/** 2033-01-01: a store or relay reading `Date.now()` (or an event's own time) shows at once. */
const FAR = Date.UTC(2033, 0, 1);

type Clock = { ms: number };

/** Runs `steps` on both stores, each on its own fake clock from FAR; returns both results. */
async function onBoth<T>(
  steps: (store: ExecutionStore, clock: Clock) => Promise<T>,
): Promise<{ dynamo: T; memory: T }> {
  const results: T[] = [];
  for (
    const make of [
      (o: object) => freshStore(o),
      (o: object) => Promise.resolve(new MemoryStore(o)),
    ]
  ) {
    const clock = { ms: FAR };
    await using store = await make({ now: () => clock.ms });
    results.push(await steps(store, clock));
  }
  return { dynamo: results[0]!, memory: results[1]! };
}

/**
 * Entries e and f to target a and g to b, whose head (e) failed and waits 10 s for its retry:
 * f is held behind it, g is not.
 */
async function headWaiting(store: ExecutionStore, clock: Clock): Promise<number[]> {
  const { outbox } = await store.commit(newExecution({ definition_id: "held" }), {
    emits: [
      { target: "a", event: newEvent("e") },
      { target: "a", event: newEvent("f") },
      { target: "b", event: newEvent("g") },
    ],
  });
  await store.recordFailure("outbox", outbox[0]!, {
    attempts: 1,
    retryAt: clock.ms / 1000 + 10,
    error: "down",
  });
  return outbox;
}

Deno.test("relayOutbox reports an outbox entry's lag on the store's clock on both stores, not its event's created_time", async () => {
  const { dynamo, memory } = await onBoth(async (store, clock) => {
    await store.commit(newExecution({ definition_id: "lag" }), {
      emits: [{ target: "t", event: newEvent("e") }],
    });
    clock.ms += 10_000;
    return (await relayOutbox(store, () => Promise.resolve())).lagSeconds;
  });
  assert.equal(memory, 10);
  assert.equal(dynamo, memory);
});
Deno.test("backlog() counts an entry held behind a head whose retry has come as pending on both stores, as a pass hands it out", async () => {
  const { dynamo, memory } = await onBoth(async (store, clock) => {
    await headWaiting(store, clock);
    const counts = async () => {
      const { pending, waiting, dead, heldTargets } = await store.backlog("outbox");
      return { pending, waiting, dead, heldTargets };
    };
    const before = await counts();
    await passOutbox(store); // a pass: sets what the head holds apart
    const afterPass = await counts();
    clock.ms += 10_000;
    const due = await counts();
    const batch = await passOutbox(store);
    return { before, afterPass, due, handedOut: batch.items.length };
  });
  const held = { pending: 1, waiting: 1, dead: 0, heldTargets: 1 };
  assert.deepEqual(memory, {
    before: held,
    afterPass: held,
    due: { pending: 3, waiting: 0, dead: 0, heldTargets: 0 },
    handedOut: 3,
  });
  assert.deepEqual(dynamo, memory);
});

Deno.test("a head whose retry has come is delivered with what it held behind it, on both stores", async () => {
  const { dynamo, memory } = await onBoth(async (store, clock) => {
    await headWaiting(store, clock);
    const passes: string[][] = [];
    for (let i = 0; i < 3; i++) {
      const kinds: string[] = [];
      await relayOutbox(store, (entry) => {
        kinds.push(entry.event.kind);
      });
      passes.push(kinds);
      clock.ms += 10_000;
    }
    const { pending, waiting, heldTargets } = await store.backlog("outbox");
    return { passes, pending, waiting, heldTargets };
  });
  assert.deepEqual(memory, {
    passes: [["g"], ["e", "f"], []],
    pending: 0,
    waiting: 0,
    heldTargets: 0,
  });
  assert.deepEqual(dynamo, memory);
});

Deno.test("retrying a dead head releases its target, on both stores", async () => {
  const { dynamo, memory } = await onBoth(async (store) => {
    const { outbox: [head] } = await store.commit(newExecution({ definition_id: "dead" }), {
      emits: [{ target: "a", event: newEvent("e") }, { target: "a", event: newEvent("f") }],
    });
    await store.recordFailure("outbox", head!, { attempts: 10, retryAt: null, error: "gone" });
    const before: string[] = [];
    await relayOutbox(store, (entry) => {
      before.push(entry.event.kind);
    });
    const retried = await store.retryDeadLetter("outbox", head!);
    const after: string[] = [];
    await relayOutbox(store, (entry) => {
      after.push(entry.event.kind);
    });
    return { before, retried, after, pending: (await store.backlog("outbox")).pending };
  });
  assert.deepEqual(memory, { before: [], retried: true, after: ["e", "f"], pending: 0 });
  assert.deepEqual(dynamo, memory);
});

Deno.test("delivery within the request behind a head whose retry is due sends the head alone, on both stores", async () => {
  const { dynamo, memory } = await onBoth(async (store, clock) => {
    const { outbox: [head, behind] } = await store.commit(
      newExecution({ definition_id: "due" }),
      {
        emits: [
          { target: "a", event: newEvent("e") },
          { target: "a", event: newEvent("f") },
        ],
      },
    );
    await store.recordFailure("outbox", head!, {
      attempts: 1,
      retryAt: clock.ms / 1000 + 10,
      error: "down",
    });
    clock.ms += 11_000; // the head's retry is due
    const seen: number[][] = [];
    for (const seqs of [[behind!], [head!, behind!]]) {
      const delivered: number[] = [];
      await relayOutbox(store, (e) => Promise.resolve(void delivered.push(e.seq)), { seqs });
      seen.push(delivered.map((seq) => seq - head!));
    }
    return seen;
  });
  assert.deepEqual(memory, [[], [0]], "the entry behind waits for its head, which goes alone");
  assert.deepEqual(dynamo, memory);
});

Deno.test("relayOutbox's lag leaves out an entry waiting for a retry still to come, on both stores", async () => {
  const { dynamo, memory } = await onBoth(async (store, clock) => {
    const { outbox: [head] } = await store.commit(newExecution({ definition_id: "lag" }), {
      emits: [{ target: "a", event: newEvent("e") }],
    });
    await store.recordFailure("outbox", head!, {
      attempts: 1,
      retryAt: clock.ms / 1000 + 100,
      error: "down",
    });
    clock.ms += 50_000;
    await store.commit(newExecution({ definition_id: "later" }), {
      emits: [{ target: "b", event: newEvent("g") }],
    });
    clock.ms += 2_000;
    return (await relayOutbox(store, () => Promise.resolve())).lagSeconds;
  });
  assert.equal(memory, 2, "g is the oldest the pass sees: e waits for its retry");
  assert.equal(dynamo, memory);
});

Deno.test("relayOutbox reports as held the entries it left behind a held target, within the request and in a pass, on both stores", async () => {
  const { dynamo, memory } = await onBoth(async (store, clock) => {
    const [, f] = await headWaiting(store, clock);
    const report = async (options: { seqs?: number[] } = {}, fail = false) => {
      const { delivered, failed, held } = await relayOutbox(store, () => {
        if (fail) throw new Error("down");
      }, options);
      return { delivered, failed, held };
    };
    const inline = await report({ seqs: [f!] });
    const pass = await report(); // delivers g, sets f apart behind e
    const again = await report(); // f was set apart: this pass does not meet it
    const inlineAgain = await report({ seqs: [f!] });
    // Two entries to c, the first of which fails in this pass: the second is left behind it.
    const { outbox: [x, y] } = await store.commit(newExecution({ definition_id: "c" }), {
      emits: [{ target: "c", event: newEvent("x") }, { target: "c", event: newEvent("y") }],
    });
    const failing = await report({ seqs: [x!, y!] }, true);
    return { inline, pass, again, inlineAgain, failing };
  });
  assert.deepEqual(memory, {
    inline: { delivered: 0, failed: 0, held: 1 },
    pass: { delivered: 1, failed: 0, held: 1 },
    again: { delivered: 0, failed: 0, held: 0 },
    inlineAgain: { delivered: 0, failed: 0, held: 1 },
    failing: { delivered: 0, failed: 1, held: 1 },
  });
  assert.deepEqual(dynamo, memory);
});

Deno.test("a head acknowledged without a pass handing it out releases its target: the next pass delivers what it held, on both stores", async () => {
  const { dynamo, memory } = await onBoth(async (store, clock) => {
    const [head] = await headWaiting(store, clock);
    const pass = async () => {
      const { items, held } = await passOutbox(store);
      await store.ackOutbox(items.map(({ item }) => item.seq));
      return { kinds: items.map(({ item }) => item.event.kind), held };
    };
    const first = await pass(); // f is set apart behind e
    await store.ackOutbox(head!); // e delivered elsewhere: no pass handed it out
    await store.commit(newExecution({ definition_id: "later" }), {
      emits: [{ target: "a", event: newEvent("h") }],
    });
    const passes = [first, await pass(), await pass(), await pass()];
    const { pending, waiting, heldTargets } = await store.backlog("outbox");
    return { passes, pending, waiting, heldTargets };
  });
  assert.deepEqual(memory, {
    passes: [
      { kinds: ["g"], held: 1 },
      { kinds: ["f", "h"], held: 0 }, // e's acknowledgement released a
      { kinds: [], held: 0 },
      { kinds: [], held: 0 },
    ],
    pending: 0,
    waiting: 0,
    heldTargets: 0,
  });
  assert.deepEqual(dynamo, memory);
});
