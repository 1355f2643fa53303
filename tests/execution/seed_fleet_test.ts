// A mixed fleet at size: rows committed with the seed's algorithm (Python and boto3,
// tests/_support/seed_writer.py) into tables that already hold thousands of parked rows of ours
// (dead-lettered, waiting for a retry, held behind those). Every read and every pass sees the
// seed's rows — outbox entries and spawns found by the seqs they took from the shared counter,
// timers by the sweep's page of the timers table — and what a pass reads follows the rows it
// found, not the rows parked beside them. The parked rows are parked by the module's own commits
// and passes before the tables have streams (tests/_support/parked_rows.ts: streamed writes are
// about 10 times slower on DynamoDB Local).
import assert from "node:assert/strict";
import { type Backlog, DynamoDBStore, relayOutbox, relaySpawns, sweepTimers } from "../../mod.ts";
import { endpoint, testClient } from "../_support/env.ts";
import { parkedMixedTables } from "../_support/parked_rows.ts";
import { seedWrite, type SeedWrites } from "../_support/seed_writer.ts";

const bySeq = (a: number, b: number) => a - b;

/** What the seed commits: 10 executions, each one commit of 30 emits, 3 spawns and 3 due timers. */
const SEED = { executions: 10, emits: 30, spawns: 3, timers: 3 };
const SEED_OUTBOX = SEED.executions * SEED.emits;
const SEED_SPAWNS = SEED.executions * SEED.spawns;
const SEED_TIMERS = SEED.executions * SEED.timers;
/** The seed's events were created an hour ago: the relay's lag can only come from them. */
const CREATED_AGO = 3600;

/** Read units and calls of one operation, with the calls by command. */
interface Cost {
  reads: number;
  calls: number;
  commands: Record<string, number>;
}

/** A store on the tables of `prefix` whose client sums the read units and counts the calls. */
function measured(prefix: string) {
  const client = testClient();
  let cost: Cost = { reads: 0, calls: 0, commands: {} };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as Record<string, unknown>).ReturnConsumedCapacity = "TOTAL";
      const result = await next(args);
      const name = (context.commandName as string).replace(/Command$/, "");
      const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      if (/^(Query|Scan|GetItem|BatchGetItem)$/.test(name)) {
        for (const each of [consumed ?? []].flat() as { CapacityUnits?: number }[]) {
          cost.reads += each.CapacityUnits ?? 0;
        }
      }
      cost.calls++;
      cost.commands[name] = (cost.commands[name] ?? 0) + 1;
      return result;
    },
    { step: "initialize", name: "measure" },
  );
  // A store of the mixed fleet: it finds the seed's rows (the status feed's round runs beside
  // passes; its cost: status_feed_test.ts).
  const view = new DynamoDBStore(client, { prefix, otherWriters: true });
  /** Runs `op` and answers what it returned and what it cost. */
  const measure = async <T>(op: () => Promise<T>): Promise<{ value: T; cost: Cost }> => {
    cost = { reads: 0, calls: 0, commands: {} };
    const value = await op();
    return { value, cost: structuredClone(cost) }; // what later calls add is not its
  };
  return { view, measure, [Symbol.dispose]: () => client.destroy() };
}

/** What the figures of one size are. */
interface Figures {
  parked: number;
  backlogs: { outbox: Backlog; spawns: Backlog; seedCreatedAt: number };
  setupSeconds: number;
  empty: { outbox: Cost; spawns: Cost; timers: Cost };
  reads: Record<string, Cost>;
  passes: { outbox: Cost; spawns: Cost; timers: Cost };
}

/**
 * The fleet at `parked` rows of ours: the seed's commits on top, every read and pass checked to
 * see them, and what each cost.
 */
async function fleet(parked: number): Promise<Figures> {
  const started = Date.now();
  const prefix = await parkedMixedTables(parked);
  const setupSeconds = (Date.now() - started) / 1000;
  using m = measured(prefix);
  // What a pass reads when nothing is due, before the seed writes (the parked rows' share).
  const empty = {
    outbox: (await m.measure(() => relayOutbox(m.view, () => Promise.resolve()))).cost,
    spawns: (await m.measure(() => relaySpawns(m.view, () => Promise.resolve()))).cost,
    timers: (await m.measure(() => sweepTimers(m.view, () => Promise.resolve()))).cost,
  };

  const wrote: SeedWrites = await seedWrite({
    endpoint: endpoint(),
    prefix,
    ...SEED,
    commits: 1,
    createdAgoSeconds: CREATED_AGO,
    fireInSeconds: -60, // due a minute ago (plus k seconds)
  });
  const seedSeqs = wrote.outbox.map((o) => o.seq).sort(bySeq);
  const spawnSeqs = wrote.spawns.map((s) => s.seq).sort(bySeq);
  const timerKeys = wrote.timers.map((t) => `${t.executionId} ${t.path} ${t.fireAt}`).sort();
  assert.equal(seedSeqs.length, SEED_OUTBOX);
  assert.equal(spawnSeqs.length, SEED_SPAWNS);
  assert.equal(timerKeys.length, SEED_TIMERS);

  const reads: Record<string, Cost> = {};
  const lowest = await m.measure(() => m.view.pendingOutbox({ limit: 40 }));
  reads["pendingOutbox(40)"] = lowest.cost;
  assert.deepEqual(lowest.value.map((e) => e.seq), seedSeqs.slice(0, 40));
  const all = await m.measure(() => m.view.pendingOutbox({ limit: Infinity }));
  reads["pendingOutbox(Infinity)"] = all.cost;
  assert.deepEqual(
    all.value.map((e) => [e.seq, e.targetId, e.event.id]),
    [...wrote.outbox].sort((a, b) => a.seq - b.seq).map((o) => [o.seq, o.targetId, o.eventId]),
  );
  const spawns = await m.measure(() => m.view.pendingSpawns());
  reads["pendingSpawns()"] = spawns.cost;
  assert.deepEqual(
    spawns.value.map((s) => [s.seq, s.childId]),
    [...wrote.spawns].sort((a, b) => a.seq - b.seq).map((s) => [s.seq, s.childId]),
  );
  // What backlog says is asserted by its own test below (so that the passes still run).
  const backlog = await m.measure(() => m.view.backlog("outbox"));
  reads['backlog("outbox")'] = backlog.cost;
  const spawnBacklog = await m.measure(() => m.view.backlog("spawns"));
  reads['backlog("spawns")'] = spawnBacklog.cost;
  const backlogs = {
    outbox: backlog.value,
    spawns: spawnBacklog.value,
    seedCreatedAt: Date.now() / 1000 - CREATED_AGO,
  };
  const now = Date.now() / 1000;
  const due = await m.measure(() => m.view.dueTimers(now, { scan: true, limit: Infinity }));
  reads["dueTimers(now, { scan: true })"] = due.cost;
  assert.deepEqual(
    due.value.map((t) => `${t.executionId} ${t.path} ${t.fireAt}`).sort(),
    timerKeys,
  );

  // One pass of each delivers all of the seed's rows; the outbox's in seq order per target.
  const delivered: { seq: number; targetId: string | null }[] = [];
  const outboxPass = await m.measure(() =>
    relayOutbox(m.view, (entry) => {
      delivered.push({ seq: entry.seq, targetId: entry.targetId });
      return Promise.resolve();
    }, { limit: 1000 })
  );
  assert.deepEqual(
    [outboxPass.value.delivered, outboxPass.value.failed, outboxPass.value.setAside],
    [SEED_OUTBOX, 0, 0],
  );
  assert.deepEqual(delivered.map((d) => d.seq).sort(bySeq), seedSeqs);
  const perTarget = (rows: { seq: number; targetId: string | null }[]) => {
    const lanes = new Map<string, number[]>();
    for (const row of rows) {
      const key = JSON.stringify(row.targetId);
      lanes.set(key, [...lanes.get(key) ?? [], row.seq]);
    }
    return lanes;
  };
  const expectedLanes = perTarget([...wrote.outbox].sort((a, b) => a.seq - b.seq));
  assert.equal(expectedLanes.size, SEED.emits / 2 + 1); // 15 targets and the outside world
  for (const [target, seqs] of perTarget(delivered)) {
    assert.deepEqual(seqs, expectedLanes.get(target), `target ${target}: in seq order`);
  }
  const lag = outboxPass.value.lagSeconds;
  const maxLag = CREATED_AGO + (Date.now() - started) / 1000 + 60;
  assert.ok(
    lag !== null && lag >= CREATED_AGO - 5 && lag <= maxLag,
    `lagSeconds ${lag}: from the seed's created_time, an hour ago`,
  );

  const children: string[] = [];
  const spawnPass = await m.measure(() =>
    relaySpawns(m.view, (spawn) => Promise.resolve(void children.push(spawn.childId)))
  );
  assert.equal(spawnPass.value.delivered, SEED_SPAWNS);
  assert.deepEqual(children.sort(), wrote.spawns.map((s) => s.childId).sort());

  const fired: string[] = [];
  const sweep = await m.measure(() =>
    sweepTimers(
      m.view,
      (t) => Promise.resolve(void fired.push(`${t.executionId} ${t.path} ${t.fireAt}`)),
    )
  );
  assert.equal(sweep.value.delivered, SEED_TIMERS);
  assert.deepEqual(fired.sort(), timerKeys);

  // Nothing of the seed's is left, and nothing of ours moved.
  assert.deepEqual(await m.view.pendingOutbox({ limit: Infinity }), []);
  assert.deepEqual(await m.view.pendingSpawns(), []);
  assert.deepEqual(await m.view.dueTimers(Date.now() / 1000, { scan: true }), []);
  const after = await m.view.backlog("outbox", { limit: 10_000 });
  assert.equal(after.pending, 0, JSON.stringify(after));

  const figures: Figures = {
    parked,
    backlogs,
    setupSeconds,
    empty,
    reads,
    passes: { outbox: outboxPass.cost, spawns: spawnPass.cost, timers: sweep.cost },
  };
  console.log(`seed fleet at ${parked} parked rows of ours:`, JSON.stringify(figures));
  return figures;
}

/** Each size's fleet, built once for the tests that need it. */
const fleets = new Map<number, Promise<Figures>>();
const at = (parked: number) => {
  if (!fleets.has(parked)) fleets.set(parked, fleet(parked));
  return fleets.get(parked)!;
};

Deno.test("every read and pass sees what the seed's algorithm commits beside 6,000 parked rows of ours", async () => {
  // fleet() checks that every read and pass sees the seed's rows (its asserts); how long the
  // setup took is logged, not asserted: a wall-time bound fails on a crowded machine.
  const figures = await at(6000);
  assert.equal(figures.parked, 6000);
  console.log(`the seed fleet's setup at 6,000 parked rows took ${figures.setupSeconds} s`);
});

Deno.test("backlog counts the seed's outbox entries and spawns beside 6,000 parked rows of ours", async () => {
  const { outbox, spawns } = (await at(6000)).backlogs;
  // Ours: 100 dead heads, 100 waiting, 200 targets held; none pending.
  assert.deepEqual([outbox.waiting, outbox.dead, outbox.heldTargets], [100, 100, 200]);
  assert.deepEqual([spawns.waiting, spawns.dead], [500, 500]);
  assert.ok(outbox.pending >= SEED_OUTBOX, `outbox: ${JSON.stringify(outbox)}`);
  assert.ok(spawns.pending >= SEED_SPAWNS, `spawns: ${JSON.stringify(spawns)}`);
});

Deno.test("backlog ages the seed's outbox entries by their event's created_time, as a relay pass's lag does", async () => {
  const { outbox, seedCreatedAt } = (await at(6000)).backlogs;
  assert.ok(
    outbox.oldestAt !== null && Math.abs(outbox.oldestAt - seedCreatedAt) < 60,
    `oldestAt ${outbox.oldestAt}: the seed's created_time is about ${seedCreatedAt}`,
  );
});

Deno.test("what a pass over the seed's rows reads follows the rows it found, not the 300, 3,000 or 6,000 parked rows beside them", async () => {
  const sizes = await Promise.all([at(300), at(3000), at(6000)]);
  const [small] = sizes;
  console.log(
    "read units / calls per pass at 300, 3,000, 6,000 parked:",
    JSON.stringify(
      Object.fromEntries(
        (["outbox", "spawns", "timers"] as const).map((kind) => [
          kind,
          sizes.map((f) => ({
            parked: f.parked,
            pass: [f.passes[kind].reads, f.passes[kind].calls],
            empty: [f.empty[kind].reads, f.empty[kind].calls],
          })),
        ]),
      ),
    ),
  );
  for (const large of sizes.slice(1)) {
    for (const kind of ["outbox", "spawns"] as const) {
      for (const what of ["passes", "empty"] as const) {
        const [s, l] = [small![what][kind], large[what][kind]];
        assert.ok(
          l.reads <= 2 * s.reads + 4,
          `${kind} ${what}: ${l.reads} read units at ${large.parked} vs ${s.reads} at 300`,
        );
        assert.ok(
          l.calls <= 2 * s.calls + 2,
          `${kind} ${what}: ${l.calls} calls at ${large.parked} vs ${s.calls} at 300`,
        );
      }
    }
    for (const [name, s] of Object.entries(small!.reads)) {
      if (name.startsWith("dueTimers")) continue; // a scan of the timers table, by its nature
      const l = large.reads[name]!;
      // A backlog confirms each row it counts by key (no index ghost is counted), up to its
      // limit (1,000 a count): its reads follow what it counts, capped, never the table.
      const cap = name.startsWith("backlog") ? 1000 : 4;
      assert.ok(
        l.reads <= 2 * s.reads + cap,
        `${name}: ${l.reads} read units at ${large.parked} vs ${s.reads} at 300`,
      );
    }
    // A sweep reads one page of the timers table: at most a 1 MB page's 128 read units more.
    const [s, l] = [small!.passes.timers, large.passes.timers];
    assert.ok(l.reads <= 2 * s.reads + 128, `timers: ${l.reads} vs ${s.reads}`);
  }
  // The outbox and spawn passes read what they found, a few read units a row: its seq probed by
  // key (1) and its body (1); not the parked rows.
  for (const f of sizes) {
    const outbox = f.passes.outbox.reads, spawns = f.passes.spawns.reads;
    assert.ok(
      outbox >= SEED_OUTBOX && outbox <= 4 * SEED_OUTBOX + 60,
      `outbox pass at ${f.parked}: ${outbox} read units for ${SEED_OUTBOX} found rows`,
    );
    assert.ok(
      spawns >= SEED_SPAWNS && spawns <= 4 * SEED_SPAWNS + 60,
      `spawn pass at ${f.parked}: ${spawns} read units for ${SEED_SPAWNS} found rows`,
    );
  }
});
