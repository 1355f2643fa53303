// Tables that hold thousands of parked rows of ours (dead-lettered, waiting for a retry, held
// behind those) for the mixed fleet's cost tests (tests/execution/seed_fleet_test.ts,
// mixed_cost_test.ts). The rows are parked by the module's own commits and failing passes, so
// their layout is the module's, in a store without streams: a streamed table's writes are about
// 10 times slower on DynamoDB Local (6,000 rows: 21 s without, 175 s with). Then a store built
// with `otherWriters: true` turns the streams on (ensureTables) and its feeds' one-off scans of
// the rows the streams never showed run to their end, before anything is measured.
import assert from "node:assert/strict";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  relayOutbox,
  relaySpawns,
  sweepTimers,
} from "../../mod.ts";
import { FEED } from "../../src/core/_layout.ts";
import { endpoint, testClient, uniqueName } from "./env.ts";

const down = () => Promise.reject(new Error("down"));
const park = { limit: Infinity, backoff: { minSeconds: 3600, maxSeconds: 3600 } };

/** Commits `emits` from one new execution, at most 90 emits a commit. */
async function emitAll(store: DynamoDBStore, targets: string[]): Promise<void> {
  const exe = newExecution({ definition_id: "parked" });
  for (let i = 0; i < targets.length; i += 90) {
    await store.commit(exe, {
      emits: targets.slice(i, i + 90).map((target) => ({ target, event: newEvent("ours") })),
    });
  }
}

/** Commits `count` spawns and `count` timers due a minute ago, 45 of each a commit. */
async function spawnsAndTimers(store: DynamoDBStore, count: number, now: number, tag: string) {
  const exe: Execution = newExecution({ definition_id: "parked" });
  for (let i = 0; i < count; i += 45) {
    const n = Math.min(45, count - i);
    await store.commit(exe, {
      spawns: Array.from({ length: n }, (_, j) => ({
        childId: `${tag}${i + j}`,
        rootPath: "r",
        context: {},
      })),
      timers: Array.from({ length: n }, (_, j) => ({
        action: "schedule" as const,
        path: `${tag}${i + j}`,
        fireAt: now - 60,
      })),
    });
  }
}

/**
 * `parked` rows of ours that no pass reads again: two thirds outbox entries (a head per target,
 * half of them dead-lettered and half waiting an hour for a retry, 19 entries held behind each),
 * a sixth spawns and a sixth timers (half dead, half waiting an hour).
 */
export async function parkRows(store: DynamoDBStore, parked: number): Promise<void> {
  const outbox = Math.round(parked * 2 / 3), each = Math.round(parked / 12);
  const half = Math.max(1, Math.round(outbox / 40)); // targets of each kind, 20 entries each
  const lanes = (stem: string) =>
    Array.from({ length: half * 20 }, (_, i) => `${stem}-${i % half}`);
  await emitAll(store, lanes("dead"));
  await relayOutbox(store, down, { limit: Infinity, maxAttempts: 1 }); // the heads: dead
  await relayOutbox(store, down, { limit: Infinity }); // the entries behind them: held
  await emitAll(store, lanes("wait"));
  await relayOutbox(store, down, park); // the heads: waiting
  await relayOutbox(store, down, park); // the entries behind them: held
  const now = Date.now() / 1000;
  await spawnsAndTimers(store, each, now, "dead");
  await relaySpawns(store, down, { limit: Infinity, maxAttempts: 1 });
  await sweepTimers(store, down, { limit: Infinity, maxAttempts: 1, now });
  await spawnsAndTimers(store, each, now, "wait");
  await relaySpawns(store, down, park);
  await sweepTimers(store, down, { ...park, now });
  // Nothing of ours is deliverable, and all of it is stored.
  const backlog = await store.backlog("outbox", { limit: 10_000 });
  assert.deepEqual(
    [backlog.pending, backlog.waiting, backlog.dead, backlog.heldTargets],
    [0, half, half, 2 * half],
  );
  assert.equal((await store.deadLetters("spawns", { limit: Infinity })).length, each);
  assert.equal((await store.deadLetters("timers", { limit: Infinity })).length, each);
}

/** The counters items of the four feeds a mixed store reads (their checkpoints). */
const FEED_ITEMS = [FEED.id, "feed:outbox", "feed:spawns", "feed:timers"];

/**
 * Fresh tables (a unique prefix) holding `parked` rows of ours (see {@linkcode parkRows}),
 * parked without streams; then the mixed fleet's streams on, and each feed's one-off scan of the
 * rows its stream never showed run to its end, in `region` (DynamoDB Local's database). Answers
 * the tables' prefix; the store parking them is closed.
 */
export async function parkedMixedTables(parked: number, region?: string): Promise<string> {
  const prefix = uniqueName("t");
  {
    await using store = await DynamoDBStore.create({ endpoint: endpoint(), prefix, region });
    await parkRows(store, parked);
  }
  await using mixed = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
    region,
    otherWriters: true,
  });
  await feedsCaughtUp(mixed, 2, region);
  return prefix;
}

/**
 * Runs the feeds of `mixed` (a store built with `otherWriters: true`) until each one's one-off
 * scan of the rows its stream never showed has ended (`minutes` at most).
 */
export async function feedsCaughtUp(
  mixed: DynamoDBStore,
  minutes = 2,
  region?: string,
): Promise<void> {
  using client = testClient(region);
  const rounds = async () => {
    // Each read of a queue runs its table's feed round (a page of its scan); catchUpStatusIndex,
    // the executions table's.
    await Promise.all([
      mixed.pendingOutbox({ limit: 1 }),
      mixed.pendingSpawns({ limit: 1 }),
      mixed.dueTimers(Date.now() / 1000, { limit: 1 }),
      mixed.catchUpStatusIndex(),
    ]);
  };
  const scanning = async () => {
    const items = await Promise.all(FEED_ITEMS.map((id) =>
      client.send(
        new GetItemCommand({
          TableName: mixed.tables.counters.name,
          Key: { id: { S: id } },
          ConsistentRead: true,
        }),
      )
    ));
    // A feed whose checkpoint names no scan to go on with has none left.
    return items.some((got) => got.Item?.[FEED.backfill] !== undefined);
  };
  const deadline = Date.now() + minutes * 60_000;
  do {
    assert.ok(Date.now() < deadline, `the feeds' one-off scans did not end in ${minutes} minutes`);
    await rounds();
  } while (await scanning());
}
