// Cost that follows the work: through the relay index a pass, a sweep and a dead-letter
// listing read what is due, whatever else is stored (parked, dead, held); held targets cost
// nothing per pass and never starve the healthy ones; holds are never erased or released early.
import assert from "node:assert/strict";
import {
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  relayOutbox,
  relaySpawns,
  sweepTimers,
} from "../../mod.ts";
import { freshStore, testClient, uniqueName } from "../_support/env.ts";
import { holdTargets, parkSpawnsAndTimers } from "../_support/relay_rows.ts";

/** Commits `emits` in transactions of at most 90 emits, from one new execution. */
async function emitAll(
  store: DynamoDBStore,
  emits: { target: string | null; kind?: string }[],
): Promise<number[]> {
  const exe = newExecution({ definition_id: "index" });
  const seqs: number[] = [];
  for (let i = 0; i < emits.length; i += 90) {
    const { outbox } = await store.commit(exe, {
      emits: emits.slice(i, i + 90).map(({ target, kind = "e" }) => ({
        target,
        event: newEvent(kind),
      })),
    });
    seqs.push(...outbox);
  }
  return seqs;
}

const failing = (prefix: string) => (entry: { targetId: string | null }) =>
  entry.targetId?.startsWith(prefix) ? Promise.reject(new Error("down")) : Promise.resolve();

/** A store on `store`'s tables whose client sums the read units and counts the calls. */
function measured(store: DynamoDBStore, options: { otherWriters?: boolean } = {}) {
  const client = testClient();
  const cost = { reads: 0, calls: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as Record<string, unknown>).ReturnConsumedCapacity = "TOTAL";
      const result = await next(args);
      const name = context.commandName as string;
      const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      if (/^(Query|Scan|GetItem|BatchGetItem)Command$/.test(name)) {
        for (const each of [consumed ?? []].flat() as { CapacityUnits?: number }[]) {
          cost.reads += each.CapacityUnits ?? 0;
          if (Deno.env.get("DEBUG_COST")) {
            console.log(name, each.CapacityUnits, JSON.stringify(args.input).slice(0, 200));
          }
        }
      }
      cost.calls++;
      return result;
    },
    { step: "initialize", name: "measure" },
  );
  const prefix = store.tables.executions.name.replace(/_executions$/, "");
  // With otherWriters: true, the status feed's round runs beside passes (its cost:
  // status_feed_test.ts).
  const view = new DynamoDBStore(client, { prefix, ...options });
  return { view, cost, [Symbol.dispose]: () => client.destroy() };
}

Deno.test("relayOutbox: with 1,020 failing targets, each held behind a dead letter, later passes still deliver a full limit of healthy entries", async () => {
  await using store = await freshStore();
  const targets = Array.from({ length: 1020 }, (_, i) => `down-${i}`);
  // Each failing target: a head dead-lettered, and one entry held behind it.
  await holdTargets(store, targets, 2);
  await emitAll(store, Array.from({ length: 60 }, (_, i) => ({ target: `ok-${i % 6}` })));
  const delivered: number[] = [];
  for (let pass = 0; pass < 3; pass++) {
    const report = await relayOutbox(store, failing("down-"), { limit: 10 });
    delivered.push(report.delivered);
  }
  assert.deepEqual(delivered, [10, 10, 10]);
  assert.equal((await store.deadLetters("outbox", { limit: Infinity })).length, 1020);
});

Deno.test("inline delivery never passes a target's remaining dead letter after an operator drops its other one", async () => {
  const first = await freshStore();
  const prefix = first.tables.executions.name.replace(/_executions$/, "");
  await using b = first;
  await using a = await DynamoDBStore.create({
    prefix,
    endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
  });
  // B reserves seqs 1..1000 first, so A's block starts at 1001.
  const [opener] = await emitAll(b, [{ target: "elsewhere" }]);
  assert.equal(opener, 1);
  await relayOutbox(b, () => Promise.resolve());
  const exeA = newExecution({ definition_id: "index" });
  const { outbox: [a1] } = await a.commit(exeA, {
    emits: [{ target: "T", event: newEvent("a1") }],
  });
  assert.equal(a1, 1001);
  await relayOutbox(a, failing("T"), { maxAttempts: 1 }); // A1 dead
  const { outbox: [b1] } = await b.commit(newExecution({ definition_id: "index" }), {
    emits: [{ target: "T", event: newEvent("b1") }],
  });
  assert.equal(b1, 2);
  await relayOutbox(b, failing("T"), { maxAttempts: 1 }); // B1, below A1, attempted and dead
  assert.deepEqual((await a.deadLetters("outbox")).map((d) => d.key), [2, 1001]);
  assert.equal(await a.dropDeadLetter("outbox", 2), true);
  const { outbox: [c1] } = await a.commit(exeA, {
    emits: [{ target: "T", event: newEvent("c1") }],
  });
  assert.equal(c1, 1002);
  const inline: number[] = [];
  await relayOutbox(a, (e) => Promise.resolve(void inline.push(e.seq)), { seqs: [c1!] });
  assert.deepEqual(inline, [], "C1 waits behind A1, still dead");
  const full: number[] = [];
  await relayOutbox(a, (e) => Promise.resolve(void full.push(e.seq)));
  assert.deepEqual(full as number[], [], "a full pass holds it too");
  assert.equal(await a.retryDeadLetter("outbox", 1001), true);
  await relayOutbox(a, (e) => Promise.resolve(void full.push(e.seq)));
  assert.deepEqual(full, [1001, 1002], "retried, A1 goes first, then C1");
});

Deno.test("a relay pass never erases a hold an inline delivery recorded while it ran", async () => {
  await using store = await freshStore();
  const exe = newExecution({ definition_id: "index" });
  await store.commit(exe, { emits: [{ target: "slow", event: newEvent("s") }] });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  let started!: () => void;
  const running = new Promise<void>((resolve) => started = resolve);
  // A pass that is still delivering to "slow" while an inline delivery to T fails.
  const pass = relayOutbox(store, async () => {
    started();
    await gate;
  });
  await running;
  const { outbox: [t1] } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("t1") }],
  });
  await relayOutbox(store, failing("T"), { seqs: [t1!], backoff: { minSeconds: 3600 } });
  release();
  await pass;
  const { outbox: [t2] } = await store.commit(exe, {
    emits: [{ target: "T", event: newEvent("t2") }],
  });
  const inline: number[] = [];
  await relayOutbox(store, (e) => Promise.resolve(void inline.push(e.seq)), { seqs: [t2!] });
  assert.deepEqual(inline, [], "t2 waits behind t1, which waits for its retry");
  const full: number[] = [];
  await relayOutbox(store, (e) => Promise.resolve(void full.push(e.seq)));
  assert.deepEqual(full, []);
});

/** What one pass costs on a table holding `stored` failed rows, besides 10 deliverable ones. */
async function outboxPassCost(stored: number) {
  await using store = await freshStore();
  const targets = Array.from({ length: stored / 10 }, (_, i) => `down-${i}`);
  await holdTargets(store, targets, 10);
  await emitAll(store, Array.from({ length: 10 }, (_, i) => ({ target: `ok-${i}` })));
  using m = measured(store);
  const report = await relayOutbox(m.view, () => Promise.resolve());
  assert.equal(report.delivered, 10);
  const cost = { ...m.cost };
  m.cost.reads = m.cost.calls = 0;
  await relayOutbox(m.view, () => Promise.resolve());
  const empty = { ...m.cost };
  m.cost.reads = m.cost.calls = 0;
  assert.equal((await m.view.deadLetters("outbox", { limit: 20 })).length, 20);
  return { pass: cost, empty, deadLetters: { ...m.cost } };
}

Deno.test("a relay pass, an empty pass and a dead-letter listing cost as much with 3,000 dead and held outbox entries as with 300", async () => {
  const small = await outboxPassCost(300);
  const large = await outboxPassCost(3000);
  console.log("outbox cost at 300 / 3,000 stored:", JSON.stringify({ small, large }));
  for (const what of ["pass", "empty", "deadLetters"] as const) {
    assert.ok(
      large[what].reads <= 2 * small[what].reads + 2,
      `${what}: ${large[what].reads} read units at 3,000 vs ${small[what].reads} at 300`,
    );
    assert.ok(
      large[what].calls <= 2 * small[what].calls,
      `${what}: ${large[what].calls} calls at 3,000 vs ${small[what].calls} at 300`,
    );
  }
});

/** What a spawn pass and a timer sweep cost with `stored` parked rows, besides 10 due ones. */
async function spawnAndTimerCost(stored: number, options: { otherWriters?: boolean } = {}) {
  const exe: Execution = newExecution({ definition_id: "index" });
  const now = Date.now() / 1000;
  // Parked before the tables have a stream (otherWriters: true turns one on, and the feeds'
  // one-off scans begin then, on the full tables, as after a fill commit by commit).
  const prefix = uniqueName("t");
  await using filling = await freshStore({ prefix });
  await parkSpawnsAndTimers(filling, exe, stored, now - 60);
  await using store = await freshStore({ ...options, prefix });
  await store.commit(exe, {
    spawns: Array.from(
      { length: 10 },
      (_, j) => ({ childId: `ok${j}`, rootPath: "r", context: {} }),
    ),
    timers: Array.from({ length: 10 }, (_, j) => ({
      action: "schedule" as const,
      path: `ok${j}`,
      fireAt: now - 1,
    })),
  });
  using m = measured(store, options);
  assert.equal((await relaySpawns(m.view, () => Promise.resolve())).delivered, 10);
  const spawns = { ...m.cost };
  m.cost.reads = m.cost.calls = 0;
  assert.equal(
    (await sweepTimers(m.view, () => Promise.resolve(), { now: now + 60 })).delivered,
    10,
  );
  return { spawns, timers: { ...m.cost } };
}

Deno.test("a spawn pass and a timer sweep cost as much with 3,000 parked rows as with 300; the timers' scan adds at most one 1 MB page", async () => {
  // A default store: the index's part alone (no scan for other writers' timers).
  const small = await spawnAndTimerCost(300);
  const large = await spawnAndTimerCost(3000);
  console.log("spawn and timer cost at 300 / 3,000 parked:", JSON.stringify({ small, large }));
  for (const what of ["spawns", "timers"] as const) {
    assert.ok(
      large[what].reads <= 2 * small[what].reads + 2,
      `${what}: ${large[what].reads} read units at 3,000 vs ${small[what].reads} at 300`,
    );
    assert.ok(large[what].calls <= 2 * small[what].calls, `${what} calls`);
  }
  // With other writers: a sweep also reads one page of the timers table (timers have no seq),
  // which at most costs a 1 MB page's 128 read units, however many timers are stored.
  const scanned = await spawnAndTimerCost(3000, { otherWriters: true });
  console.log("with the timers' scan, at 3,000 parked:", JSON.stringify(scanned));
  assert.ok(scanned.timers.reads <= large.timers.reads + 128, JSON.stringify(scanned));
  assert.ok(scanned.timers.reads > large.timers.reads, "the scan reads the table");
  assert.ok(scanned.spawns.reads <= 2 * small.spawns.reads + 2 + 50, "spawns: a 100-row page");
});

/** A store on `store`'s tables whose client runs `hook` around each command it sends. */
function wrapped(
  store: DynamoDBStore,
  hook: (name: string, input: Record<string, unknown>, send: () => Promise<unknown>) => unknown,
  options: { otherWriters?: boolean; now?: () => number } = {},
) {
  const client = testClient();
  const sender = {
    send: (command: { constructor: { name: string }; input: Record<string, unknown> }) =>
      hook(command.constructor.name, command.input, () => client.send(command as never)),
  };
  const prefix = store.tables.executions.name.replace(/_executions$/, "");
  const view = new DynamoDBStore(sender as never, { prefix, ...options });
  return { view, [Symbol.dispose]: () => client.destroy() };
}

/** Seq T1 waiting for a retry due in a second, and `held` more entries to T moved behind it. */
async function heldBehindWaitingHead(store: DynamoDBStore, held: number): Promise<number[]> {
  const seqs = await emitAll(store, [{ target: "T" }]);
  await relayOutbox(store, failing("T"), { backoff: { minSeconds: 1, maxSeconds: 1 } });
  seqs.push(...await emitAll(store, Array.from({ length: held }, () => ({ target: "T" }))));
  await relayOutbox(store, failing("T")); // the entries behind it go to T's partition
  await new Promise((resolve) => setTimeout(resolve, 1100)); // its retry is due
  return seqs;
}

const collect = (into: number[]) => (entry: { seq: number }) =>
  Promise.resolve(void into.push(entry.seq));

Deno.test("an inline delivery of a head whose retry is due brings back the entries held behind it", async () => {
  // No adoption scan (a default store): nothing but the release brings them back.
  await using store = await freshStore();
  const [head, ...held] = await heldBehindWaitingHead(store, 2);
  const inline: number[] = [];
  await relayOutbox(store, collect(inline), { seqs: [head!] });
  assert.deepEqual(inline, [head]);
  const delivered: number[] = [];
  for (let pass = 0; pass < 2; pass++) await relayOutbox(store, collect(delivered));
  assert.deepEqual(delivered, held);
});

Deno.test("a relay that dies between acknowledging a head and releasing its target leaves nothing held for good", async () => {
  await using store = await freshStore();
  const [head, next, ...rest] = await heldBehindWaitingHead(store, 3);
  // The relay dies at its first write after the acknowledgement.
  let acknowledged = false;
  using dying = wrapped(store, async (name, _input, send) => {
    if (acknowledged && /^(UpdateItem|TransactWriteItems)Command$/.test(name)) {
      throw new Error("the relay's process died");
    }
    const answer = await send();
    if (name === "BatchWriteItemCommand") acknowledged = true;
    return answer;
  });
  const first: number[] = [];
  await assert.rejects(relayOutbox(dying.view, collect(first), { limit: 2 }), /died/);
  assert.deepEqual(first, [head, next]);
  // The head's acknowledgement is its release's first write, so it died unacknowledged: a later
  // relay delivers it again (at least once), then the rest, in order.
  using later = wrapped(store, (_name, _input, send) => send(), {
    now: () => Date.now() + 120_000,
  });
  const delivered: number[] = [];
  for (let pass = 0; pass < 2; pass++) await relayOutbox(later.view, collect(delivered));
  assert.deepEqual(delivered, [head, ...rest]);
});

Deno.test("a pass never delivers a target's entries out of seq order while a release brings its held entries back", async () => {
  // No adoption page (whose check of held targets could release T itself, at once, in a table
  // this small): the pass sees what the operator's release has done so far, and nothing else.
  await using store = await freshStore();
  const [source1, source2] = [
    newExecution({ definition_id: "a" }),
    newExecution({ definition_id: "b" }),
  ];
  const emit = async (exe: Execution) =>
    (await store.commit(exe, { emits: [{ target: "T", event: newEvent("e") }] })).outbox[0]!;
  const head = await emit(source1);
  await relayOutbox(store, failing("T"), { maxAttempts: 1 }); // dead
  const [second, third] = [await emit(source2), await emit(source1)]; // two sources
  await relayOutbox(store, failing("T")); // both held behind the dead head
  // The operator's release brings `second` back slowly.
  using operator = wrapped(store, async (name, input, send) => {
    const values = input.ExpressionAttributeValues as Record<string, { S?: string }> | undefined;
    const key = input.Key as Record<string, { N?: string }> | undefined;
    if (
      name === "UpdateItemCommand" && values?.[":from"]?.S?.startsWith("h") &&
      key?.seq?.N === String(second)
    ) await new Promise((resolve) => setTimeout(resolve, 1500));
    return await send();
  });
  const dropping = operator.view.dropDeadLetter("outbox", head);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const delivered: number[] = [];
  await relayOutbox(store, collect(delivered)); // while the release runs
  assert.equal(await dropping, true);
  for (let pass = 0; pass < 2; pass++) await relayOutbox(store, collect(delivered));
  assert.deepEqual(delivered, [second, third]);
});
