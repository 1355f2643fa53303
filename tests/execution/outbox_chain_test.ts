// Each outbox entry names its source's previous entry to the same target (`prev_seq`), from
// the chains the execution item keeps (`outbox_last`): across store instances, after another
// writer's whole-item Put, and past the map's cap.
import assert from "node:assert/strict";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newEvent, newExecution, relayOutbox } from "../../mod.ts";
import { CHAIN_CAP } from "../../src/execution/commit/_outbox_chain.ts";
import { countingClient, testClient, uniqueName } from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";

/** The chain attributes of one stored outbox entry. */
async function linkOf(store: DynamoDBStore, seq: number) {
  using client = testClient();
  const { Item } = await client.send(
    new GetItemCommand({
      TableName: store.tables.outbox.name,
      Key: { seq: { N: String(seq) } },
      ConsistentRead: true,
    }),
  );
  return {
    source: Item?.source_id?.S,
    prev: Item?.prev_seq?.N === undefined ? undefined : Number(Item.prev_seq.N),
  };
}

Deno.test("outbox entries name the previous seq of the same source and target, across store instances", async () => {
  using counting = countingClient();
  const prefix = uniqueName("chain");
  const a = new DynamoDBStore(counting.client, { prefix });
  await a.ensureTables();
  const exe = newExecution({ definition_id: "d" });
  const first = await a.commit(exe, {
    emits: [
      { target: "t", event: newEvent("1") },
      { target: "u", event: newEvent("2") },
      { target: "t", event: newEvent("3") },
    ],
  });
  assert.deepEqual(await linkOf(a, first.outbox[0]!), { source: exe.id, prev: 0 });
  assert.deepEqual(await linkOf(a, first.outbox[1]!), { source: exe.id, prev: 0 });
  assert.deepEqual(await linkOf(a, first.outbox[2]!), { source: exe.id, prev: first.outbox[0] });

  // Another instance that did not read the execution reads its chains first: one GetItem.
  const b = new DynamoDBStore(counting.client, { prefix });
  counting.calls.length = 0;
  const second = await b.commit(exe, { emits: [{ target: "t", event: newEvent("4") }] });
  assert.ok(counting.calls.includes("GetItemCommand"));
  assert.deepEqual(await linkOf(b, second.outbox[0]!), { source: exe.id, prev: first.outbox[2] });

  // A store that loaded the execution knows them: no read before the commit (its seqs are lower
  // than b's, so the watermark sends it for a fresh block, as before).
  const loaded = (await a.load(exe.id))!;
  counting.calls.length = 0;
  const third = await a.commit(loaded, { emits: [{ target: "u", event: newEvent("5") }] });
  assert.ok(!counting.calls.includes("GetItemCommand"), counting.calls.join());
  assert.deepEqual(await linkOf(a, third.outbox[0]!), { source: exe.id, prev: first.outbox[1] });

  // A commit from a version this store did not see fails before anything is sent.
  const stale = { ...exe, version: 1 };
  await assert.rejects(
    new DynamoDBStore(counting.client, { prefix }).commit(stale, {
      emits: [{ target: "t", event: newEvent("x") }],
    }),
    (error: Error) => error.name === "StoreConflict",
  );
});

Deno.test("after a Python worker's whole-item Put the next entry's predecessor is unknown, and the chain starts again", async () => {
  using client = testClient();
  const store = new DynamoDBStore(client, { prefix: uniqueName("chainpy") });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "d" });
  const before = await store.commit(exe, { emits: [{ target: "t", event: newEvent("ours") }] });
  // The seed writes id, data, version and definition_id only.
  exe.version += 1;
  await seedPutExecution(client, store.tables.executions.name, exe);
  const loaded = (await store.load(exe.id))!;
  const after = await store.commit(loaded, { emits: [{ target: "t", event: newEvent("a") }] });
  assert.deepEqual(await linkOf(store, after.outbox[0]!), { source: exe.id, prev: undefined });
  const next = await store.commit(loaded, { emits: [{ target: "t", event: newEvent("b") }] });
  assert.deepEqual(await linkOf(store, next.outbox[0]!), { source: exe.id, prev: after.outbox[0] });
  // Unchained entries keep seq order per target within a pass, as before.
  const seen: number[] = [];
  await relayOutbox(store, (entry) => Promise.resolve(void seen.push(entry.seq)));
  assert.deepEqual(seen, [before.outbox[0], after.outbox[0], next.outbox[0]]);
});

Deno.test(`an execution emitting to more than ${CHAIN_CAP} targets forgets the oldest: their next entry's predecessor is unknown, never wrong`, async () => {
  using client = testClient();
  const store = new DynamoDBStore(client, { prefix: uniqueName("chaincap") });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "d" });
  const targets = Array.from({ length: CHAIN_CAP + 20 }, (_, i) => `t${i}`);
  await store.save(exe);
  const seqs: number[] = [];
  for (let i = 0; i < targets.length; i += 50) {
    const { outbox } = await store.commit(exe, {
      emits: targets.slice(i, i + 50).map((target) => ({ target, event: newEvent("e") })),
    });
    seqs.push(...outbox);
  }
  const again = await store.commit(exe, {
    emits: [{ target: "t0", event: newEvent("old") }, {
      target: `t${CHAIN_CAP + 19}`,
      event: newEvent("new"),
    }],
  });
  assert.deepEqual(await linkOf(store, again.outbox[0]!), { source: exe.id, prev: undefined });
  assert.deepEqual(await linkOf(store, again.outbox[1]!), { source: exe.id, prev: seqs.at(-1) });
});
