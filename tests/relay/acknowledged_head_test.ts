// A held target is released by what a pass reads, never by what a store instance remembers: the
// entries set apart behind a head go out on the next passes once the head is acknowledged,
// whichever instance handed it out, recorded its failure or acknowledged it.
import assert from "node:assert/strict";
import {
  DynamoDBStore,
  type ExecutionStore,
  newEvent,
  newExecution,
  relayOutbox,
} from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { endpoint, uniqueName } from "../_support/env.ts";

/** A fake clock (epoch ms) that every store of a test reads. */
type Clock = { ms: number };

/** Commits e1, e2, e3 to one target, in that order: their seqs. */
async function threeToOneTarget(store: ExecutionStore): Promise<[number, number, number]> {
  const { outbox } = await store.commit(newExecution({ definition_id: "acknowledged-head" }), {
    emits: ["e1", "e2", "e3"].map((kind) => ({ target: "a", event: newEvent(kind) })),
  });
  assert.equal(outbox.length, 3);
  return outbox as [number, number, number];
}

/** A delivery of e1 failed, its retry ten seconds on: true when it was recorded. */
function failDelivery(
  store: ExecutionStore,
  e1: number,
  clock: Clock,
  attempts = 1,
): Promise<boolean> {
  return store.recordFailure("outbox", e1, {
    attempts,
    retryAt: clock.ms / 1000 + 10,
    error: "target a is down",
  });
}

/** A relay pass: the seqs it delivered, in order. */
async function pass(store: ExecutionStore): Promise<number[]> {
  const delivered: number[] = [];
  await relayOutbox(store, (entry) => void delivered.push(entry.seq));
  return delivered;
}

/** Three passes, each on a fresh instance `open` gives, or all on the one `store`: what they delivered. */
async function threePasses(on: ExecutionStore | (() => Promise<DynamoDBStore>)): Promise<number[]> {
  const delivered: number[] = [];
  for (let i = 0; i < 3; i++) {
    if (typeof on !== "function") delivered.push(...await pass(on));
    else {
      await using fresh = await on();
      delivered.push(...await pass(fresh));
    }
  }
  return delivered;
}

/** Nothing of the outbox is left: no entry pending, waiting or dead, no target held. */
async function assertNothingLeft(store: ExecutionStore): Promise<void> {
  const { pending, waiting, dead, heldTargets } = await store.backlog("outbox");
  assert.deepEqual({ pending, waiting, dead, heldTargets }, {
    pending: 0,
    waiting: 0,
    dead: 0,
    heldTargets: 0,
  });
}

/** Store instances on one table, as separate isolates of one deployment open them. */
function instances(prefix: string, clock: Clock) {
  return (ensureTables = false) =>
    DynamoDBStore.create({ endpoint: endpoint(), prefix, ensureTables, now: () => clock.ms });
}

Deno.test("entries set apart behind a head go out on fresh passes when an instance that never handed the head out acknowledges it (DynamoDBStore)", async () => {
  const clock = { ms: Date.now() };
  const open = instances(uniqueName("ackhead"), clock);
  await using committing = await open(true);
  const [e1, e2, e3] = await threeToOneTarget(committing);

  await using handing = await open();
  assert.deepEqual((await handing.pendingOutbox({ limit: 1 })).map((entry) => entry.seq), [e1]);
  await using failing = await open();
  assert.equal(await failDelivery(failing, e1, clock), true);
  await using setting = await open();
  assert.deepEqual(await pass(setting), [], "e2 and e3 wait behind e1, whose retry is to come");
  await using acking = await open();
  await acking.ackOutbox(e1);

  assert.deepEqual(await threePasses(open), [e2, e3]);
  await using reading = await open();
  await assertNothingLeft(reading);
});

Deno.test("entries behind a head go out, in order, when its acknowledgement lands before its failure is recorded (DynamoDBStore)", async () => {
  const clock = { ms: Date.now() };
  const open = instances(uniqueName("ackfirst"), clock);
  await using committing = await open(true);
  const [e1, e2, e3] = await threeToOneTarget(committing);

  await using handing = await open();
  assert.deepEqual((await handing.pendingOutbox({ limit: 1 })).map((entry) => entry.seq), [e1]);
  await using acking = await open();
  await acking.ackOutbox(e1);
  await using failing = await open();
  assert.equal(await failDelivery(failing, e1, clock), false, "e1 is gone: nothing to record");
  await using setting = await open();
  const delivered = await pass(setting);

  delivered.push(...await threePasses(open));
  assert.deepEqual(delivered, [e2, e3]);
  await using reading = await open();
  await assertNothingLeft(reading);
});

// A MemoryStore is one instance: an acknowledgement from elsewhere is one of a seq it never handed
// out (here the commit's own seq, as a custom relay or an operator has it).
Deno.test("entries set apart behind a head go out on the next passes when a head the store never handed out is acknowledged (MemoryStore)", async () => {
  const clock = { ms: Date.now() };
  const store = new MemoryStore({ now: () => clock.ms });
  const [e1, e2, e3] = await threeToOneTarget(store);

  assert.equal(await failDelivery(store, e1, clock), true);
  assert.deepEqual(await pass(store), [], "e2 and e3 wait behind e1, whose retry is to come");
  await store.ackOutbox(e1);

  assert.deepEqual(await threePasses(store), [e2, e3]);
  await assertNothingLeft(store);
});

Deno.test("entries behind a head go out, in order, when its acknowledgement lands before its failure is recorded (MemoryStore)", async () => {
  const clock = { ms: Date.now() };
  const store = new MemoryStore({ now: () => clock.ms });
  const [e1, e2, e3] = await threeToOneTarget(store);

  assert.deepEqual((await store.pendingOutbox({ limit: 1 })).map((entry) => entry.seq), [e1]);
  await store.ackOutbox(e1);
  assert.equal(await failDelivery(store, e1, clock), false, "e1 is gone: nothing to record");
  const delivered = await pass(store);

  delivered.push(...await threePasses(store));
  assert.deepEqual(delivered, [e2, e3]);
  await assertNothingLeft(store);
});

// The mirror with something set apart: e1 already holds its target when its retry is handed out,
// and the acknowledgement lands before that retry's failure is recorded.
Deno.test("entries set apart behind a head go out on fresh passes when its due retry is handed out and acknowledged before that retry's failure is recorded (DynamoDBStore)", async () => {
  const clock = { ms: Date.now() };
  const open = instances(uniqueName("ackretry"), clock);
  await using committing = await open(true);
  const [e1, e2, e3] = await threeToOneTarget(committing);
  await using failing = await open();
  assert.equal(await failDelivery(failing, e1, clock), true);
  await using setting = await open();
  assert.deepEqual(await pass(setting), [], "e2 and e3 wait behind e1, whose retry is to come");

  clock.ms += 11_000;
  await using handing = await open();
  assert.deepEqual((await handing.pendingOutbox({ limit: 1 })).map((entry) => entry.seq), [e1]);
  await using acking = await open();
  await acking.ackOutbox(e1);
  assert.equal(await failDelivery(handing, e1, clock, 2), false, "e1 is gone: nothing to record");

  assert.deepEqual(await threePasses(open), [e2, e3]);
  await using reading = await open();
  await assertNothingLeft(reading);
});

Deno.test("entries set apart behind a head go out on the next passes when its due retry, never handed out by the store, is acknowledged before that retry's failure is recorded (MemoryStore)", async () => {
  const clock = { ms: Date.now() };
  const store = new MemoryStore({ now: () => clock.ms });
  const [e1, e2, e3] = await threeToOneTarget(store);
  assert.equal(await failDelivery(store, e1, clock), true);
  assert.deepEqual(await pass(store), [], "e2 and e3 wait behind e1, whose retry is to come");

  clock.ms += 11_000;
  await store.ackOutbox(e1);
  assert.equal(await failDelivery(store, e1, clock, 2), false, "e1 is gone: nothing to record");

  assert.deepEqual(await threePasses(store), [e2, e3]);
  await assertNothingLeft(store);
});
