// A model-based property test of DynamoDBStore in a mixed fleet: random sequences of commits
// (emits, spawns, timers scheduled and cancelled, dedupe marks, trace steps, bad input), loads,
// acks, deleteTimer and appendTrace, run on DynamoDB Local by two stores with different
// traceMax and a writer using the Python seed's trace algorithm, checked after every step
// against MemoryStore (the model; the trace against the seed's ring rule, per writer), refusals
// included.
//
// A fixed seed and a bounded number of runs by default: 20 sequences (350 steps, each checked
// with about 30 calls, sent at once: one round trip's wait a check). It was the suite's last file
// by minutes at 60 (17 min on a crowded machine, 4 min at 20): its calls waited behind every other
// file's on the shared database, so it runs in a database of its own. The full size, and more:
//   HAREL_PROPERTY_FULL=1 deno test -A tests/execution/execution_store_property_test.ts  (60)
//   HAREL_PROPERTY_RUNS=500 ...                   (and HAREL_PROPERTY_SEED=n for another seed)
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type CommitChanges,
  DynamoDBStore,
  type Execution,
  type ExecutionStore,
  newExecution,
} from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { freshStore, ownRegion, testClient } from "../_support/env.ts";
import { seedAppendTrace } from "../_support/seed.ts";

const RUNS = Number(
  Deno.env.get("HAREL_PROPERTY_RUNS") ?? (Deno.env.get("HAREL_PROPERTY_FULL") ? 60 : 20),
);
const SEED = Number(Deno.env.get("HAREL_PROPERTY_SEED") ?? 20261130);
const TRACE_MAX = [3, 5, 2]; // store A, store B, the seed writer
const MS = 1_764_000_000_000; // a time in milliseconds: must be refused everywhere
const FIRE_AT = [10, 20, 30, 1.5, MS];

const slot = fc.integer({ min: 0, max: 1 });
const actor = fc.integer({ min: 0, max: 1 });
const op = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      type: fc.constant("commit" as const),
      actor,
      slot,
      stale: fc.boolean(),
      emits: fc.integer({ min: 0, max: 2 }),
      spawn: fc.boolean(),
      timers: fc.array(
        fc.record({
          path: fc.constantFrom("p0", "p1"),
          cancel: fc.boolean(),
          fireAt: fc.constantFrom(...FIRE_AT),
        }),
        { maxLength: 3 },
      ),
      dedupe: fc.option(fc.constantFrom("e0", "e1", "e2"), { nil: undefined }),
      trace: fc.boolean(),
      bad: fc.constantFrom(undefined, undefined, undefined, "map", "status", "set"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant("load" as const), actor, slot }) },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constant("loadForEvent" as const),
      actor,
      slot,
      event: fc.constantFrom("e0", "e1", "e2"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constant("ack" as const),
      spawns: fc.boolean(),
      count: fc.integer({ min: 0, max: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constant("deleteTimer" as const),
      actor,
      slot,
      path: fc.constantFrom("p0", "p1"),
      fireAt: fc.constantFrom(...FIRE_AT),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constant("dueTimers" as const),
      actor,
      now: fc.constantFrom(15, 25, 100, MS),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.constant("appendTrace" as const),
      writer: fc.integer({ min: 0, max: 2 }),
      slot,
      at: fc.option(fc.integer({ min: -2, max: 2 }), { nil: undefined, freq: 5 }),
      bad: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    }),
  },
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

/** What a call did: its value, or the name of the error it threw. */
async function outcome<T>(call: () => Promise<T>): Promise<{ ok: T } | { error: string }> {
  try {
    return { ok: await call() };
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    return { error: (error as Error).name };
  }
}

Deno.test("DynamoDBStore in a mixed fleet agrees step by step with MemoryStore (property)", async () => {
  // A database of its own (see ownRegion): its ~10,000 sequential calls do not each wait behind
  // other files' work on the shared database's one SQLite thread.
  const region = ownRegion("prop");
  const a = await freshStore({ traceMax: TRACE_MAX[0], region });
  const prefix = a.tables.executions.name.replace(/_executions$/, "");
  const client = testClient(region);
  let run = 0, steps = 0;
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 40 }), async (ops) => {
        const tag = `r${run++}-${crypto.randomUUID().slice(0, 8)}`;
        // Fresh stores each run (no cached trace ends), on the same tables.
        const stores: DynamoDBStore[] = [
          new DynamoDBStore(client, { prefix, traceMax: TRACE_MAX[0] }),
          new DynamoDBStore(client, { prefix, traceMax: TRACE_MAX[1] }),
        ];
        const model = new MemoryStore({ traceMax: 0 });
        const rings = new Map<string, Map<number, string>>(); // the trace model, per id
        const ids = [`${tag}-s0`, `${tag}-s1`];
        const mine = (id: string) => id.startsWith(`${tag}-`);
        const appendModel = (id: string, entry: string, traceMax: number, at?: number) => {
          const ring = rings.get(id) ?? new Map<number, string>();
          rings.set(id, ring);
          const index = at ?? Math.max(-1, ...ring.keys()) + 1;
          ring.set(index, entry);
          if (traceMax > 0) ring.delete(index - traceMax);
          return index;
        };
        // Every read of a check at once (they change nothing), then the same assertions in the
        // same order: one round trip's wait instead of a dozen, in a suite that shares DynamoDB.
        const check = async (store: ExecutionStore, where: string) => {
          const events = async (s: ExecutionStore) =>
            (await s.pendingOutbox()).filter((e) => e.event.data.tag === tag).map((e) =>
              e.event.id
            );
          const spawns = async (s: ExecutionStore) =>
            (await s.pendingSpawns()).filter((x) => mine(x.parentId)).map((x) => x.childId)
              .toSorted();
          const timers = async (s: ExecutionStore) =>
            (await s.dueTimers(253402300799)).filter((x) => mine(x.executionId));
          const read = (s: ExecutionStore) =>
            Promise.all([
              Promise.all(ids.map((id) => Promise.all([s.load(id), s.readTrace(id)]))),
              events(s),
              spawns(s),
              timers(s),
            ]);
          const [[docs, got, spawned, due], [modelDocs, modelEvents, modelSpawned, modelDue]] =
            await Promise.all([read(store), read(model)]);
          for (const [i, id] of ids.entries()) {
            assert.deepEqual(docs[i]![0], modelDocs[i]![0], `${where}: load ${id}`);
            const ring = [...(rings.get(id) ?? new Map<number, string>())]
              .sort(([x], [y]) => x - y)
              .map(([index, entry]) => ({ ...JSON.parse(entry), index }));
            assert.deepEqual(docs[i]![1], ring, `${where}: trace of ${id}`);
          }
          // Per execution, the outbox keeps commit order (seq order) whichever store wrote it.
          for (const id of ids) {
            const order = got.filter((e) => e.startsWith(id)).map((e) => Number(e.split(":")[1]));
            assert.deepEqual(order, order.toSorted((x, y) => x - y), `${where}: outbox order`);
          }
          assert.deepEqual(got.toSorted(), modelEvents.toSorted(), `${where}: outbox`);
          assert.deepEqual(spawned, modelSpawned, `${where}: spawns`);
          assert.deepEqual(due, modelDue, `${where}: timers`);
        };

        for (const [step, o] of (ops as Op[]).entries()) {
          const where = `step ${step} ${JSON.stringify(o)}`;
          if (o.type === "commit") {
            const id = ids[o.slot]!;
            const current = (await model.load(id)) ??
              newExecution({ id, definition_id: "prop", root_path: "r" });
            if (o.stale && current.version > 0) current.version -= 1;
            current.context = { step };
            const doc: Record<string, unknown> = current;
            if (o.bad === "map") doc.context = { tags: new Map([["a", 1]]) };
            if (o.bad === "status") doc.status = "bogus";
            const changes: CommitChanges = {
              emits: Array.from({ length: o.emits }, (_, i) => ({
                target: i === 0 ? null : "t",
                event: {
                  id: `${id}:${step}:${i}`,
                  kind: "e",
                  data: o.bad === "set" ? { tag, s: new Set([1]) } : { tag },
                },
              })),
              spawns: o.spawn ? [{ childId: `${id}-c${step}`, rootPath: "r", context: {} }] : [],
              timers: o.timers.map((t) =>
                t.cancel
                  ? { action: "cancel" as const, path: t.path }
                  : { action: "schedule" as const, path: t.path, fireAt: t.fireAt }
              ),
              processedEventId: o.dedupe,
              trace: o.trace ? { step, by: o.actor } : undefined,
            };
            const mirror = structuredClone(doc) as Execution;
            const expected = await outcome(() => model.commit(mirror, changes));
            const got = await outcome(() => stores[o.actor]!.commit(doc as Execution, changes));
            const shape = (r: typeof got) =>
              "ok" in r
                ? { version: r.ok.version, outbox: r.ok.outbox.length, spawns: r.ok.spawns.length }
                : r;
            assert.deepEqual(shape(got), shape(expected), where);
            assert.equal(doc.version, mirror.version, where);
            if ("ok" in got && o.trace) {
              appendModel(id, JSON.stringify({ step, by: o.actor }), TRACE_MAX[o.actor]!);
            }
          } else if (o.type === "load") {
            assert.deepEqual(
              await stores[o.actor]!.load(ids[o.slot]!),
              await model.load(ids[o.slot]!),
              where,
            );
          } else if (o.type === "loadForEvent") {
            const id = ids[o.slot]!;
            assert.deepEqual(
              await stores[o.actor]!.loadForEvent(id, o.event),
              await model.loadForEvent(id, o.event),
              where,
            );
          } else if (o.type === "ack") {
            const store = stores[0]!;
            if (o.spawns) {
              const pick = (await model.pendingSpawns()).slice(0, o.count).map((s) => s.childId);
              const seqs = async (s: ExecutionStore) =>
                (await s.pendingSpawns()).filter((x) => pick.includes(x.childId)).map((x) => x.seq);
              await model.ackSpawn(await seqs(model));
              await store.ackSpawn(await seqs(store));
            } else {
              const pick = (await model.pendingOutbox()).slice(0, o.count).map((e) => e.event.id);
              const seqs = async (s: ExecutionStore) =>
                (await s.pendingOutbox()).filter((e) => pick.includes(e.event.id)).map((e) =>
                  e.seq
                );
              await model.ackOutbox(await seqs(model));
              await store.ackOutbox(await seqs(store));
            }
          } else if (o.type === "deleteTimer") {
            const id = ids[o.slot]!;
            assert.deepEqual(
              await outcome(() => stores[o.actor]!.deleteTimer(id, o.path, o.fireAt)),
              await outcome(() => model.deleteTimer(id, o.path, o.fireAt)),
              where,
            );
          } else if (o.type === "dueTimers") {
            const due = async (s: ExecutionStore) => {
              const r = await outcome(() => s.dueTimers(o.now));
              return "ok" in r ? { ok: r.ok.filter((x) => mine(x.executionId)) } : r;
            };
            assert.deepEqual(await due(stores[o.actor]!), await due(model), where);
          } else {
            const id = ids[o.slot]!;
            const ring = rings.get(id) ?? new Map<number, string>();
            const entry: Record<string, unknown> = { step, by: `w${o.writer}` };
            if (o.at !== undefined && o.writer < 2) {
              entry.index = Math.max(0, Math.max(-1, ...ring.keys()) + 1 + o.at);
            }
            if (o.bad && o.writer < 2) {
              entry.s = new Set();
              assert.deepEqual(
                await outcome(() => stores[o.writer]!.appendTrace(id, entry)),
                await outcome(() => model.appendTrace(id, entry)),
                where,
              );
              continue;
            }
            if (o.writer === 2) {
              await seedAppendTrace(client, stores[0]!.tables.trace.name, id, entry, TRACE_MAX[2]!);
            } else await stores[o.writer]!.appendTrace(id, entry);
            appendModel(id, JSON.stringify(entry), TRACE_MAX[o.writer]!, entry.index as number);
          }
          await check(stores[step % 2]!, where);
          steps++;
        }
        // Leave the shared relay tables as we found them.
        await stores[0]!.ackOutbox(
          (await stores[0]!.pendingOutbox()).filter((e) => e.event.data.tag === tag).map((e) =>
            e.seq
          ),
        );
        await stores[0]!.ackSpawn(
          (await stores[0]!.pendingSpawns()).filter((x) => mine(x.parentId)).map((x) => x.seq),
        );
        // And the timers table: later runs' dueTimers() read no timer of this one.
        for (const timer of await stores[0]!.dueTimers(253402300799)) {
          if (mine(timer.executionId)) {
            await stores[0]!.deleteTimer(timer.executionId, timer.path, timer.fireAt);
          }
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: RUNS <= 60 },
    );
    console.log(`property: ${run} runs, ${steps} steps checked`);
  } finally {
    client.destroy();
    await a.close();
  }
});
