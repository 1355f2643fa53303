// The mixed fleet (`otherWriters: true`) under hostile cases: another writer's rows (written as
// the Python seed does: ADD n on the outbox counter, then a Put of seq, target_id, event) to one
// target beside ours, each pass in a fresh store, the relay index lagging 1.5 s. A dead or failing
// entry of theirs holds the target, and a retry or a drop frees it; long runs of theirs (past the
// 16 and 32 of a target's recent lists) and an event over 3,000 characters keep seq order;
// maxAttempts counts their attempts; two relays at once deliver each entry once, in order.
import assert from "node:assert/strict";
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  type DynamoDBStore,
  newEvent,
  newExecution,
  type OutboxEntry,
  relayOutbox,
} from "../../mod.ts";
import { concurrentTest } from "../_support/concurrent_steps.ts";
import { ownRegion, pause, testClient } from "../_support/env.ts";
import { type LaggingStore, laggingStore, passUntil } from "../_support/lagging_store.ts";

/**
 * The cases below, run as steps of one test, four at once: each mostly waits for the index's lag
 * (tests/_support/concurrent_steps.ts), each on tables of its own.
 */
const test = concurrentTest(
  "the mixed fleet tried as a hostile user would: order, bounds and faults with another writer",
  4,
);
const REGION = ownRegion("hostile");
const LAG = 1500;
const prefixOf = (store: DynamoDBStore) => store.tables.executions.name.replace(/_executions$/, "");
const mixed = () => laggingStore(LAG, { otherWriters: true, region: REGION });

/** Another writer's entry to `target`, as the Python seed writes it; `pad` chars of data. */
async function theirs(
  lag: LaggingStore,
  target: string | null,
  pad: number | string = 0,
): Promise<number> {
  using client = testClient(REGION);
  const prefix = prefixOf(lag.store);
  const out = await client.send(
    new UpdateItemCommand({
      TableName: `${prefix}_counters`,
      Key: { id: { S: "outbox" } },
      UpdateExpression: "ADD n :k",
      ExpressionAttributeValues: { ":k": { N: "1" } },
      ReturnValues: "UPDATED_NEW",
    }),
  );
  const seq = Number(out.Attributes!.n!.N);
  const event = {
    id: crypto.randomUUID().replaceAll("-", ""),
    kind: "seed.emit",
    created_time: null,
    received_time: null,
    data: typeof pad === "string"
      ? { seq, pad }
      : pad > 0
      ? { seq, pad: "x".repeat(pad) }
      : { seq },
  };
  await client.send(
    new PutItemCommand({
      TableName: `${prefix}_outbox`,
      Item: {
        seq: { N: String(seq) },
        target_id: target === null ? { NULL: true } : { S: target },
        event: { S: JSON.stringify(event) },
      },
    }),
  );
  return seq;
}

/** Our entries to `targets`, one commit of a new execution in a fresh store. */
async function ours(lag: LaggingStore, targets: (string | null)[]): Promise<number[]> {
  return await lag.fresh(async (store) => {
    const { outbox } = await store.commit(newExecution({ definition_id: "ours" }), {
      emits: targets.map((target) => ({ target, event: newEvent("ours") })),
    });
    return outbox;
  });
}

type Deliver = (entry: OutboxEntry) => void | Promise<void>;

/** One pass in a fresh store; the seqs `deliver` took without throwing, in order. */
async function pass(
  lag: LaggingStore,
  options: Parameters<typeof relayOutbox>[2] = {},
  deliver: Deliver = () => {},
): Promise<number[]> {
  const out: number[] = [];
  await lag.fresh((store) =>
    relayOutbox(store, async (entry) => {
      await deliver(entry);
      out.push(entry.seq);
    }, { limit: 100, ...options })
  );
  return out;
}

/** Passes until every seq of `expected` went out (or the bound of passUntil). */
async function drain(
  lag: LaggingStore,
  delivered: number[],
  expected: number[],
  options: Parameters<typeof relayOutbox>[2] = {},
): Promise<number[]> {
  await passUntil(
    LAG,
    async () => delivered.push(...await pass(lag, options)),
    () => expected.every((seq) => delivered.includes(seq)),
  );
  return delivered;
}

/** `lane`'s seqs appear in `delivered` in seq order, each at least once, first sightings. */
function assertLane(delivered: number[], lane: number[], what: string) {
  const seen = [...new Set(delivered.filter((seq) => lane.includes(seq)))];
  assert.deepEqual(seen, [...lane].sort((a, b) => a - b), `${what} (delivered ${delivered})`);
}

/** Passes that fail `bad` (maxAttempts 1) until a fresh store's deadLetters lists it. */
async function deadLetter(lag: LaggingStore, bad: number, delivered: number[]) {
  const dead = await passUntil(
    LAG,
    async () =>
      delivered.push(
        ...await pass(lag, { maxAttempts: 1 }, (e) => {
          if (e.seq === bad) throw new Error("down");
        }),
      ),
    () => lag.fresh(async (s) => (await s.deadLetters("outbox")).some((d) => d.key === bad)),
  );
  assert.ok(dead, `${bad} dead-lettered`);
}

/**
 * Three passes deliver nothing of `lane` (`target`'s entries) while `p` is dead; after its retry,
 * the whole lane goes, in seq order.
 */
async function waitsUntilRetried(
  lag: LaggingStore,
  p: number,
  lane: number[],
  delivered: number[],
  target: string,
) {
  await pause(LAG + 300);
  for (let i = 0; i < 3; i++) delivered.push(...await pass(lag));
  assert.equal(
    delivered.length,
    0,
    `${target} waits behind the dead entry (delivered ${delivered})`,
  );
  assert.equal(await lag.fresh((s) => s.retryDeadLetter("outbox", p)), true);
  await drain(lag, delivered, lane);
  assertLane(delivered, lane, `${target}'s entries after the retry`);
}

for (const free of ["retryDeadLetter", "dropDeadLetter"] as const) {
  test(`a dead-lettered entry of theirs holds the target's later entries of ours until ${free}`, async () => {
    await using lag = await mixed();
    const p = await theirs(lag, "T");
    const delivered: number[] = [];
    await deadLetter(lag, p, delivered);
    const mine = await ours(lag, ["T", "T", "U"]);
    const u = mine[2]!;
    await drain(lag, delivered, [u]);
    await pause(LAG + 300);
    for (let i = 0; i < 3; i++) delivered.push(...await pass(lag));
    assert.ok(
      !delivered.includes(mine[0]!) && !delivered.includes(mine[1]!),
      `ours to T wait behind the dead entry (delivered ${delivered})`,
    );
    assert.equal(await lag.fresh((s) => s[free]("outbox", p)), true);
    const lane = free === "retryDeadLetter" ? [p, mine[0]!, mine[1]!] : [mine[0]!, mine[1]!];
    await drain(lag, delivered, lane);
    assertLane(delivered, lane, `T's entries after ${free}`);
    if (free === "dropDeadLetter") assert.ok(!delivered.includes(p), "the dropped one never went");
  });
}

test("a failing (retrying) entry of theirs holds ours to its target, and all go once it succeeds", async () => {
  await using lag = await mixed();
  const p = await theirs(lag, "T");
  const mine = await ours(lag, ["T"]);
  const q = await theirs(lag, "T");
  let failing = true;
  const attempts: number[] = [];
  const delivered: number[] = [];
  const deliver: Deliver = (e) => {
    attempts.push(e.seq);
    if (failing && e.seq === p) throw new Error("down");
  };
  const options = { backoff: { minSeconds: 0, maxSeconds: 0 } };
  await passUntil(
    LAG,
    async () => delivered.push(...await pass(lag, options, deliver)),
    () => attempts.filter((s) => s === p).length >= 3,
  );
  assert.equal(delivered.length, 0, `nothing of T goes while ${p} fails (attempts ${attempts})`);
  failing = false;
  await passUntil(
    LAG,
    async () => delivered.push(...await pass(lag, options, deliver)),
    () => [p, mine[0]!, q].every((s) => delivered.includes(s)),
  );
  assertLane(delivered, [p, mine[0]!, q], "T's entries once the first succeeds");
});

/** `before` of theirs, one of ours, `after` of theirs, to T; passes of `limit` between. */
async function longRun(before: number, after: number, limit: number, reorder = false) {
  await using lag = reorder
    ? await laggingStore({ lagMs: LAG, reorderStreams: true }, {
      otherWriters: true,
      region: REGION,
    })
    : await mixed();
  const lane: number[] = [];
  const delivered: number[] = [];
  const options = { limit };
  for (let i = 0; i < before; i++) lane.push(await theirs(lag, "T"));
  delivered.push(...await pass(lag, options));
  lane.push(...await ours(lag, ["T"]));
  for (let i = 0; i < after; i++) {
    lane.push(await theirs(lag, "T"));
    if (i % 7 === 6) delivered.push(...await pass(lag, options));
  }
  lane.push(...await ours(lag, ["T", "T"]));
  for (let i = 0; i < 3; i++) lane.push(await theirs(lag, "T"));
  await drain(lag, delivered, lane, options);
  assertLane(delivered, lane, `${lane.length} entries to T in seq order, all delivered`);
}

test("long runs of theirs around ours to one target (20, ours, 20 with limit 5; 40, ours, 40; the same with a stream that shows each page newest first): seq order, none stuck", async () => {
  await Promise.all([longRun(20, 20, 5), longRun(40, 40, 100), longRun(40, 40, 6, true)]);
});

/**
 * Ours delivered within the request (`seqs`) after a round saw a lower entry of theirs to the
 * same target, still pending; `between` more of theirs to T, above ours, seen before the delivery.
 */
async function withinRequest(between: number) {
  await using lag = await mixed();
  const p = await theirs(lag, "T");
  await lag.fresh((s) => s.pendingOutbox({ limit: 10 })); // a round sees p
  const delivered: number[] = [];
  const deliver: Deliver = (e) => void delivered.push(e.seq);
  const lane = [p];
  await lag.fresh(async (store) => {
    const { outbox } = await store.commit(newExecution({ definition_id: "ours" }), {
      emits: [{ target: "T", event: newEvent("ours") }],
    });
    lane.push(...outbox);
    for (let i = 0; i < between; i++) lane.push(await theirs(lag, "T"));
    if (between > 0) await lag.fresh((s) => s.pendingOutbox({ limit: 10 })); // a round sees them
    await relayOutbox(store, deliver, { seqs: outbox });
  });
  await passUntil(
    LAG,
    () => pass(lag, {}, deliver),
    () => lane.every((s) => delivered.includes(s)),
  );
  assertLane(delivered, lane, "T's entries, ours delivered within the request");
}

/**
 * A full pass, each in a fresh store: theirs `p` to T written, ours to T committed and shown by
 * the index, then `between` more of theirs to T; a read (`pendingOutbox`) runs the round that
 * adopts them all, and a pass at once, while the index shows ours but not theirs yet.
 */
async function fullPass(between: number, history = 0, T: string | null = "T") {
  await using lag = await mixed();
  if (history > 0) { // a busy target: `history` of theirs delivered before
    const old: number[] = [];
    for (let i = 0; i < history; i++) old.push(await theirs(lag, T));
    const done = await drain(lag, [], old);
    assertLane(done, old, "the earlier entries");
  }
  const p = await theirs(lag, T);
  const lane = [p, ...await ours(lag, [T])];
  await pause(LAG + 300); // ours in the index
  for (let i = 0; i < between; i++) lane.push(await theirs(lag, T));
  await lag.fresh((s) => s.pendingOutbox({ limit: 10 })); // a round adopts theirs
  const delivered = await pass(lag);
  await drain(lag, delivered, lane);
  assertLane(delivered, lane, `T's entries, ${between} of theirs above ours`);
}

test("a full pass while the index shows ours and not a lower entry of theirs a round adopted: 0, 31, 32 and 40 more of theirs above ours, and to target null (a broadcast) 20", async () => {
  await Promise.all([fullPass(0), fullPass(31), fullPass(32), fullPass(40), fullPass(20, 0, null)]);
});

test("a dead entry of theirs to target null holds ours to null until retried", async () => {
  await using lag = await mixed();
  const p = await theirs(lag, null);
  const delivered: number[] = [];
  await deadLetter(lag, p, delivered);
  const lane = [p, ...await ours(lag, [null, null]), await theirs(lag, null)];
  await waitsUntilRetried(lag, p, lane, delivered, "null");
});

test("the same on a busy target (16 of theirs delivered before), 16 more of theirs above ours", async () => {
  await fullPass(16, 16);
});

test("ours delivered within the request wait for a lower entry of theirs a round saw: 0, 31, 32 and 40 more of theirs seen above", async () => {
  await Promise.all([withinRequest(0), withinRequest(31), withinRequest(32), withinRequest(40)]);
});

test("ours of another execution delivered within the request wait for a lower entry of ours a round saw, still pending", async () => {
  // A longer lag: e stays out of the index for the whole of its steps, on a busy machine too.
  const lagMs = 5000;
  await using lag = await laggingStore(lagMs, { otherWriters: true, region: REGION });
  const p = await theirs(lag, "T");
  await lag.fresh((s) => s.pendingOutbox({ limit: 10 })); // a round adopts p
  await pause(lagMs + 300); // p in the index
  const delivered: number[] = [];
  const deliver: Deliver = (e) => void delivered.push(e.seq);
  // e: ours, delivered within its request, waits behind p.
  const lane = [p, ...await ours(lag, ["T"])];
  await lag.fresh((store) => relayOutbox(store, deliver, { seqs: [lane[1]!] }));
  assert.equal(delivered.length, 0, "e waits for p");
  // A pass while the index shows p and not e yet: its round sees e, and p goes out.
  delivered.push(...await pass(lag));
  assert.deepEqual(delivered, [p], "p goes, e is not in the index yet");
  // f: ours, of another execution, delivered within its request while e is pending.
  const [f] = await ours(lag, ["T"]);
  lane.push(f!);
  await lag.fresh((store) => relayOutbox(store, deliver, { seqs: [f!] }));
  assert.deepEqual(delivered, [p], "f waits for e");
  await drain(lag, delivered, lane);
  assertLane(delivered, lane, "T's entries");
});

test("an entry of theirs with an event over 3,000 characters between small ones: seq order, intact", async () => {
  await using lag = await mixed();
  const lane: number[] = [];
  const events = new Map<number, OutboxEntry["event"]>();
  const delivered: number[] = [];
  const deliver: Deliver = (e) => void events.set(e.seq, e.event);
  lane.push(await theirs(lag, "T"));
  lane.push(...await ours(lag, ["T"]));
  const big = await theirs(lag, "T", 5000);
  lane.push(big);
  lane.push(await theirs(lag, "T"));
  lane.push(...await ours(lag, ["T"]));
  const big2 = await theirs(lag, "T", 3001);
  lane.push(big2, await theirs(lag, "T"));
  await passUntil(
    LAG,
    async () => delivered.push(...await pass(lag, { limit: 100 }, deliver)),
    () => lane.every((s) => delivered.includes(s)),
  );
  assertLane(delivered, lane, "T's entries");
  assert.equal((events.get(big)!.data as { pad: string }).pad.length, 5000);
  assert.equal((events.get(big2)!.data as { pad: string }).pad.length, 3001);
});

/** The text of an event of theirs whose JSON is exactly `length` characters, its pad `char`s. */
function padTo(length: number, seq: number, char = "x"): string {
  const bare = JSON.stringify({
    id: "0".repeat(32),
    kind: "seed.emit",
    created_time: null,
    received_time: null,
    data: { seq, pad: "" },
  }).length;
  return char.repeat(length - bare);
}

test("events of theirs at 2,999 to 3,001 characters, and 2,900 of CJK and emoji (over 8 KB): order, intact", async () => {
  await using lag = await mixed();
  const lane: number[] = [];
  const pads = new Map<number, string>();
  const events = new Map<number, OutboxEntry["event"]>();
  const delivered: number[] = [];
  const deliver: Deliver = (e) => void events.set(e.seq, e.event);
  // seqs of theirs rise by one from the counter's next value: the pad fits the seq's digits
  for (
    const [length, char] of [[2999, "x"], [3000, "x"], [3001, "x"], [2900, "語"], [
      1450,
      "🙂",
    ]] as const
  ) {
    lane.push(...await ours(lag, ["T"]));
    const next = lane.length === 1 ? 1001 : lane.at(-2)! + 1; // after our block of 1,000
    const pad = padTo(length, next, char);
    const seq = await theirs(lag, "T", pad);
    pads.set(seq, pad);
    lane.push(seq);
  }
  await passUntil(
    LAG,
    async () => delivered.push(...await pass(lag, { limit: 100 }, deliver)),
    () => lane.every((s) => delivered.includes(s)),
  );
  assertLane(delivered, lane, "T's entries");
  for (const [seq, pad] of pads) {
    assert.equal((events.get(seq)!.data as { pad: string }).pad, pad, `${seq}'s event intact`);
  }
});

test("maxAttempts 3, a callback that always throws on entries of theirs: exactly 3 attempts each", async () => {
  await using lag = await mixed();
  const bad = [await theirs(lag, "A"), await theirs(lag, "B"), await theirs(lag, "A", 4000)];
  const attempts = new Map<number, number>();
  const firstPass = new Map<number, number>(); // the pass of each entry's first attempt
  let passes = 0;
  const deliver: Deliver = (e) => {
    attempts.set(e.seq, (attempts.get(e.seq) ?? 0) + 1);
    if (!firstPass.has(e.seq)) firstPass.set(e.seq, passes);
    throw new Error("down");
  };
  const options = { maxAttempts: 3, backoff: { minSeconds: 0, maxSeconds: 0 } };
  const dead = () =>
    lag.fresh(async (s) => (await s.deadLetters("outbox")).map((d) => d.key as number));
  await passUntil(
    LAG,
    async () => {
      await pass(lag, options, deliver);
      passes++;
    },
    async () => (await dead()).length >= 2,
  );
  assert.deepEqual(
    [firstPass.get(bad[0]!), firstPass.get(bad[1]!)],
    [0, 0],
    "tried in the pass whose round adopted them",
  );
  // The first entry to A dies after 3 attempts; the second to A waits behind it: never tried.
  for (let i = 0; i < 3; i++) await pass(lag, options, deliver);
  await pause(LAG + 300);
  for (let i = 0; i < 2; i++) await pass(lag, options, deliver);
  assert.deepEqual(
    [attempts.get(bad[0]!), attempts.get(bad[1]!), attempts.get(bad[2]!) ?? 0],
    [3, 3, 0],
    `attempts ${JSON.stringify([...attempts])}`,
  );
  assert.deepEqual((await dead()).sort((a, b) => a - b), [bad[0], bad[1]]);
});

test("two relays at once in a mixed fleet: each entry once, seq order per target", async () => {
  await using lag = await mixed();
  const lanes = new Map<string, number[]>();
  const add = (t: string, seqs: number[]) => lanes.set(t, [...lanes.get(t) ?? [], ...seqs]);
  const delivered: number[] = [];
  const inFlight = new Set<string>();
  const overlaps: string[] = [];
  const deliver: Deliver = async (e) => {
    if (inFlight.has(e.targetId!)) overlaps.push(`${e.targetId}@${e.seq}`);
    inFlight.add(e.targetId!);
    await pause(5);
    inFlight.delete(e.targetId!);
    delivered.push(e.seq);
  };
  const relays = async () => {
    await Promise.all([0, 1].map(() => pass(lag, { limit: 7 }, deliver)));
  };
  for (let round = 0; round < 4; round++) {
    for (const t of ["T1", "T2", "T3"]) {
      add(t, [await theirs(lag, t)]);
      add(t, await ours(lag, [t]));
      add(t, [await theirs(lag, t)]);
    }
    await relays();
  }
  const all = [...lanes.values()].flat();
  await passUntil(LAG, relays, () => all.every((s) => delivered.includes(s)));
  for (const [t, lane] of lanes) assertLane(delivered, lane, `target ${t}`);
  assert.equal(delivered.length, new Set(delivered).size, `each once (delivered ${delivered})`);
  assert.deepEqual(overlaps, [], "one in flight per target");
});

test("a dead entry of theirs, 40 more of theirs and ours to its target: all wait, then go in order on retry", async () => {
  await using lag = await mixed();
  const p = await theirs(lag, "T");
  const delivered: number[] = [];
  await deadLetter(lag, p, delivered);
  const lane = [p];
  for (let i = 0; i < 20; i++) lane.push(await theirs(lag, "T"));
  lane.push(...await ours(lag, ["T"]));
  for (let i = 0; i < 20; i++) lane.push(await theirs(lag, "T"));
  await waitsUntilRetried(lag, p, lane, delivered, "T");
});

test("a mixed fleet at once: their commits (some events over 3,000 characters), ours delivered within the request, reads, two relays", async () => {
  await using lag = await mixed();
  const lanes = new Map<string, number[]>();
  const add = (t: string, seqs: number[]) => lanes.set(t, [...lanes.get(t) ?? [], ...seqs]);
  const delivered: number[] = [];
  const deliver: Deliver = async (e) => {
    await pause(2);
    delivered.push(e.seq);
  };
  const targets = ["T1", "T2", "T3"];
  let running = true;
  const relays = (async () => {
    while (running) {
      await Promise.all([
        pass(lag, { limit: 5 }, deliver),
        pass(lag, { limit: 50 }, deliver),
        lag.fresh((s) => s.pendingOutbox({ limit: 20 })),
      ]);
      await pause(100);
    }
  })();
  try {
    for (let round = 0; round < 12; round++) {
      for (const t of targets) {
        add(t, [await theirs(lag, t, round % 3 === 0 ? 3500 : 0)]);
        if (round % 2 === 0) add(t, [await theirs(lag, t)]);
      }
      await lag.fresh(async (store) => {
        const { outbox } = await store.commit(newExecution({ definition_id: "ours" }), {
          emits: targets.map((target) => ({ target, event: newEvent("ours") })),
        });
        targets.forEach((t, i) => add(t, [outbox[i]!]));
        await relayOutbox(store, deliver, { seqs: outbox });
      });
      await pause(150);
    }
  } finally {
    running = false;
    await relays;
  }
  const all = [...lanes.values()].flat();
  await passUntil(LAG, () => pass(lag, {}, deliver), () => all.every((s) => delivered.includes(s)));
  for (const [t, lane] of lanes) assertLane(delivered, lane, `target ${t}`);
  const twice = delivered.filter((s, i) => delivered.indexOf(s) !== i);
  assert.deepEqual(twice, [], `each once (delivered ${delivered})`);
});
