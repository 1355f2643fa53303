// Bounded, ordered reads on DynamoDB Local: a backlog far above `limit` costs memory in
// `limit`, not in the backlog; and a bad limit is refused before anything is sent.
import assert from "node:assert/strict";
import { DynamoDBStore } from "../../mod.ts";
import { countingClient, testClient, uniqueName } from "../_support/env.ts";
import { heapProbe, seedOutbox } from "../_support/heap.ts";

const BACKLOG = 20_000;
/**
 * What pendingOutbox({ limit: 100 }) may hold at its peak: the 100 entries it returns
 * (~0.1 MB parsed), a heap of 100 seqs, and one keys-only scan page. DynamoDB evaluates
 * at most 1 MB of items per Scan page; with these ~400-byte entries a page carries ~2,600
 * keys (~0.3 MB as SDK objects and response text). 2 MB leaves room for the SDK's buffers;
 * reading the backlog whole holds all 20,000 entries (~17 MB).
 */
const BOUND_BYTES = 2 * 1024 * 1024;

Deno.test("pendingOutbox({ limit: 100 }) of a 20,000-entry backlog grows the heap by under 2 MB", async () => {
  using client = testClient();
  const probe = heapProbe(client);
  const store = new DynamoDBStore(client, { prefix: uniqueName("heap") });
  await store.ensureTables();
  await seedOutbox(client, store.tables.outbox.name, BACKLOG);
  const { result, grownBytes } = await probe.measure(() => store.pendingOutbox({ limit: 100 }));
  assert.deepEqual(result.map((e) => e.seq), Array.from({ length: 100 }, (_, i) => i + 1));
  assert.equal(result[0]!.targetId, "target-1");
  assert.equal(result[0]!.event.kind, "backlog");
  console.log(`heap grown by pendingOutbox({ limit: 100 }): ${(grownBytes / 1e6).toFixed(3)} MB`);
  assert.ok(grownBytes < BOUND_BYTES, `grew ${grownBytes} bytes, bound ${BOUND_BYTES}`);
  // The lowest seqs, wherever the scan finds them: ack some and the next ones come.
  await store.ackOutbox(result.slice(0, 60).map((e) => e.seq));
  const next = await store.pendingOutbox({ limit: 50 });
  assert.deepEqual(next.map((e) => e.seq), Array.from({ length: 50 }, (_, i) => i + 61));
});

Deno.test("a bad limit is refused before anything is sent", async () => {
  using counting = countingClient();
  const { client, calls } = counting;
  const store = new DynamoDBStore(client, { prefix: uniqueName("limit") });
  for (const limit of [0, -5, 2.5, NaN, "10"]) {
    await assert.rejects(store.pendingOutbox({ limit: limit as number }), RangeError);
    await assert.rejects(store.pendingSpawns({ limit: limit as number }), RangeError);
    await assert.rejects(store.dueTimers(1, { limit: limit as number }), RangeError);
  }
  assert.deepEqual(calls, []);
});

Deno.test("a bounded read of n lowest seqs reads about n index entries: a Query per shard and page, one BatchGetItem of the targets' holds and ceil(n / 100) of bodies", async () => {
  using counting = countingClient();
  const { client, calls } = counting;
  const store = new DynamoDBStore(client, { prefix: uniqueName("reads") });
  await store.ensureTables();
  await seedOutbox(client, store.tables.outbox.name, 450);
  calls.length = 0;
  const entries = await store.pendingOutbox({ limit: 250 });
  assert.deepEqual(entries.map((e) => e.seq), Array.from({ length: 250 }, (_, i) => i + 1));
  const count = (name: string) => calls.filter((call) => call === name).length;
  assert.equal(count("ScanCommand"), 0, "no scan");
  // 8 shards of waiting entries (empty), then pages of 33 per pending shard until 250 are taken.
  assert.ok(count("QueryCommand") <= 8 + 8 * 2, calls.join());
  assert.equal(
    count("BatchGetItemCommand"),
    1 + 3,
    "the 50 targets' holds, then 250 bodies (a default store reads no counter)",
  );
  assert.equal(calls.length, count("QueryCommand") + count("BatchGetItemCommand"));
  calls.length = 0;
  assert.equal((await store.pendingOutbox({ limit: Infinity })).length, 450);
  assert.equal(count("ScanCommand"), 0, "Infinity reads the index whole, not the table");
  assert.equal(count("BatchGetItemCommand"), 1 + 5);
});
