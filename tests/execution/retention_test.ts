// Retention of finished executions: the `ttl` a commit writes and removes, reads that
// treat an execution past it as absent (DynamoDB deletes expired items up to days late), and
// commits against an expired item that is still there. The store's clock is moved with its
// `now` option; the client is the real one, against DynamoDB Local.
import assert from "node:assert/strict";
import {
  CreateTableCommand,
  DescribeTimeToLiveCommand,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
} from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStateStore,
  DynamoDBStore,
  type Execution,
  type ExecutionStore,
  type ListPage,
  newEvent,
  newExecution,
  StoreConflict,
  tableDefinitions,
} from "../../mod.ts";
import { MemoryStateStore, MemoryStore } from "../../src/testing.ts";
import { main } from "../../src/cli.ts";
import { countingClient, endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";
import { seedPutExecution } from "../_support/seed.ts";

const HOUR = 3600;
const DAY = 86_400;

/** A clock the test moves: epoch milliseconds. */
function clock(): { now: () => number; advance(seconds: number): void } {
  let ms = Date.now();
  return { now: () => ms, advance: (seconds) => void (ms += seconds * 1000) };
}

/** The execution item as stored, or undefined. */
async function rawItem(store: DynamoDBStore, id: string) {
  using client = testClient();
  const { Item } = await client.send(
    new GetItemCommand({
      TableName: store.tables.executions.name,
      Key: { id: { S: id } },
      ConsistentRead: true,
    }),
  );
  return Item;
}

/** The execution document and item written the way the Python store writes one: a whole-item Put. */
async function pythonPut(store: DynamoDBStore, exe: Execution): Promise<void> {
  using client = testClient();
  await seedPutExecution(client, store.tables.executions.name, exe);
}

Deno.test("a commit that leaves an execution finished writes its ttl in the same call; one that reopens it removes it", async (t) => {
  using counting = countingClient();
  const { client, calls } = counting;
  const time = clock();
  const store = new DynamoDBStore(client, {
    prefix: uniqueName("retention"),
    finishedTtlSeconds: 7 * DAY,
    now: time.now,
  });
  await store.ensureTables();
  for (const status of ["DONE", "CANCELLED", "FAILED"] as const) {
    await t.step(
      `${status}: ttl = now + finishedTtlSeconds, in the commit's one call`,
      async () => {
        const exe = newExecution({ definition_id: "order", status: "RUNNING" });
        await store.save(exe);
        assert.equal(
          (await rawItem(store, exe.id))?.ttl,
          undefined,
          "an open execution has no ttl",
        );
        exe.status = status;
        calls.length = 0;
        await store.commit(exe, { processedEventId: `finish-${status}` });
        assert.deepEqual(calls, ["TransactWriteItemsCommand"]);
        const ttl = Number((await rawItem(store, exe.id))?.ttl?.N);
        assert.equal(ttl, Math.floor(time.now() / 1000) + 7 * DAY);
        exe.status = "RUNNING";
        calls.length = 0;
        await store.commit(exe);
        assert.deepEqual(calls, ["TransactWriteItemsCommand"]);
        assert.equal((await rawItem(store, exe.id))?.ttl, undefined, "reopened: the ttl is gone");
      },
    );
  }
  await t.step(
    "a finished execution committed again gets its ttl from the last commit",
    async () => {
      const exe = newExecution({ definition_id: "order", status: "DONE" });
      await store.save(exe); // an insert straight into a finished status
      const first = Number((await rawItem(store, exe.id))?.ttl?.N);
      time.advance(HOUR);
      await store.commit(exe, { processedEventId: "late-event" });
      assert.equal(Number((await rawItem(store, exe.id))?.ttl?.N), first + HOUR);
    },
  );
  await t.step("open statuses never carry a ttl", async () => {
    for (const status of ["PENDING", "RUNNING", "SUSPENDED", "CANCELLING"] as const) {
      const exe = newExecution({ definition_id: "order", status });
      await store.save(exe);
      assert.equal((await rawItem(store, exe.id))?.ttl, undefined, status);
    }
  });
});

Deno.test("a store without finishedTtlSeconds keeps finished executions forever: they carry no ttl, though the table's TTL is on", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "order", status: "DONE" });
  await store.save(exe);
  assert.equal((await rawItem(store, exe.id))?.ttl, undefined);
  using client = testClient();
  // TTL is on whatever the options (the tables do not depend on them); a row without the
  // attribute never expires.
  const { TimeToLiveDescription } = await client.send(
    new DescribeTimeToLiveCommand({ TableName: store.tables.executions.name }),
  );
  assert.equal(TimeToLiveDescription?.TimeToLiveStatus, "ENABLED");
});

Deno.test("ensureTables() enables TTL on the executions table's ttl attribute, idempotently", async () => {
  await using store = await freshStore({ finishedTtlSeconds: DAY });
  await store.ensureTables(); // again: already enabled is fine
  using client = testClient();
  const { TimeToLiveDescription } = await client.send(
    new DescribeTimeToLiveCommand({ TableName: store.tables.executions.name }),
  );
  assert.equal(TimeToLiveDescription?.AttributeName, "ttl");
  assert.equal(TimeToLiveDescription?.TimeToLiveStatus, "ENABLED");
});

/** Both backends with a clock the test moves. */
async function backends(
  finishedTtlSeconds: number,
): Promise<{ name: string; store: ExecutionStore; advance(seconds: number): void }[]> {
  const dynamo = clock();
  const memory = clock();
  return [
    {
      name: "DynamoDBStore",
      store: await freshStore({ finishedTtlSeconds, now: dynamo.now }),
      advance: dynamo.advance,
    },
    {
      name: "MemoryStore",
      store: new MemoryStore({ finishedTtlSeconds, now: memory.now }),
      advance: memory.advance,
    },
  ];
}

Deno.test("every read treats an execution past its ttl as absent, though DynamoDB still keeps it", async (t) => {
  for (const { name, store, advance } of await backends(HOUR)) {
    await t.step(name, async () => {
      await using _ = store;
      const done = newExecution({ definition_id: "order", status: "RUNNING" });
      const open = newExecution({ definition_id: "order", status: "RUNNING" });
      await store.save(open);
      await store.commit(done, { processedEventId: "created" });
      done.status = "DONE";
      await store.commit(done, { processedEventId: "paid" });
      const ids = async () =>
        (await store.listExecutions({ definitionId: "order" })).items.map((s) => s.id).sort();

      advance(HOUR - 1); // one second before it expires: still there
      assert.equal((await store.load(done.id))?.status, "DONE");
      assert.deepEqual(await ids(), [done.id, open.id].sort());

      advance(1); // its ttl has come: absent to every read
      assert.equal(await store.load(done.id), null);
      assert.deepEqual(await store.loadForEvent(done.id, "other"), {
        execution: null,
        processed: false,
      });
      assert.deepEqual(await ids(), [open.id]);
      assert.deepEqual(
        (await store.listExecutions({ status: "DONE" })).items,
        [],
        "a status filter finds no expired execution",
      );
      const walked: string[] = [];
      let cursor: string | null = null;
      do {
        const page: ListPage = await store.listExecutions({ limit: 1, cursor });
        walked.push(...page.items.map((s) => s.id));
        cursor = page.nextCursor;
      } while (cursor);
      assert.deepEqual(walked, [open.id], "pages of one: the expired one is on none");
      assert.equal((await store.load(open.id))?.status, "RUNNING", "open executions never expire");
      if (store instanceof DynamoDBStore) {
        assert.ok(await rawItem(store, done.id), "DynamoDB has not deleted the item yet");
      }
    });
  }
});

Deno.test("a commit against an expired execution fails as against an absent one, and an insert of its id succeeds", async (t) => {
  for (const { name, store, advance } of await backends(HOUR)) {
    await t.step(name, async () => {
      await using _ = store;
      const exe = newExecution({ definition_id: "order", status: "DONE" });
      await store.save(exe);
      const stale = structuredClone(exe);
      advance(HOUR + 1);

      stale.status = "RUNNING";
      const error = await store.commit(stale, {
        emits: [{ target: null, event: newEvent("leak") }],
        timers: [{ action: "schedule", path: "p", fireAt: 100 }],
        processedEventId: "leak",
        trace: { leak: true },
      }).catch((e) => e);
      assert.ok(error instanceof StoreConflict, String(error));
      assert.deepEqual([error.expected, error.found], [1, null]);
      assert.equal(stale.version, 1);
      assert.deepEqual(await store.pendingOutbox(), [], "a lost CAS leaks nothing");
      assert.deepEqual(await store.dueTimers(1000), []);
      assert.equal(await store.isProcessed(exe.id, "leak"), false);

      const again = newExecution({ definition_id: "order", id: exe.id, status: "RUNNING" });
      await store.commit(again, { trace: { fresh: true } });
      assert.equal(again.version, 1);
      assert.deepEqual(await store.load(exe.id), { ...again });
      if (store instanceof DynamoDBStore) {
        assert.equal((await rawItem(store, exe.id))?.ttl, undefined, "the new one is open");
      }
      // Two inserts over one expired item: exactly one wins.
      const target = newExecution({ definition_id: "order", status: "DONE" });
      await store.save(target);
      advance(HOUR + 1);
      const racers = [0, 1, 2].map(() => newExecution({ definition_id: "order", id: target.id }));
      const outcomes = await Promise.allSettled(racers.map((r) => store.save(r)));
      assert.equal(outcomes.filter((o) => o.status === "fulfilled").length, 1);
      for (const outcome of outcomes) {
        if (outcome.status === "rejected") {
          assert.ok(outcome.reason instanceof StoreConflict);
          assert.equal(outcome.reason.found, 1);
        }
      }
    });
  }
});

Deno.test("an expired execution's dedupe marks keep their own lifetime", async (t) => {
  for (const { name, store, advance } of await backends(HOUR)) {
    await t.step(name, async () => {
      await using _ = store;
      const exe = newExecution({ definition_id: "d", status: "DONE" });
      await store.commit(exe, { processedEventId: "e" });
      assert.deepEqual(await store.loadForEvent(exe.id, "e"), {
        execution: { ...exe },
        processed: true,
      });
      advance(HOUR);
      assert.deepEqual(await store.loadForEvent(exe.id, "e"), {
        execution: null,
        processed: true,
      }, "the mark has its own lifetime (processedTtlSeconds)");
    });
  }
});

Deno.test("DynamoDBStore's dedupe marks expire on the store's clock", async () => {
  const time = clock();
  await using store = await freshStore({ processedTtlSeconds: 60, now: time.now });
  const exe = newExecution({ definition_id: "d" });
  await store.commit(exe, { processedEventId: "e" });
  assert.equal(await store.isProcessed(exe.id, "e"), true);
  time.advance(60);
  assert.equal(await store.isProcessed(exe.id, "e"), false);
  assert.equal((await store.loadForEvent(exe.id, "e")).processed, false);
});

Deno.test("a Python-style whole-item Put drops the ttl: that finished execution stays", async () => {
  const time = clock();
  await using store = await freshStore({ finishedTtlSeconds: HOUR, now: time.now });
  const exe = newExecution({ definition_id: "order", status: "DONE" });
  await store.save(exe);
  assert.ok((await rawItem(store, exe.id))?.ttl);
  exe.version = 2;
  exe.context = { by: "python" };
  await pythonPut(store, exe);
  assert.equal((await rawItem(store, exe.id))?.ttl, undefined);
  time.advance(10 * 365 * DAY);
  assert.deepEqual((await store.load(exe.id))?.context, { by: "python" });
  // The next commit of ours finishes it again, with a ttl.
  await store.save(exe);
  assert.equal(
    Number((await rawItem(store, exe.id))?.ttl?.N),
    Math.floor(time.now() / 1000) + HOUR,
  );
});

Deno.test("a ttl another writer stored in milliseconds, or as text, never expires (nor does DynamoDB's TTL delete it)", async () => {
  const time = clock();
  await using store = await freshStore({ finishedTtlSeconds: HOUR, now: time.now });
  using client = testClient();
  const put = async (ttl: Record<string, string>) => {
    const exe = newExecution({ definition_id: "odd", status: "DONE", version: 1 });
    await seedPutExecution(client, store.tables.executions.name, exe, { ttl });
    return exe;
  };
  const ms = await put({ N: String(Date.now() + 1000) });
  const text = await put({ S: "1" });
  const past = await put({ N: String(Math.floor(time.now() / 1000) - 1) });
  time.advance(DAY);
  assert.equal((await store.load(ms.id))?.id, ms.id);
  assert.equal((await store.load(text.id))?.id, text.id);
  assert.equal(await store.load(past.id), null);
  assert.deepEqual(
    (await store.listExecutions({ definitionId: "odd" })).items.map((s) => s.id).sort(),
    [ms.id, text.id].sort(),
  );
  // Our commit of the millisecond one treats it as live, and finishing it writes seconds.
  const loaded = (await store.load(ms.id))!;
  await store.save(loaded);
  const { Items } = await client.send(
    new ScanCommand({ TableName: store.tables.executions.name, ConsistentRead: true }),
  );
  const written = Items!.find((item) => item.id?.S === ms.id)!;
  assert.equal(Number(written.ttl?.N), Math.floor(time.now() / 1000) + HOUR);
});

Deno.test("an execution's ttl of any type is read by one rule: commits, loads, listings and deleteExecution agree", async (t) => {
  // Another writer may store a ttl of any type. Only a number at or before now has expired
  // (DynamoDB's TTL reads it so, and so does every read here); a commit's condition, an
  // insert's and deleteExecution's must say the same, or the execution is live to reads and
  // refused to every commit, for good.
  const time = clock();
  await using store = await freshStore({ now: time.now });
  using client = testClient();
  const nowSeconds = Math.floor(time.now() / 1000);
  const kinds: [string, Record<string, unknown>, boolean][] = [
    ["a number as text", { S: String(nowSeconds - 10) }, true],
    ["text that is no number", { S: "soon" }, true],
    ["a boolean", { BOOL: true }, true],
    ["NULL", { NULL: true }, true],
    ["a number after now", { N: String(nowSeconds + HOUR) }, true],
    ["a number before now", { N: String(nowSeconds - 1) }, false],
  ];
  const put = async (ttl: Record<string, unknown>) => {
    const exe = newExecution({ definition_id: "typed", status: "RUNNING", version: 1 });
    await seedPutExecution(client, store.tables.executions.name, exe, { ttl });
    return exe;
  };
  for (const [kind, ttl, live] of kinds) {
    await t.step(
      `a ttl that is ${kind} is ${live ? "live" : "expired"} to every call`,
      async () => {
        const committed = await put(ttl);
        const deleted = await put(ttl);
        const inserted = await put(ttl);
        assert.equal((await store.load(committed.id))?.id, live ? committed.id : undefined);
        const listed = new Set<string>();
        for (let cursor: string | null = null;;) {
          const page: ListPage = await store.listExecutions({ definitionId: "typed", cursor });
          for (const item of page.items) listed.add(item.id);
          if ((cursor = page.nextCursor) === null) break;
        }
        assert.equal(listed.has(committed.id), live);
        assert.equal((await store.deleteExecution(deleted.id)).execution, live);
        assert.equal(await rawItem(store, deleted.id), undefined);
        if (live) {
          const loaded = (await store.load(committed.id))!;
          assert.deepEqual(await store.commit(loaded, { processedEventId: "e1" }), {
            version: 2,
            outbox: [],
            spawns: [],
          });
          assert.equal((await store.load(committed.id))?.version, 2);
          // An insert of a live execution's id is a lost race, naming what is stored.
          await assert.rejects(
            store.save({ ...inserted, version: 0 }),
            (error) => error instanceof StoreConflict && error.found === 1,
          );
        } else {
          await assert.rejects(
            store.save(committed),
            (error) => error instanceof StoreConflict && error.found === null,
          );
          await store.save({ ...inserted, version: 0 });
          assert.equal((await store.load(inserted.id))?.version, 1);
        }
      },
    );
  }
});

Deno.test("finishedTtlSeconds and now are checked before anything is sent", () => {
  using client = testClient();
  for (const bad of [0, -1, 1.5, NaN, Infinity, 315_360_001]) {
    assert.throws(
      () => new DynamoDBStore(client, { finishedTtlSeconds: bad }),
      RangeError,
      String(bad),
    );
    assert.throws(() => new MemoryStore({ finishedTtlSeconds: bad }), RangeError, String(bad));
  }
  assert.throws(
    () => new DynamoDBStore(client, { finishedTtlSeconds: 7 * DAY * 1000 }),
    /in seconds \(604800000 ms would be 604800\)/,
  );
  assert.throws(
    () => new DynamoDBStore(client, { finishedTtlSeconds: "3600" as unknown as number }),
    RangeError,
  );
  assert.throws(() => new DynamoDBStore(client, { now: 5 as unknown as () => number }), TypeError);
  for (const ok of [null, undefined, 1, 315_360_000]) {
    new DynamoDBStore(client, { finishedTtlSeconds: ok });
    new MemoryStore({ finishedTtlSeconds: ok });
  }
});

Deno.test("a clock that gives no number fails the commit before anything is sent", async () => {
  await using store = await freshStore({ finishedTtlSeconds: HOUR, now: () => NaN });
  const exe = newExecution({ definition_id: "d" });
  await assert.rejects(store.save(exe), /now\(\) must return epoch milliseconds, got NaN/);
  assert.equal(exe.version, 0);
});

Deno.test("a clock that gives no number fails every time-based call of the memory twins, as it does DynamoDB's", async () => {
  let ms = Date.now();
  const store = new MemoryStore({ processedTtlSeconds: HOUR, now: () => ms });
  const state = new MemoryStateStore({ now: () => ms });
  const exe = newExecution({ definition_id: "d" });
  await store.commit(exe, { processedEventId: "event" });
  await state.set("k", 1, { ttl: HOUR });
  ms = NaN;
  const refused = /now\(\) must return epoch milliseconds, got NaN/;
  await assert.rejects(store.commit(exe, {}), refused);
  await assert.rejects(store.isProcessed(exe.id, "event"), refused);
  await assert.rejects(store.pendingOutbox(), refused);
  await assert.rejects(store.pendingSpawns(), refused);
  await assert.rejects(store.backlog("outbox"), refused);
  await assert.rejects(state.get("k"), refused);
});

Deno.test("a clock in epoch seconds (Date.now() / 1000) is refused by every store's constructor and create(), sending nothing", async () => {
  const seconds = () => Date.now() / 1000;
  using counting = countingClient();
  const prefix = uniqueName("seconds");
  const refused = (error: unknown) =>
    error instanceof RangeError && /looks like epoch seconds/.test(error.message) &&
    /multiply by 1000/.test(error.message);
  assert.throws(
    () => new DynamoDBStore(counting.client, { prefix, now: seconds }),
    refused,
  );
  assert.throws(() => new MemoryStore({ now: seconds }), refused);
  assert.throws(
    () => new DynamoDBStateStore(counting.client, { tableName: `${prefix}_state`, now: seconds }),
    refused,
  );
  assert.throws(() => new MemoryStateStore({ now: seconds }), refused);
  await assert.rejects(
    DynamoDBStore.create({ endpoint: endpoint(), prefix, now: seconds, ensureTables: false }),
    refused,
  );
  assert.deepEqual(counting.calls, []);
  // Fake clocks in milliseconds pass: from 0, from 1990, from 2033.
  for (const ms of [0, Date.UTC(1990, 0, 1), Date.UTC(2033, 0, 1)]) {
    await new MemoryStore({ now: () => ms }).commit(newExecution({ definition_id: "d" }));
    new MemoryStateStore({ now: () => ms });
    new DynamoDBStore(counting.client, { prefix, now: () => ms });
  }
});

Deno.test("the CLI treats an execution past its ttl as absent: show and executions", async () => {
  using client = testClient();
  const prefix = uniqueName("clittl");
  // Tables as defined but with TTL off: DynamoDB Local keeps the expired item, as AWS does for a
  // while (ensureTables() would turn TTL on, and DynamoDB Local deletes expired items at once).
  await Promise.all(
    Object.values(tableDefinitions({ prefix }).tables).map(({ create }) =>
      client.send(new CreateTableCommand(create))
    ),
  );
  await using store = new DynamoDBStore(client, { prefix });
  const expired = newExecution({ definition_id: "cli", status: "DONE", version: 1 });
  await client.send(
    new PutItemCommand({
      TableName: store.tables.executions.name,
      Item: {
        id: { S: expired.id },
        data: { S: JSON.stringify(expired) },
        version: { N: "1" },
        definition_id: { S: "cli" },
        ttl: { N: String(Math.floor(Date.now() / 1000) - 60) },
      },
    }),
  );
  const live = newExecution({ definition_id: "cli", status: "DONE" });
  await store.save(live);
  const run = async (...args: string[]) => {
    const out: string[] = [], err: string[] = [];
    const code = await main([...args, "--prefix", prefix, "--endpoint", endpoint()], {
      out: (line) => out.push(line),
      err: (line) => err.push(line),
    });
    return { code, out: out.join("\n"), err: err.join("\n") };
  };
  const shown = await run("show", expired.id);
  assert.equal(shown.code, 1);
  assert.match(shown.err, /no execution/);
  const listed = await run("executions", "--status", "DONE", "--json");
  assert.equal(listed.code, 0, listed.err);
  assert.deepEqual(JSON.parse(listed.out).items.map((s: { id: string }) => s.id), [live.id]);
});
