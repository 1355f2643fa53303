// The mixed fleet, bounded: with `otherWriters: true`, every item the module keeps (the
// seq counters, holds, feed checkpoints and leases) stays under 4 KB whatever the fleet does, a
// hold that cannot list every entry it sets apart still lets them out in order, and another
// writer's due timers among 30,000 parked are listed by `dueTimers(now)` and fired by the next
// sweep at the cost of the new rows. Python writers with the seed's algorithm (boto3), each pass
// in a fresh store, index reads lagging. DynamoDB Local's region of its own: streams.
import assert from "node:assert/strict";
import { BatchWriteItemCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  relayOutbox,
  sweepTimers,
} from "../../mod.ts";
import { concurrentTest } from "../_support/concurrent_steps.ts";
import { directEndpoint, ownRegion, pause, testClient } from "../_support/env.ts";
import { laggingStore } from "../_support/lagging_store.ts";
import { SeedTurns } from "../_support/seed_turns.ts";
import { capacityClient } from "../_support/capacity.ts";
import type { Item } from "../../src/dynamo/_dynamo.ts";
import { pendingPlace, relayAttributes } from "../../src/execution/queue/_relay_index.ts";
import { LISTED_HELD_MAX } from "../../src/execution/queue/_outbox_table.ts";

/**
 * A database of this file's own (see `ownRegion`): a fixed name shared it with
 * mixed_order_test.ts, whose streams then paid for this file's stream records, and the other way.
 */
const REGION = ownRegion("bounds");

/**
 * The cases below, run as steps of one test at once: they mostly wait (for the index's lag, a
 * retry), each on tables of its own (tests/_support/concurrent_steps.ts).
 */
const test = concurrentTest(
  "the mixed fleet, bounded: items, holds and timers with another writer",
);
const prefixOf = (store: DynamoDBStore) => store.tables.executions.name.replace(/_executions$/, "");
const mixed = (lagMs: number) => laggingStore(lagMs, { otherWriters: true, region: REGION });

/** An item's size as DynamoDB counts it (names and values, UTF-8; a number ~ digits / 2 + 1). */
function itemBytes(item: Item): number {
  const text = (s: string) => new TextEncoder().encode(s).length;
  const number = (n: string) => Math.ceil(n.replace(/^-|\.|e.*$/gi, "").length / 2) + 1;
  const value = (v: Item[string]): number => {
    if (v.S !== undefined) return text(v.S);
    if (v.N !== undefined) return number(v.N);
    if (v.NS) return v.NS.reduce((sum, n) => sum + number(n), 0);
    if (v.SS) return v.SS.reduce((sum, s) => sum + text(s), 0);
    if (v.M) {
      return 3 + Object.entries(v.M).reduce((sum, [k, w]) => sum + text(k) + value(w) + 1, 0);
    }
    if (v.L) return 3 + v.L.reduce((sum, w) => sum + value(w) + 1, 0);
    return 1;
  };
  return Object.entries(item).reduce((sum, [name, v]) => sum + text(name) + value(v), 0);
}

/** Every item of the counters table, with its size: the module's own items. */
async function countersItems(store: DynamoDBStore): Promise<Map<string, number>> {
  using client = testClient(REGION);
  const sizes = new Map<string, number>();
  let start: Item | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: store.tables.counters.name, ExclusiveStartKey: start }),
    );
    for (const item of page.Items ?? []) sizes.set(item.id!.S!, itemBytes(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return sizes;
}

function assertUnder4K(sizes: Map<string, number>, what: string) {
  const over = [...sizes].filter(([, bytes]) => bytes >= 4096);
  assert.deepEqual(over, [], `${what}: every item under 4 KB (${JSON.stringify([...sizes])})`);
}

/**
 * The sizes the issue names (3,000 fresh-store commits, 30,000 parked timers) with
 * `HAREL_MIXED_FULL=1`; a tenth of them by default, so that the suite stays short (every item's
 * size does not depend on them: the counters hold `n` alone).
 */
const FULL = Deno.env.get("HAREL_MIXED_FULL") === "1";
const [FRESH_COMMITS, PARKED_TIMERS] = FULL ? [3000, 30_000] : [300, 3000];

test(`every item of the module stays under 4 KB: ${FRESH_COMMITS} fresh-store commits with no relay, 500 by two stores taking turns, 2,000 missing seqs`, async () => {
  await using lag = await mixed(0);
  await using python = new SeedTurns(directEndpoint(), REGION);
  const prefix = prefixOf(lag.store);
  using client = testClient(REGION);
  const fresh = () => new DynamoDBStore(client, { prefix, otherWriters: true });
  // 3,000 commits, each from a fresh store (one block reserved each), 30 at a time; no relay.
  let next = 0;
  await Promise.all(Array.from({ length: 30 }, async () => {
    while (next < FRESH_COMMITS) {
      next++;
      await using store = fresh();
      await store.commit(newExecution({ definition_id: "fresh" }), {
        emits: [{ target: "t", event: newEvent("e") }],
      });
    }
  }));
  assertUnder4K(await countersItems(lag.store), `after ${FRESH_COMMITS} fresh-store commits`);
  // Two stores taking turns on one execution: each commit takes a block of its own.
  await using a = fresh();
  await using b = fresh();
  let exe: Execution = newExecution({ definition_id: "turns" });
  for (let i = 0; i < 500; i++) {
    const store = i % 2 ? a : b;
    const loaded: Execution = i === 0 ? exe : (await store.load(exe.id))!;
    await store.commit(loaded, { emits: [{ target: "u", event: newEvent("e") }] });
    exe = loaded;
  }
  assertUnder4K(await countersItems(lag.store), "after 500 commits by two stores in turn");
  // 2,000 seqs reserved by commits that never landed; then passes and sweeps as usual.
  await python.lose(prefix, 2000);
  await lag.fresh((store) => relayOutbox(store, () => Promise.resolve(), { limit: 100 }));
  await lag.fresh((store) => sweepTimers(store, () => Promise.resolve()));
  const sizes = await countersItems(lag.store);
  assertUnder4K(sizes, "with 2,000 missing seqs");
  assert.ok(sizes.has("outbox"), "the outbox counter is there");
});

test(`a hold sets apart more entries than it lists (${LISTED_HELD_MAX}): under 4 KB, and after the release every entry goes out in seq order (index lag 1.5 s, fresh stores)`, async () => {
  await using lag = await mixed(1500);
  const count = LISTED_HELD_MAX + 60;
  const { seqs } = await lag.fresh(async (store) => {
    const exe = newExecution({ definition_id: "held" });
    const all: number[] = [];
    for (let i = 0; i < count; i += 90) {
      const emits = Array.from({ length: Math.min(90, count - i) }, () => ({
        target: "T",
        event: newEvent("e"),
      }));
      all.push(...(await store.commit(exe, { emits })).outbox);
    }
    return { seqs: all };
  });
  await pause(1800);
  // The head fails (retry in 3 s): the rest is set apart behind it, pass after pass.
  const head = seqs[0]!;
  const delivered: number[] = [];
  let failing = true;
  const deliver = (entry: { seq: number }) => {
    if (entry.seq === head && failing) return Promise.reject(new Error("down"));
    delivered.push(entry.seq);
    return Promise.resolve();
  };
  const backoff = { minSeconds: 3, maxSeconds: 3 };
  for (let i = 0; i < 4; i++) {
    await lag.fresh((store) => relayOutbox(store, deliver, { limit: 100, backoff }));
    await pause(300);
  }
  assert.deepEqual(delivered, [], "nothing goes out behind the failed head");
  const sizes = await countersItems(lag.store);
  assertUnder4K(sizes, "the hold");
  failing = false;
  const deadline = Date.now() + 90_000;
  while (delivered.length < count && Date.now() < deadline) {
    await lag.fresh((store) => relayOutbox(store, deliver, { limit: 100, backoff }));
    await pause(500);
  }
  assert.equal(delivered.length, count, "every entry went out");
  assert.deepEqual(delivered, [...seqs].sort((x, y) => x - y), "in seq order");
});

/** `count` timers of ours far in the future (pending in the relay index), written 25 a call. */
async function parkTimers(store: DynamoDBStore, count: number): Promise<void> {
  using client = testClient(REGION);
  const far = Math.floor(Date.now() / 1000) + 86_400 * 30;
  const rows = Array.from({ length: count }, (_, i) => {
    const row: Item = {
      execution_id: { S: `parked-${i % 500}` },
      path: { S: `main.t${i}` },
      fire_at: { N: String(far + i) },
    };
    return { ...row, ...relayAttributes(pendingPlace("timers", row)) };
  });
  const batches: Item[][] = [];
  for (let i = 0; i < rows.length; i += 25) batches.push(rows.slice(i, i + 25));
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < batches.length) {
      const batch = batches[next++]!;
      let items: Record<string, unknown>[] | undefined = batch.map((Item) => ({
        PutRequest: { Item },
      }));
      while (items?.length) {
        const out = await client.send(
          new BatchWriteItemCommand({
            RequestItems: { [store.tables.timers.name]: items as never },
          }),
        );
        items = out.UnprocessedItems?.[store.tables.timers.name] as never;
      }
    }
  }));
}

/** At `parked` timers of ours: 5 of the Python store's due; what the next sweep reads. */
async function foreignTimers(parked: number): Promise<{ sweepReads: number }> {
  const lagMs = 1500;
  await using lag = await mixed(lagMs);
  await using python = new SeedTurns(directEndpoint(), REGION);
  await parkTimers(lag.store, parked);
  // A sweep reads the records of the parked timers once (they are no work: not counted).
  await lag.fresh((store) => sweepTimers(store, () => Promise.resolve()));
  const now = Date.now() / 1000;
  const due = Array.from({ length: 5 }, (_, k) => [`main.due${k}`, Math.floor(now) - 60 + k]);
  const id = crypto.randomUUID();
  await python.commit(prefixOf(lag.store), id, [], due as [string, number][]);
  const listed = await lag.fresh((store) => store.dueTimers(Date.now() / 1000));
  assert.deepEqual(
    listed.map((t) => `${t.executionId} ${t.path}`).sort(),
    due.map(([path]) => `${id} ${path}`).sort(),
    "dueTimers(now) lists the Python store's due timers",
  );
  await pause(lagMs + 300);
  const { client, capacity } = capacityClient(REGION);
  const fired: string[] = [];
  try {
    const sweeper = new DynamoDBStore(client, { prefix: prefixOf(lag.store), otherWriters: true });
    await sweepTimers(sweeper, (t) => Promise.resolve(void fired.push(t.path)));
    await sweeper.close();
  } finally {
    client.destroy();
  }
  assert.deepEqual(
    fired.sort(),
    due.map(([path]) => path as string).sort(),
    "the next sweep fires them",
  );
  return { sweepReads: capacity.units };
}

test(`5 of the Python store's due timers among ${PARKED_TIMERS} parked: listed by dueTimers(now), fired by the next sweep, its reads within 2x of a sweep's at 300`, async () => {
  const [small, large] = await Promise.all([foreignTimers(300), foreignTimers(PARKED_TIMERS)]);
  console.log(
    `a sweep's read units: ${small.sweepReads} at 300 parked, ${large.sweepReads} at ${PARKED_TIMERS}`,
  );
  assert.ok(
    large.sweepReads <= 2 * Math.max(small.sweepReads, 1),
    `${large.sweepReads} read units at ${PARKED_TIMERS} parked, ${small.sweepReads} at 300`,
  );
});
