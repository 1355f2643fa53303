// A relay or sweep pass as a unit of work: it settles only when nothing it started still runs
// (whatever its callbacks throw), acknowledges every entry it read whatever the seq another
// writer stored, reports its lag, and a store closed under it says what went wrong.
import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  type Event,
  type ExecutionStore,
  newEvent,
  newExecution,
  relayOutbox,
  relaySpawns,
  StoreClosed,
  sweepTimers,
} from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { countingClient, freshStore, pause, testClient, uniqueName } from "../_support/env.ts";

const backends: [string, () => Promise<ExecutionStore>][] = [
  ["DynamoDBStore", () => freshStore()],
  ["MemoryStore", () => Promise.resolve(new MemoryStore())],
];

/** Commits one emit to each of `count` targets; returns their entries, by seq. */
async function emitToTargets(store: ExecutionStore, count: number, event = () => newEvent("e")) {
  const exe = newExecution({ definition_id: "relay" });
  await store.save(exe);
  for (let i = 0; i < count; i += 20) {
    await store.commit(exe, {
      emits: Array.from({ length: Math.min(20, count - i) }, (_, j) => ({
        target: `target-${i + j}`,
        event: event(),
      })),
    });
  }
  return await store.pendingOutbox({ limit: Infinity });
}

/** Counts callbacks running, and any that start or are still running once `settled` is set. */
function watch() {
  let running = 0, settled = false;
  const late: string[] = [];
  return {
    get running() {
      return running;
    },
    settle() {
      settled = true;
    },
    late,
    /** Wraps a callback body: counted while it runs, flagged if it runs after the pass settled. */
    async run<T>(what: string, body: () => Promise<T>): Promise<T> {
      if (settled) late.push(`${what} started after the pass settled`);
      running++;
      try {
        return await body();
      } finally {
        running--;
        if (settled) late.push(`${what} was still running after the pass settled`);
      }
    },
  };
}

for (const [backend, make] of backends) {
  Deno.test(`relayOutbox on ${backend}: an onError that throws ends the pass only once every delivery it started has settled, every delivered entry acknowledged, and the pass rejects with that error`, async () => {
    await using store = await make();
    const entries = await emitToTargets(store, 60);
    const watcher = watch();
    const delivered: number[] = [];
    const thrown = new Error("the error logger is down");
    const pass = relayOutbox(store, (entry) =>
      watcher.run(`deliver(${entry.seq})`, async () => {
        await pause(5 + entry.seq % 7);
        // A non-Error thrown, and a synchronous-looking failure: both go to onError.
        if (entry.seq === entries[4]!.seq) throw "not an Error";
        delivered.push(entry.seq);
      }), {
      concurrency: 8,
      backoff: { minSeconds: 0 }, // the failed entry is due again at once
      onError: () => {
        throw thrown;
      },
    });
    await assert.rejects(pass, (error) => error === thrown);
    assert.equal(watcher.running, 0, "no delivery still running when the pass settled");
    watcher.settle();
    await pause(100);
    assert.deepEqual(watcher.late, []);
    const pending = new Set((await store.pendingOutbox({ limit: Infinity })).map((e) => e.seq));
    assert.deepEqual(
      delivered.filter((seq) => pending.has(seq)),
      [],
      "every delivered entry acked",
    );
    assert.ok(pending.has(entries[4]!.seq), "the failed entry stays pending");
    assert.ok(delivered.length < entries.length - 1, "nothing new started once onError threw");
  });

  Deno.test(`relaySpawns and sweepTimers on ${backend}: an onError that throws ends the pass only once everything it started has settled, then rejects with that error`, async () => {
    await using store = await make();
    const exe = newExecution({ definition_id: "parent" });
    await store.save(exe);
    await store.commit(exe, {
      spawns: Array.from(
        { length: 40 },
        (_, i) => ({ childId: `c-${i}`, rootPath: "r", context: {} }),
      ),
      timers: Array.from({ length: 40 }, (_, i) => ({
        action: "schedule" as const,
        path: `p-${i}`,
        fireAt: 1_700_000_000 + i,
      })),
    });
    const thrown = new TypeError("onError's own bug");
    await (async () => {
      const watcher = watch();
      const started: string[] = [];
      const pass = relaySpawns(store, (spawn) =>
        watcher.run(spawn.childId, async () => {
          await pause(3 + spawn.seq % 5);
          if (spawn.childId === "c-3") throw undefined;
          started.push(spawn.childId);
        }), {
        concurrency: 6,
        backoff: { minSeconds: 0 },
        onError: () => {
          throw thrown;
        },
      });
      await assert.rejects(pass, (error) => error === thrown);
      assert.equal(watcher.running, 0);
      watcher.settle();
      await pause(50);
      assert.deepEqual(watcher.late, []);
      const pending = new Set(
        (await store.pendingSpawns({ limit: Infinity })).map((s) => s.childId),
      );
      assert.deepEqual(started.filter((id) => pending.has(id)), [], "every started spawn acked");
      assert.ok(pending.has("c-3"));
    })();
    await (async () => {
      const watcher = watch();
      const fired: string[] = [];
      const pass = sweepTimers(store, (timer) =>
        watcher.run(timer.path, async () => {
          await pause(3);
          if (timer.path === "p-2") throw 42;
          fired.push(timer.path);
        }), {
        now: 1_700_000_100,
        concurrency: 6,
        onError: () => {
          throw thrown;
        },
      });
      await assert.rejects(pass, (error) => error === thrown);
      assert.equal(watcher.running, 0);
      watcher.settle();
      await pause(50);
      assert.deepEqual(watcher.late, []);
      const left = new Set((await store.dueTimers(1e10, { limit: Infinity })).map((t) => t.path));
      assert.deepEqual(fired.filter((path) => left.has(path)), [], "every fired timer deleted");
      assert.ok(left.has("p-2"));
    })();
  });

  Deno.test(`relayOutbox on ${backend}: what deliver throws, Error or not, goes to onError and the pass resolves`, async () => {
    await using store = await make();
    const entries = await emitToTargets(store, 5);
    const thrown: unknown[] = [];
    const failures = [new Error("e"), "text", undefined, null, { code: 7 }];
    const report = await relayOutbox(store, (entry) => {
      const index = entries.findIndex((e) => e.seq === entry.seq);
      if (index === 1) throw failures[1]; // thrown before any promise exists
      return Promise.reject(failures[index]);
    }, { onError: (error) => void thrown.push(error) });
    assert.equal(report.failed, 5);
    assert.deepEqual(new Set(thrown), new Set(failures));
  });
}

/** Writes outbox rows straight into the table, as another writer (a Python worker) might. */
async function putOutboxRows(store: DynamoDBStore, seqs: string[]): Promise<void> {
  using client = testClient();
  for (const seq of seqs) {
    await client.send(
      new PutItemCommand({
        TableName: store.tables.outbox.name,
        Item: {
          seq: { N: seq },
          target_id: { S: `target-${seq}` },
          event: { S: JSON.stringify(newEvent("foreign", { seq })) },
        },
      }),
    );
  }
}

Deno.test("relayOutbox acknowledges rows whose seq another writer stored as negative, fractional or huge, and the rest of their batch", async (t) => {
  using counting = countingClient();
  // Another writer's rows: a store of the mixed fleet. The status feed's round (its own calls,
  // status_feed_test.ts) is no part of what is counted.
  const store = new DynamoDBStore(counting.client, {
    prefix: uniqueName("odd"),
    otherWriters: true,
  });
  await store.ensureTables();
  const odd = ["-1", "1.5", "0.30000000000000004", "-7.25"];
  await putOutboxRows(store, [...odd, ...Array.from({ length: 30 }, (_, i) => String(i + 2))]);
  counting.calls.length = 0;
  await t.step("a bounded pass delivers and acknowledges every row it read", async () => {
    const seen: number[] = [];
    const report = await relayOutbox(store, (entry) => Promise.resolve(void seen.push(entry.seq)));
    assert.equal(report.delivered, 34);
    assert.equal(report.failed, 0);
    assert.ok(seen.includes(-1) && seen.includes(1.5) && seen.includes(-7.25));
    assert.deepEqual(await store.pendingOutbox({ limit: Infinity }), []);
  });
  await t.step(
    "rows whose seq has more digits than a number holds are set aside by their stored key",
    async () => {
      const huge = ["1152921504606846976", "12345678901234567890123", "-98765432109876543210.5"];
      await putOutboxRows(store, [...huge, "40"]);
      const seen: number[] = [];
      const report = await relayOutbox(
        store,
        (entry) => Promise.resolve(void seen.push(entry.seq)),
        { limit: Infinity },
      );
      assert.deepEqual([report.delivered, report.setAside], [2, 2]);
      assert.deepEqual(seen, [40, 2 ** 60]);
      assert.deepEqual(await store.pendingOutbox({ limit: Infinity }), []);
      const dead = await store.deadLetters("outbox");
      assert.deepEqual(dead.map((letter) => letter.raw.seq).sort(), [huge[2], huge[1]].sort());
      assert.ok(dead.every((letter) => /more digits than a number holds/.test(letter.lastError!)));
    },
  );
  await t.step("with only the actions the IAM policy grants on the outbox and counters", () => {
    // Query reads the relay index; the Scan page and UpdateItems adopt these rows (written
    // without the index's attributes) and record where the adoption scan stands; DescribeTable
    // is the status feed's look-up of the executions table's stream (`otherWriters: true`).
    const granted = [
      "DescribeTableCommand",
      "QueryCommand",
      "ScanCommand",
      "BatchGetItemCommand",
      "BatchWriteItemCommand",
      "UpdateItemCommand",
    ];
    assert.deepEqual(counting.calls.filter((call) => !granted.includes(call)), []);
  });
  await t.step("ackOutbox still refuses a seq a caller got wrong", async () => {
    await assert.rejects(store.ackOutbox(-1), RangeError);
    await assert.rejects(store.ackOutbox([1, 1.5]), /seq\[1\] must be an integer/);
  });
});

Deno.test("relayOutbox and relaySpawns report lagSeconds, the age of the oldest entry the pass saw", async (t) => {
  await using store = await freshStore({ otherWriters: true }); // another writer's rows too
  await t.step("null when nothing is pending", async () => {
    const report = await relayOutbox(store, () => Promise.resolve());
    assert.deepEqual(report, { delivered: 0, failed: 0, setAside: 0, held: 0, lagSeconds: null });
  });
  await t.step(
    "another writer's rows (no created_at): from the oldest event's created_time, ISO with or without an offset",
    async () => {
      const ago = (seconds: number) => new Date(Date.now() - seconds * 1000);
      const times: (string | null | undefined)[] = [
        ago(30).toISOString(),
        // As Python's datetime.isoformat() writes it: microseconds, +00:00 or no offset (UTC).
        ago(95).toISOString().replace("Z", "123+00:00"),
        ago(60).toISOString().replace("Z", ""),
        null,
        undefined,
        "not a time",
      ];
      using client = testClient();
      for (const [i, time] of times.entries()) {
        const event: Event = newEvent("e");
        if (time === undefined) delete event.created_time;
        else event.created_time = time;
        await client.send(
          new PutItemCommand({
            TableName: store.tables.outbox.name,
            Item: {
              seq: { N: String(1_000_000 + i) },
              target_id: { S: `foreign-${i}` },
              event: { S: JSON.stringify(event) },
            },
          }),
        );
      }
      const report = await relayOutbox(store, () => Promise.resolve());
      assert.equal(report.delivered, times.length);
      assert.ok(
        report.lagSeconds !== null && report.lagSeconds >= 95 && report.lagSeconds < 110,
        `lag ${report.lagSeconds}`,
      );
    },
  );
  await t.step(
    "our own rows: from when they were committed, whatever the event's created_time",
    async () => {
      const old = new Date(Date.now() - 3600_000).toISOString();
      await emitToTargets(store, 2, () => ({ ...newEvent("e"), created_time: old }));
      const report = await relayOutbox(store, () => Promise.resolve());
      assert.equal(report.delivered, 2);
      assert.ok(report.lagSeconds !== null && report.lagSeconds < 30, `lag ${report.lagSeconds}`);
    },
  );
  await t.step("from when it was committed, for an event without created_time", async () => {
    await emitToTargets(store, 2, () => ({ ...newEvent("e"), created_time: null }));
    const report = await relayOutbox(store, () => Promise.resolve());
    assert.equal(report.delivered, 2);
    assert.ok(report.lagSeconds !== null && report.lagSeconds < 30, `lag ${report.lagSeconds}`);
  });
  await t.step("spawn intents: from when they were committed", async () => {
    const exe = newExecution({ definition_id: "p" });
    await store.commit(exe, { spawns: [{ childId: "c", rootPath: "r", context: {} }] });
    const report = await relaySpawns(store, () => Promise.resolve());
    assert.equal(report.delivered, 1);
    assert.ok(report.lagSeconds !== null && report.lagSeconds < 30, `lag ${report.lagSeconds}`);
  });
});

Deno.test("sweepTimers reports lagSeconds as now minus the earliest due timer's fireAt", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "t" });
  await store.commit(exe, {
    timers: [
      { action: "schedule", path: "a", fireAt: 1_700_000_000.5 },
      { action: "schedule", path: "b", fireAt: 1_700_000_050 },
      { action: "schedule", path: "later", fireAt: 1_800_000_000 },
    ],
  });
  const report = await sweepTimers(store, () => Promise.reject(new Error("down")), {
    now: 1_700_000_100,
  });
  assert.deepEqual(report, { delivered: 0, failed: 2, setAside: 0, held: 0, lagSeconds: 99.5 });
  assert.deepEqual(
    await sweepTimers(store, () => Promise.resolve(), { now: 1_600_000_000 }),
    { delivered: 0, failed: 0, setAside: 0, held: 0, lagSeconds: null },
  );
});

Deno.test("a relay pass still running when its store is closed fails with StoreClosed saying to await it before close()", async (t) => {
  await t.step("closed while delivering: the acknowledgement is refused", async () => {
    const store = await freshStore();
    await emitToTargets(store, 3);
    let closing: Promise<void> | undefined;
    const pass = relayOutbox(store, async () => {
      closing ??= store.close();
      await closing;
    });
    await assert.rejects(pass, (error) => {
      assert.ok(error instanceof StoreClosed, String(error));
      assert.match(
        error.message,
        /a call was still running when the store was closed: await it before close\(\)/,
      );
      assert.doesNotMatch(error.message, /make a new store/);
      return true;
    });
  });
  await t.step("closed while reading: the next request is refused", async () => {
    using client = testClient();
    const store = new DynamoDBStore(client, { prefix: uniqueName("closing") });
    await store.ensureTables();
    await emitToTargets(store, 3);
    const read = store.pendingOutbox(); // its Scan is sent; its BatchGetItem comes after close
    await store.close();
    await assert.rejects(read, (error) => {
      assert.ok(error instanceof StoreClosed, String(error));
      assert.match(error.message, /still running when the store was closed: await it/);
      assert.doesNotMatch(error.message, /make a new store/);
      return true;
    });
  });
  await t.step("a call begun after close() still says to make a new store", async () => {
    const store = await freshStore();
    await store.close();
    await assert.rejects(
      relayOutbox(store, () => Promise.resolve()),
      /outboxQueue\.lease\(\) was called after the store was closed; make a new store/,
    );
  });
});
