// The twins on one fake clock (#26): the same steps on DynamoDBStore and MemoryStore, on a clock
// far from today, must report the same — what a relay pass reports and what backlog() counts.
import assert from "node:assert/strict";
import { type ExecutionStore, newEvent, newExecution, relayOutbox } from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { freshStore } from "../_support/env.ts";

/** 2033-01-01: a store or relay reading `Date.now()` (or an event's own time) shows at once. */
const FAR = Date.UTC(2033, 0, 1);

type Clock = { ms: number };

/** Runs `steps` on both stores, each on its own fake clock from FAR; returns both results. */
async function onBoth<T>(
  steps: (store: ExecutionStore, clock: Clock) => Promise<T>,
): Promise<{ dynamo: T; memory: T }> {
  const results: T[] = [];
  for (const make of [freshStore, (o: object) => Promise.resolve(new MemoryStore(o))]) {
    const clock = { ms: FAR };
    await using store = await make({ now: () => clock.ms });
    results.push(await steps(store, clock));
  }
  return { dynamo: results[0]!, memory: results[1]! };
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
