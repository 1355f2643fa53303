// The relay when the relay index lags its tables and every background pass runs in a store
// instance of its own, as a Deno Deploy cron invocation may run in a new isolate: a pass then
// knows nothing of what earlier passes wrote, and must decide on rows read by key, never on what
// an index read returned. Each store talks to DynamoDB Local through an index lag
// proxy (tests/_support/index_lag_proxy.ts) whose index reads answer L ms late.
//
// What must hold whatever the lag: with `maxAttempts: 3`, a failing outbox entry and a failing
// spawn are tried exactly 3 times, then dead-lettered with 3 attempts; `backlog()` counts no row
// that is gone (delivered, or a dead letter dropped) a moment ago.
//
// Every loop below is bounded in passes and in time, and the assertions say what was counted.
import assert from "node:assert/strict";
import {
  type DynamoDBStore,
  type DynamoDBStoreOptions,
  newEvent,
  newExecution,
  type OutboxEntry,
  type PendingSpawn,
  type RelayOptions,
  relayOutbox,
  relaySpawns,
} from "../../mod.ts";
import { type LaggingStore, laggingStore, passUntil } from "../_support/lagging_store.ts";
import { concurrently } from "../_support/concurrent_steps.ts";
import { pause } from "../_support/env.ts";

/** The lags each case runs at; `HAREL_INDEX_LAG_MS=L` runs them at L alone (0: an exact index). */
const LAGS = Deno.env.get("HAREL_INDEX_LAG_MS") === undefined
  ? [300, 1500, 5000]
  : [Number(Deno.env.get("HAREL_INDEX_LAG_MS"))];

/** The stores' options: no status feed (its stream slows DynamoDB Local's writes; not tested here). */
const STORE: DynamoDBStoreOptions = {};

/** Three failed attempts, each retried at once: only the attempts count stops the retries. */
const RETRY: RelayOptions = { maxAttempts: 3, backoff: { minSeconds: 0, maxSeconds: 0 } };

/** At most this many passes in a case that waits for a dead letter. */
const MAX_PASSES = 1000;

/**
 * Runs `pass` (each in a fresh store) until a fresh store's `deadLetters(kind)` lists `seq`, then
 * twice more (a pass that still sees it as waiting would try it again), or until MAX_PASSES, or
 * until six times the lag (plus 30 s) went by and three more passes ran (a crowded machine's
 * passes take seconds each: the bound counts passes, not how fast they ran). Returns the dead
 * letter's attempts (undefined: never listed) and the passes run.
 */
async function passUntilDead(
  lagging: LaggingStore,
  lagMs: number,
  kind: "outbox" | "spawns",
  seq: number,
  pass: (store: DynamoDBStore) => Promise<unknown>,
): Promise<{ attempts: number | undefined; passes: number }> {
  const deadline = Date.now() + 6 * lagMs + 30_000;
  const listed = () =>
    lagging.fresh(async (s) => (await s.deadLetters(kind)).find((d) => d.key === seq));
  let passes = 0;
  let late = 0; // passes begun past the deadline
  while (passes < MAX_PASSES && late < 3) {
    if (Date.now() > deadline) late++;
    await lagging.fresh(pass);
    passes++;
    const letter = await listed();
    if (letter) {
      for (let i = 0; i < 2; i++) {
        await pause(100);
        await lagging.fresh(pass);
        passes++;
      }
      return { attempts: (await listed())?.attempts, passes };
    }
    await pause(Math.max(50, lagMs / 20));
  }
  return { attempts: undefined, passes };
}

// (1) and (2) A callback that always fails is tried exactly maxAttempts times.

/** An outbox entry whose delivery always fails is tried exactly 3 times, then dead-lettered. */
async function outboxTriedThrice(lagMs: number): Promise<void> {
  await using lagging = await laggingStore(lagMs, STORE);
  const exe = newExecution({ definition_id: "fails" });
  const { outbox } = await lagging.store.commit(exe, {
    emits: [{ target: "T", event: newEvent("e") }],
  });
  const seq = outbox[0]!;
  let calls = 0;
  const deliver = (entry: OutboxEntry) => {
    if (entry.seq === seq) calls++;
    throw new Error("T is down");
  };
  const { attempts, passes } = await passUntilDead(
    lagging,
    lagMs,
    "outbox",
    seq,
    (s) => relayOutbox(s, deliver, RETRY),
  );
  const seen =
    `deliver called ${calls} times in ${passes} passes, dead letter attempts ${attempts}`;
  assert.equal(calls, 3, `tried exactly 3 times: ${seen}`);
  assert.equal(attempts, 3, `dead-lettered with 3 attempts: ${seen}`);
}

/** A spawn whose start always fails is tried exactly 3 times, then dead-lettered. */
async function spawnTriedThrice(lagMs: number): Promise<void> {
  await using lagging = await laggingStore(lagMs, STORE);
  const exe = newExecution({ definition_id: "fails" });
  const { spawns } = await lagging.store.commit(exe, {
    spawns: [{ childId: "child", rootPath: "fork", context: {} }],
  });
  const seq = spawns[0]!;
  let calls = 0;
  const start = (spawn: PendingSpawn) => {
    if (spawn.seq === seq) calls++;
    throw new Error("cannot start");
  };
  const { attempts, passes } = await passUntilDead(
    lagging,
    lagMs,
    "spawns",
    seq,
    (s) => relaySpawns(s, start, RETRY),
  );
  const seen = `start called ${calls} times in ${passes} passes, dead letter attempts ${attempts}`;
  assert.equal(calls, 3, `tried exactly 3 times: ${seen}`);
  assert.equal(attempts, 3, `dead-lettered with 3 attempts: ${seen}`);
}

// (3) backlog() counts rows that are there.

/** [pending, waiting, dead, heldTargets] of both queues, as a fresh store counts them. */
function counts(lagging: LaggingStore) {
  return lagging.fresh(async (s) => {
    const [outbox, spawns] = [await s.backlog("outbox"), await s.backlog("spawns")];
    return {
      outbox: [outbox.pending, outbox.waiting, outbox.dead, outbox.heldTargets],
      spawns: [spawns.pending, spawns.waiting, spawns.dead],
    };
  });
}

/** backlog() counts none of the entries and spawns delivered a moment ago. */
async function deliveredNotCounted(lagMs: number): Promise<void> {
  await using lagging = await laggingStore(lagMs, STORE);
  // 6 executions, each with 4 entries to 2 targets and 2 spawns: 24 entries, 12 spawns.
  const committed = await Promise.all(
    [0, 1, 2, 3, 4, 5].map((i) =>
      lagging.store.commit(newExecution({ definition_id: `d${i}` }), {
        emits: ["T", "U", "T", "U"].map((target) => ({ target, event: newEvent("e") })),
        spawns: ["a", "b"].map((c) => ({
          childId: `${c}${i}`,
          rootPath: "fork",
          context: {},
        })),
      })
    ),
  );
  const entries = committed.flatMap((c) => c.outbox);
  const spawns = committed.flatMap((c) => c.spawns);
  const delivered = new Set<number>();
  const started = new Set<number>();
  const done = await passUntil(
    lagMs,
    async () => {
      await lagging.fresh((s) => relayOutbox(s, (e) => void delivered.add(e.seq)));
      await lagging.fresh((s) => relaySpawns(s, (p) => void started.add(p.seq)));
    },
    () => delivered.size === entries.length && started.size === spawns.length,
  );
  assert.ok(done, `delivered ${delivered.size} of 24 entries, started ${started.size} of 12`);
  // At once, while the index still shows the rows the passes just deleted.
  const after = await counts(lagging);
  assert.deepEqual(after, { outbox: [0, 0, 0, 0], spawns: [0, 0, 0] }, "no ghost counted");
}

/** backlog() does not count as dead an entry or a spawn dropped a moment ago. */
async function droppedNotCounted(lagMs: number): Promise<void> {
  await using lagging = await laggingStore(lagMs, STORE);
  const s = lagging.store;
  const { outbox, spawns } = await s.commit(newExecution({ definition_id: "dead" }), {
    emits: [{ target: "T", event: newEvent("e") }],
    spawns: [{ childId: "child", rootPath: "fork", context: {} }],
  });
  const dead = { attempts: 3, retryAt: null, error: "down" };
  assert.equal(await s.recordFailure("outbox", outbox[0]!, dead), true);
  assert.equal(await s.recordFailure("spawns", spawns[0]!, dead), true);
  await pause(lagMs + 100); // the index shows both as dead
  const before = await counts(lagging);
  assert.deepEqual(before, { outbox: [0, 0, 1, 1], spawns: [0, 0, 1] }, "both counted dead");
  assert.equal(await s.dropDeadLetter("outbox", outbox[0]!), true);
  assert.equal(await s.dropDeadLetter("spawns", spawns[0]!), true);
  // At once, while the index still shows both as dead.
  const after = await counts(lagging);
  assert.deepEqual(after, { outbox: [0, 0, 0, 0], spawns: [0, 0, 0] }, "no ghost counted");
}

// The cases' lags all at once, as steps of two tests: each mostly waits for the index (no CPU),
// so a test takes about as long as its slowest step (the 5 s lag).

Deno.test(`with maxAttempts: 3, a callback that always fails is tried exactly 3 times, then dead-lettered, when each pass runs in a fresh store and the index lags`, async (t) => {
  await concurrently(
    t,
    LAGS.flatMap((lagMs) => [
      {
        name: `an outbox entry whose delivery always fails, by ${lagMs} ms`,
        fn: () => outboxTriedThrice(lagMs),
      },
      {
        name: `a spawn whose start always fails, by ${lagMs} ms`,
        fn: () => spawnTriedThrice(lagMs),
      },
    ]),
  );
});

Deno.test(`backlog() counts no entry or spawn gone a moment ago, when each pass runs in a fresh store and the index lags`, async (t) => {
  await concurrently(
    t,
    LAGS.flatMap((lagMs) => [
      {
        name: `none of the entries and spawns delivered a moment ago, by ${lagMs} ms`,
        fn: () => deliveredNotCounted(lagMs),
      },
      {
        name: `not as dead an entry or a spawn dropped a moment ago, by ${lagMs} ms`,
        fn: () => droppedNotCounted(lagMs),
      },
    ]),
  );
});
