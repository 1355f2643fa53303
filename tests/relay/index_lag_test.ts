// The relay when the relay index lags its tables, as a global secondary index on AWS may: each
// store here talks to DynamoDB Local through an index lag proxy (tests/_support/index_lag_proxy.ts)
// whose index reads answer L ms late — a fresh entry missing, a moved or deleted one still there.
// What must hold whatever the lag: held entries all come back, in seq order per target; bulk
// dead-letter answers are exact; a timer or spawn fires once, never from an index entry that is
// gone; and the conformance suite's queue, dead-letter and clock steps pass.
//
// Every loop below is bounded: passes run until what is awaited is there or, once the lag has
// passed twice over (plus 30 s), three more passes (see passUntil), and the assertions then say
// what did not come. A case's variants (lags, otherWriters) run at once, as steps of one test:
// they mostly wait for the index, which costs no CPU.
import assert from "node:assert/strict";
import {
  type DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  type OutboxEntry,
  relayOutbox,
  relaySpawns,
  sweepTimers,
} from "../../mod.ts";
import { queueSteps } from "../../src/conformance/_queues.ts";
import { deadLetterSteps } from "../../src/conformance/_dead_letters.ts";
import { clockSteps } from "../../src/conformance/_clock_steps.ts";
import type { FakeClock, Step } from "../../src/conformance/_steps.ts";
import { laggingStore, passUntil } from "../_support/lagging_store.ts";
import { concurrently, type Variant } from "../_support/concurrent_steps.ts";
import { pause } from "../_support/env.ts";

/** The lags each case runs at; `HAREL_INDEX_LAG_MS=L` runs them at L alone (0: an exact index). */
const LAGS = Deno.env.get("HAREL_INDEX_LAG_MS") === undefined
  ? [300, 1500]
  : [Number(Deno.env.get("HAREL_INDEX_LAG_MS"))];

/** The store's calls that write rows the index shows (a pass may set entries apart). */
const WRITES = new Set([
  "commit",
  "save",
  "recordFailure",
  "retryDeadLetter",
  "retryDeadLetters",
  "dropDeadLetter",
  "dropDeadLetters",
  "ackOutbox",
  "ackSpawn",
  "deleteTimer",
  "apply",
  "fail",
]);

/** The store's queues, whose writes the relay runners make. */
const QUEUES = new Set(["outboxQueue", "spawnQueue", "timerQueue"]);

/**
 * The store, each of whose writes answers once the index shows what it wrote (`lagMs` later): no
 * store remembers its recent writes, so what it wrote a moment ago is found by its index reads
 * once the index shows it (a commit's own entries go out within the request, with `seqs`).
 */
function settled<T extends object>(store: T, lagMs: number): T {
  return new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      // The relay's queues: their writes (`apply`, `fail`) answer as the store's do.
      if (typeof name === "string" && QUEUES.has(name)) return settled(value as object, lagMs);
      if (typeof value !== "function" || typeof name !== "string" || !WRITES.has(name)) {
        return typeof value === "function" ? value.bind(target) : value;
      }
      return async (...args: unknown[]) => {
        try {
          return await value.apply(target, args);
        } finally {
          await pause(lagMs + 100);
        }
      };
    },
  });
}

/** Each value once, in the order first seen. */
function firstSeen<T>(values: T[]): T[] {
  return [...new Set(values)];
}

/** Values seen more than once. */
function repeated<T>(values: T[]): T[] {
  return firstSeen(values.filter((v, i) => values.indexOf(v) !== i));
}

const dead = { attempts: 1, retryAt: null, error: "down" };

// (a) A target whose head failed, entries held behind it, then the head released at once.

type Release = "retried" | "dropped" | "delivered";
const RELEASES: Record<Release, string> = {
  retried: "retrying its dead head",
  dropped: "dropping its dead head",
  delivered: "delivering its head when its retry comes",
};

/** Each release at each lag, with and without other writers. */
const MATRIX = (Object.keys(RELEASES) as Release[]).flatMap((release) =>
  LAGS.flatMap((lagMs) => [false, true].map((otherWriters) => ({ release, lagMs, otherWriters })))
);

Deno.test(`a target's dead head released right after entries were held behind it brings every one back in seq order, before a later entry of another source, when the index lags`, async (t) => {
  await concurrently(
    t,
    MATRIX.map(({ release, lagMs, otherWriters }) => ({
      name: `${RELEASES[release]}, by ${lagMs} ms${otherWriters ? " (otherWriters: true)" : ""}`,
      fn: async () => {
        let offset = 0;
        await using lagging = await laggingStore(lagMs, {
          otherWriters,
          now: () => Date.now() + offset,
        });
        const s = lagging.store;
        const [a, b, c] = ["a", "b", "c"].map((d) => newExecution({ definition_id: d }));
        const emit = async (exe: Execution) =>
          (await s.commit(exe, { emits: [{ target: "T", event: newEvent("e") }] })).outbox[0]!;
        const delivered: number[] = [];
        let headFails = true;
        const head = await emit(a!);
        const deliver = (entry: OutboxEntry) => {
          if (entry.seq === head && headFails) throw new Error("T is down");
          delivered.push(entry.seq);
        };
        const options = {
          backoff: { minSeconds: 60 },
          maxAttempts: release === "delivered" ? 5 : 1,
        };
        const failed = await passUntil(
          lagMs,
          () => relayOutbox(s, deliver, options),
          async () => (await s.backlog("outbox")).heldTargets === 1,
        );
        assert.ok(failed, "the head failed and holds T");
        const held = [await emit(a!), await emit(b!), await emit(a!), await emit(b!)];
        // The next pass that sees them moves them behind the head.
        await pause(lagMs + 100);
        await relayOutbox(s, deliver, options);
        assert.equal(delivered.length, 0, "nothing delivered past the failed head");
        headFails = false;
        if (release === "retried") assert.equal(await s.retryDeadLetter("outbox", head), true);
        if (release === "dropped") assert.equal(await s.dropDeadLetter("outbox", head), true);
        if (release === "delivered") offset += 61_000;
        const later = await emit(c!);
        const expected = [...(release === "dropped" ? [] : [head]), ...held, later];
        await passUntil(
          lagMs,
          () => relayOutbox(s, deliver, options),
          () => expected.every((seq) => delivered.includes(seq)),
        );
        await relayOutbox(s, deliver, options);
        assert.deepEqual(
          firstSeen(delivered),
          expected,
          `T's entries in seq order, the held ones ${held} before ${later}`,
        );
        assert.deepEqual(repeated(delivered), [], "each delivered once");
        await pause(lagMs + 100); // what the index shows has caught up: nothing is left
        const backlog = await s.backlog("outbox");
        assert.deepEqual(
          [backlog.pending, backlog.waiting, backlog.dead, backlog.heldTargets],
          [0, 0, 0, 0],
        );
      },
    })),
  );
});

// (b) Dead letters listed, retried and dropped in bulk right after they were set aside.

Deno.test(`deadLetters, retryDeadLetters and dropDeadLetters count exactly the dead letters set aside, once the index shows them, when it lags`, async (t) => {
  await concurrently(
    t,
    LAGS.flatMap((lagMs) => {
      /** Outbox entries to T, T, U, V, a spawn and a timer, all dead-lettered just now. */
      const setAside = async (lagging: { store: DynamoDBStore }) => {
        // One wait for the index after them all: none of these writes reads the index.
        const s = lagging.store;
        const exe = newExecution({ definition_id: "dead" });
        await s.save(exe);
        const { outbox, spawns } = await s.commit(exe, {
          emits: ["T", "T", "U", "V"].map((target) => ({ target, event: newEvent("e") })),
          spawns: [{ childId: "child", rootPath: "fork", context: {} }],
          timers: [{ action: "schedule", path: "wait", fireAt: 1000 }],
        });
        for (const seq of outbox) assert.equal(await s.recordFailure("outbox", seq, dead), true);
        assert.equal(await s.recordFailure("spawns", spawns[0]!, dead), true);
        const timer = { executionId: exe.id, path: "wait", fireAt: 1000 };
        assert.equal(await s.recordFailure("timers", timer, dead), true);
        await pause(lagMs + 100); // the index shows them (no store remembers its recent writes)
        return { outbox, spawn: spawns[0]!, timer };
      };

      const list = async () => {
        await using lagging = await laggingStore(lagMs);
        const { outbox, spawn, timer } = await setAside(lagging);
        const s = settled(lagging.store, lagMs);
        assert.deepEqual((await s.deadLetters("outbox")).map((d) => d.key), outbox);
        assert.deepEqual((await s.deadLetters("outbox", { targetId: "T" })).map((d) => d.key), [
          outbox[0],
          outbox[1],
        ]);
        assert.deepEqual((await s.deadLetters("spawns")).map((d) => d.key), [spawn]);
        assert.deepEqual((await s.deadLetters("timers")).map((d) => d.key), [timer]);
      };

      const retry = async () => {
        await using lagging = await laggingStore(lagMs);
        const { outbox } = await setAside(lagging);
        const s = settled(lagging.store, lagMs);
        assert.equal(await s.retryDeadLetters("outbox", { targetId: "T" }), 2);
        assert.deepEqual((await s.deadLetters("outbox")).map((d) => d.key), outbox.slice(2));
        assert.equal(await s.retryDeadLetters("outbox"), 2);
        assert.equal(await s.retryDeadLetters("outbox"), 0);
        assert.deepEqual((await s.deadLetters("outbox")).map((d) => d.key), []);
        assert.equal(await s.retryDeadLetters("spawns"), 1);
        assert.equal(await s.retryDeadLetters("timers"), 1);
        assert.equal(await s.retryDeadLetters("timers"), 0);
      };

      const drop = async () => {
        await using lagging = await laggingStore(lagMs);
        const { outbox } = await setAside(lagging);
        const s = settled(lagging.store, lagMs);
        const progress: number[] = [];
        assert.equal(await s.dropDeadLetters("outbox", { onProgress: (n) => progress.push(n) }), 4);
        assert.equal(progress.at(-1), 4);
        assert.equal(await s.dropDeadLetters("outbox"), 0);
        assert.equal(await s.dropDeadLetters("spawns"), 1);
        assert.equal(await s.dropDeadLetters("timers"), 1);
        assert.equal(await s.dropDeadLetters("timers"), 0);
        assert.deepEqual(await s.deadLetters("outbox"), []);
        assert.equal(outbox.length, 4);
      };

      const count = async () => {
        await using lagging = await laggingStore(lagMs);
        await setAside(lagging);
        const s = settled(lagging.store, lagMs);
        const before = await s.backlog("outbox");
        assert.deepEqual([before.pending, before.dead, before.heldTargets], [0, 4, 3]);
        await s.dropDeadLetters("outbox");
        const after = await s.backlog("outbox");
        assert.deepEqual([after.pending, after.dead, after.heldTargets], [0, 0, 0]);
      };

      return [
        { name: `deadLetters() lists each of them, at ${lagMs} ms`, fn: list },
        {
          name: `retryDeadLetters() retries each of them, and none twice, at ${lagMs} ms`,
          fn: retry,
        },
        {
          name: `dropDeadLetters() drops each of them, and a second call none, at ${lagMs} ms`,
          fn: drop,
        },
        { name: `backlog() counts them as dead, and none once dropped, at ${lagMs} ms`, fn: count },
      ];
    }),
  );
});

// (c) Timers scheduled and swept at once.

Deno.test(`a timer scheduled due and swept at once fires once; one cancelled, re-scheduled or failed a moment ago does not fire, when the index lags`, async (t) => {
  await concurrently(
    t,
    LAGS.map((lagMs) => ({
      name: `by ${lagMs} ms`,
      fn: async () => {
        await using lagging = await laggingStore(lagMs);
        const s = lagging.store;
        const exe = newExecution({ definition_id: "timers" });
        await s.save(exe);
        const due = Date.now() / 1000 - 1;
        await s.commit(exe, {
          timers: ["fires", "cancelled", "moved", "fails"].map((path) => ({
            action: "schedule" as const,
            path,
            fireAt: due,
          })),
        });
        await pause(lagMs + 100); // the index lists all four as due
        await s.commit(exe, {
          timers: [
            { action: "cancel", path: "cancelled" },
            { action: "schedule", path: "moved", fireAt: due + 3600 },
            { action: "schedule", path: "fresh", fireAt: due },
          ],
        });
        const fired: string[] = [];
        const fire = (timer: { path: string }) => {
          fired.push(timer.path);
          if (timer.path === "fails") throw new Error("down");
        };
        const options = { backoff: { minSeconds: 60 } };
        await passUntil(
          lagMs,
          () => sweepTimers(s, fire, options),
          () => fired.includes("fires") && fired.includes("fresh") && fired.includes("fails"),
        );
        await sweepTimers(s, fire, options); // every ghost of what fired or failed is still listed
        assert.deepEqual(
          [...fired].sort(),
          ["fails", "fires", "fresh"],
          "each due timer fired once; the cancelled and the moved one never; the failed one waits",
        );
        assert.deepEqual((await s.dueTimers(Date.now() / 1000)).map((x) => x.path), []);
      },
    })),
  );
});

// (d) Spawns.

Deno.test(`every spawn is started once, a failed one not again before its backoff, and a dead one retried a moment ago once, when the index lags`, async (t) => {
  await concurrently(
    t,
    LAGS.map((lagMs) => ({
      name: `by ${lagMs} ms`,
      fn: async () => {
        await using lagging = await laggingStore(lagMs);
        const s = lagging.store;
        const exe = newExecution({ definition_id: "spawns" });
        await s.save(exe);
        const { spawns } = await s.commit(exe, {
          spawns: ["c1", "c2", "fails", "dead"].map((childId) => ({
            childId,
            rootPath: "fork",
            context: {},
          })),
        });
        assert.equal(await s.recordFailure("spawns", spawns[3]!, dead), true);
        assert.equal(await s.retryDeadLetter("spawns", spawns[3]!), true);
        const started: string[] = [];
        const start = (spawn: { childId: string }) => {
          started.push(spawn.childId);
          if (spawn.childId === "fails") throw new Error("down");
        };
        const options = { backoff: { minSeconds: 60 } };
        await passUntil(
          lagMs,
          () => relaySpawns(s, start, options),
          () => ["c1", "c2", "fails", "dead"].every((c) => started.includes(c)),
        );
        await relaySpawns(s, start, options); // the ghosts of the started ones are still listed
        assert.deepEqual([...started].sort(), ["c1", "c2", "dead", "fails"], "each started once");
        await pause(lagMs + 100); // what the index shows has caught up: only the failed one waits
        const backlog = await s.backlog("spawns");
        assert.deepEqual([backlog.pending, backlog.waiting, backlog.dead], [0, 1, 0]);
      },
    })),
  );
});

// The conformance suite's queue, dead-letter and clock steps, each on a store of its own.

// At most this many at once: each makes its tables, and DynamoDB Local is shared.
const CONFORMANCE_WIDTH = 16;

Deno.test(`DynamoDBStore passes the conformance suite's queue, dead-letter and clock steps when its index lags (each call answered once the index shows what it wrote)`, async (t) => {
  const variants: Variant[] = [];
  for (const lagMs of LAGS) {
    // Each step is noted, to run with the others at once (it answers at once, as a passed step).
    const step: Step = (name, body, options = {}) => {
      variants.push({
        name: `${name} (index lag ${lagMs} ms)`,
        fn: async () => {
          // The store's clock stands still but for the step's moves: the waits for the index
          // (real time) must not eat into a backoff the step measures.
          let ms = Date.now();
          const clock: FakeClock = {
            now: () => ms,
            advance: (seconds) => void (ms += seconds * 1000),
          };
          const made = typeof options === "number" ? { traceMax: options } : options;
          await using lagging = await laggingStore(lagMs, { ...made, now: clock.now });
          // The step starts now, as the steps' own Date.now() does: making the store (slow with
          // many made at once) took no time on its clock.
          ms = Date.now();
          await body(settled(lagging.store, lagMs), clock);
        },
      });
      return Promise.resolve(true);
    };
    await queueSteps(step);
    await deadLetterSteps(step);
    await clockSteps(step);
  }
  await concurrently(t, variants, CONFORMANCE_WIDTH);
});
