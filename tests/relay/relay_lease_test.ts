// Relays started together deliver each entry once: a pass takes its queue's lease, by key, and
// a relay that dies holding it holds the queue only until the lease runs out (30 s).
import assert from "node:assert/strict";
import { DynamoDBStore, newEvent, newExecution, relayOutbox, sweepTimers } from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import type { ExecutionStore } from "../../mod.ts";
import { directEndpoint, testClient, uniqueName } from "../_support/env.ts";
import { SeedTurns } from "../_support/seed_turns.ts";

/** A store on `store`'s tables whose client runs `hook` around each command it sends. */
function wrapped(
  store: DynamoDBStore,
  hook: (name: string, send: () => Promise<unknown>) => unknown,
) {
  const client = testClient();
  const sender = {
    send: (command: { constructor: { name: string } }) =>
      hook(command.constructor.name, () => client.send(command as never)),
  };
  const prefix = store.tables.executions.name.replace(/_executions$/, "");
  const view = new DynamoDBStore(sender as never, { prefix });
  return { view, [Symbol.dispose]: () => client.destroy() };
}

/** 600 entries to 12 targets, committed by one store. */
async function backlog(store: ExecutionStore): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < 12; i++) {
    const exe = newExecution({ definition_id: "lease" });
    const { outbox } = await store.commit(exe, {
      emits: Array.from({ length: 50 }, (_, k) => ({ target: `t${i}`, event: newEvent(`e${k}`) })),
    });
    seqs.push(...outbox);
  }
  return seqs;
}

/** Three relays started together, passes until each finds nothing: how often each entry went. */
async function threeRelays(stores: ExecutionStore[]): Promise<Map<number, number>> {
  const times = new Map<number, number>();
  await Promise.all(stores.map(async (store) => {
    for (let idle = 0; idle < 3;) {
      const report = await relayOutbox(store, async (entry) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        times.set(entry.seq, (times.get(entry.seq) ?? 0) + 1);
      }, { limit: 100 });
      idle = report.delivered === 0 ? idle + 1 : 0;
    }
  }));
  return times;
}

Deno.test("three relays started together on DynamoDB deliver each of 600 entries once", async () => {
  const prefix = uniqueName("lease");
  const open = (ensureTables = false) =>
    DynamoDBStore.create({ endpoint: directEndpoint(), prefix, ensureTables });
  await using writer = await open(true);
  const seqs = await backlog(writer);
  await using a = await open(), b = await open(), c = await open();
  const times = await threeRelays([a, b, c]);
  const twice = [...times.values()].filter((n) => n > 1).length;
  console.log(`delivered twice: ${twice} of ${seqs.length}`);
  assert.deepEqual([...times.keys()].sort((x, y) => x - y), seqs, "every entry delivered");
  assert.ok(twice <= seqs.length * 0.05, `${twice} delivered twice`);
});

Deno.test("three relays started together on a mixed fleet's tables (otherWriters: true) deliver each of 600 entries of ours and 120 of the Python store's once", async () => {
  const prefix = uniqueName("lease");
  const region = "sa-east-1"; // a database of its own: these tables have streams
  const open = (ensureTables = false) =>
    DynamoDBStore.create({
      endpoint: directEndpoint(),
      prefix,
      region,
      ensureTables,
      otherWriters: true,
    });
  await using writer = await open(true);
  const seqs = await backlog(writer);
  await using python = new SeedTurns(directEndpoint(), region);
  for (let i = 0; i < 12; i++) {
    const targets = Array.from({ length: 10 }, () => `t${i}`);
    seqs.push(...(await python.commit(prefix, crypto.randomUUID(), targets)).seqs);
  }
  seqs.sort((x, y) => x - y);
  await using a = await open(), b = await open(), c = await open();
  const times = await threeRelays([a, b, c]);
  const twice = [...times.values()].filter((n) => n > 1).length;
  console.log(`mixed: delivered twice: ${twice} of ${seqs.length}`);
  assert.deepEqual([...times.keys()].sort((x, y) => x - y), seqs, "every entry delivered");
  assert.ok(twice <= seqs.length * 0.05, `${twice} delivered twice`);
});

Deno.test("three relays started together on one MemoryStore deliver each of 600 entries once", async () => {
  const store = new MemoryStore();
  const seqs = await backlog(store);
  const times = await threeRelays([store, store, store]);
  assert.deepEqual([...times.keys()].sort((x, y) => x - y), seqs);
  assert.equal([...times.values()].filter((n) => n > 1).length, 0);
});

Deno.test("a relay that dies holding its queue's lease holds it until the lease runs out, and nothing is lost", async () => {
  const prefix = uniqueName("dies");
  const clock = { ms: Date.now() };
  const open = (ensureTables = false) =>
    DynamoDBStore.create({
      endpoint: directEndpoint(),
      prefix,
      ensureTables,
      now: () => clock.ms,
    });
  await using writer = await open(true);
  const seqs = await backlog(writer);
  // The relay's process dies at its first write after it took the outbox (its acknowledgements).
  let taken = false;
  using dying = wrapped(writer, async (name, send) => {
    if (taken && name !== "QueryCommand" && name !== "BatchGetItemCommand") {
      throw new Error("the relay's process died");
    }
    const answer = await send();
    if (name === "UpdateItemCommand") taken = true;
    return answer;
  });
  const first: number[] = [];
  await assert.rejects(relayOutbox(dying.view, (e) => void first.push(e.seq)), /died/);
  // Another relay finds the outbox taken until the lease runs out, then delivers everything.
  await using other = await open();
  const during: number[] = [];
  assert.equal((await relayOutbox(other, (e) => void during.push(e.seq))).delivered, 0);
  clock.ms += 45_000;
  const after = new Set<number>();
  for (let pass = 0; pass < 8 && after.size < seqs.length; pass++) {
    await relayOutbox(other, (e) => void after.add(e.seq));
  }
  assert.deepEqual([...after].sort((x, y) => x - y), seqs, "nothing lost");
  // Timers' sweeps take their own lease.
  assert.equal((await sweepTimers(other, () => {})).delivered, 0);
});
