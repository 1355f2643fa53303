// deno task bench's figures for the relay index: what one relay pass, spawn pass, timer
// sweep and dead-letter listing cost (calls, read capacity units as DynamoDB reports them, ms)
// with 1k, 10k and 50k rows stored that are not due (dead and held outbox entries, parked spawns
// and timers), against the same call on empty tables: what is not due must cost it nothing; and
// what a commit and an acknowledgement cost in write units, the index's included
// (ReturnConsumedCapacity: "INDEXES").
import type { AttributeValue, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { testClient } from "../tests/_support/env.ts";
import { putAll } from "../tests/_support/put_all.ts";
import {
  DynamoDBStore,
  newEvent,
  newExecution,
  relayOutbox,
  relaySpawns,
  sweepTimers,
} from "../mod.ts";
import { heldPlace, partition, relayAttributes } from "../src/execution/queue/_relay_index.ts";
import { holdKey } from "../src/execution/queue/_outbox_table.ts";
import { targetKey } from "../src/execution/commit/_outbox_chain.ts";

/** One operation's cost: its calls (and by kind), read units, and its median time. */
export interface PassCost {
  calls: number;
  reads: number;
  ms: number;
  /** Calls by command (`Query`, `BatchGetItem`, ...). */
  kinds: Record<string, number>;
  /** Reads of the seq counters (the counters items `outbox` and `spawn`). */
  counterReads: number;
}

/** The figures of this section: each call with `stored` rows not due, and with none. */
export interface RelayIndexFigures {
  passes: { stored: number; costs: Record<string, PassCost>; empty: Record<string, PassCost> }[];
  writes: Record<string, number>;
}

interface Consumed {
  CapacityUnits?: number;
}

/** A client that sums the read units of read calls and counts every call. */
function metered(): {
  client: DynamoDBClient;
  meter: Meter;
} {
  const client = testClient();
  const meter: Meter = { calls: 0, reads: 0, writes: 0, kinds: {}, counterReads: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as Record<string, unknown>).ReturnConsumedCapacity = "INDEXES";
      const result = await next(args);
      const consumed = [
        (result.output as { ConsumedCapacity?: Consumed | Consumed[] }).ConsumedCapacity ?? [],
      ].flat();
      const units = consumed.reduce((sum, each) => sum + (each.CapacityUnits ?? 0), 0);
      if (/^(Query|Scan|GetItem|BatchGetItem)Command$/.test(context.commandName as string)) {
        meter.reads += units;
      } else meter.writes += units;
      meter.calls++;
      const kind = (context.commandName as string).replace(/Command$/, "");
      meter.kinds[kind] = (meter.kinds[kind] ?? 0) + 1;
      if (/GetItem$/.test(kind) && readsSeqCounter(args.input)) meter.counterReads++;
      return result;
    },
    { step: "initialize", name: "meterRelay" },
  );
  return { client, meter };
}

/** What a metered client counted. */
interface Meter {
  calls: number;
  reads: number;
  writes: number;
  kinds: Record<string, number>;
  counterReads: number;
}

/** Whether a GetItem or BatchGetItem input reads a seq counter (`outbox` or `spawn`). */
function readsSeqCounter(input: unknown): boolean {
  const text = JSON.stringify(input);
  return /_counters"/.test(text) && /"id":\{"S":"(outbox|spawn)"\}/.test(text);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const N = (n: number | string) => ({ N: String(n) });
const S = (s: string) => ({ S: s });

/**
 * Fills the relay tables of `store` with `stored` rows each, as relays leave them after failures
 * (about 250 bytes an outbox row): outbox entries to stored / 10 targets, each a dead head and 9
 * entries held behind it (with the targets' holds); spawns and timers parked for an hour.
 */
export async function fill(client: DynamoDBClient, store: DynamoDBStore, stored: number) {
  const now = Date.now() / 1000;
  const event = JSON.stringify(newEvent("parked", { pad: "x".repeat(120) }));
  const outbox: Record<string, AttributeValue>[] = [];
  const holds: Record<string, AttributeValue>[] = [];
  for (let seq = 1; seq <= stored; seq++) {
    const target = `down-${Math.floor((seq - 1) / 10)}`;
    const key = targetKey(target);
    const head = (seq - 1) % 10 === 0;
    const row: Record<string, AttributeValue> = {
      seq: N(seq),
      target_id: S(target),
      event: S(event),
      source_id: S("bench"),
      created_at: N(now - 3600),
    };
    if (head) {
      Object.assign(row, relayAttributes({ part: partition("d", seq % 8), order: N(seq) }), {
        attempts: N(10),
        last_error: S("Error: down"),
        dead_at: N(now - 60),
      });
      holds.push({ ...holdKey(key), heads: { NS: [String(seq)] } });
    } else Object.assign(row, relayAttributes(heldPlace(key, N(seq))));
    outbox.push(row);
  }
  const parked = (shard: number) =>
    relayAttributes({ part: partition("w", shard), order: N(now + 3600) });
  const spawns = Array.from({ length: stored }, (_, i) => ({
    seq: N(i + 1),
    parent_id: S("bench"),
    child_id: S(`child-${i}`),
    root_path: S("fork.a"),
    context: S(JSON.stringify({ pad: "x".repeat(150) })),
    created_at: N(now - 3600),
    attempts: N(1),
    retry_at: N(now + 3600),
    last_error: S("Error: down"),
    ...parked((i + 1) % 8),
  }));
  const timers = Array.from({ length: stored }, (_, i) => ({
    execution_id: S(`exe-${i}`),
    path: S(`order.waiting.${"x".repeat(150)}`),
    fire_at: N(now - 60),
    attempts: N(1),
    retry_at: N(now + 3600),
    last_error: S("Error: down"),
    ...parked(i % 8),
  }));
  await Promise.all([
    putAll(client, store.tables.outbox.name, outbox),
    putAll(client, store.tables.counters.name, holds),
    putAll(client, store.tables.spawns.name, spawns),
    putAll(client, store.tables.timers.name, timers),
  ]);
}

/** How many rows not due each relay table holds, besides none. */
const STORED = [1_000, 10_000, 50_000];

/** Runs the section: a few minutes, most of it filling 50k rows of each relay table. */
export async function benchRelayIndex(
  prefix: string,
  rounds: number,
  progress: (line: string) => void,
): Promise<RelayIndexFigures> {
  const costsAt: Record<string, PassCost>[] = [];
  const filler = testClient();
  for (const stored of [0, ...STORED]) {
    progress(`relay index: ${stored} rows not due in each relay table`);
    const tables = `${prefix}_ri${stored}`;
    const setup = new DynamoDBStore(filler, { prefix: tables });
    await setup.ensureTables();
    if (stored > 0) await fill(filler, setup, stored);
    const { client, meter } = metered();
    const store = new DynamoDBStore(client, { prefix: tables });
    const exe = newExecution({ definition_id: "bench" });
    const costs: Record<string, PassCost> = {};
    const measure = async (
      name: string,
      prepare: () => Promise<unknown>,
      op: () => Promise<unknown>,
    ) => {
      const times: number[] = [];
      let calls = 0, reads = 0, kinds: Record<string, number> = {}, counterReads = 0;
      for (let round = 0; round < Math.max(1, Math.ceil(rounds / 2)); round++) {
        await prepare();
        meter.calls = meter.reads = meter.counterReads = 0;
        meter.kinds = {};
        const started = performance.now();
        await op();
        times.push(performance.now() - started);
        ({ calls, reads, counterReads } = meter);
        kinds = { ...meter.kinds }; // a copy: the next call's preparation counts on in the meter
      }
      costs[name] = { calls, reads, ms: median(times), kinds, counterReads };
    };
    const now = () => Date.now() / 1000;
    await measure(
      "relayOutbox, 10 due",
      () =>
        store.commit(exe, {
          emits: Array.from(
            { length: 10 },
            (_, i) => ({ target: `ok-${i}`, event: newEvent("ok") }),
          ),
        }),
      () => relayOutbox(store, () => Promise.resolve()),
    );
    await measure(
      "relayOutbox, none due",
      () => Promise.resolve(),
      () => relayOutbox(store, () => Promise.resolve()),
    );
    await measure(
      "relaySpawns, 10 due",
      () =>
        store.commit(exe, {
          spawns: Array.from(
            { length: 10 },
            (_, i) => ({ childId: `c${i}`, rootPath: "r", context: {} }),
          ),
        }),
      () => relaySpawns(store, () => Promise.resolve()),
    );
    await measure(
      "sweepTimers, 10 due",
      () =>
        store.commit(exe, {
          timers: Array.from({ length: 10 }, (_, i) => ({
            action: "schedule" as const,
            path: `due-${i}`,
            fireAt: now() - 1,
          })),
        }),
      () => sweepTimers(store, () => Promise.resolve()),
    );
    await measure(
      "deadLetters(outbox, limit 50)",
      () => Promise.resolve(),
      () => store.deadLetters("outbox", { limit: 50 }),
    );
    costsAt.push(costs);
    client.destroy();
  }
  filler.destroy();
  const [empty, ...filled] = costsAt;
  const passes = filled.map((costs, i) => ({
    stored: STORED[i]!,
    costs,
    empty: empty!,
  }));
  progress("relay index: write units of a commit and of acknowledgements");
  const writes: RelayIndexFigures["writes"] = {};
  {
    const { client, meter } = metered();
    const store = new DynamoDBStore(client, { prefix: `${prefix}_riw` });
    await store.ensureTables();
    const exe = newExecution({ definition_id: "bench" });
    await store.commit(exe);
    meter.writes = 0;
    const { outbox } = await store.commit(exe, {
      emits: [{ target: "a", event: newEvent("x") }, { target: "b", event: newEvent("y") }],
      spawns: [{ childId: "c", rootPath: "r", context: {} }],
      timers: [{ action: "schedule", path: "t", fireAt: 2e9 }],
    });
    const commit = meter.writes;
    meter.writes = 0;
    await store.ackOutbox(outbox);
    writes["commit, 2 emits + spawn + timer"] = commit;
    writes["ackOutbox of its 2 entries"] = meter.writes;
    client.destroy();
  }
  return { passes, writes };
}

/** Prints the section's tables (Markdown). */
export function printRelayIndex(figures: RelayIndexFigures): void {
  const f = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
  console.log(
    "\n| one call, rows not due stored | with them: calls / RCU / ms | on empty tables: calls / RCU / ms |",
  );
  console.log("| --- | --- | --- |");
  for (const { stored, costs, empty } of figures.passes) {
    for (const name of Object.keys(costs)) {
      const a = costs[name]!, b = empty[name]!;
      console.log(
        `| ${name}, ${stored.toLocaleString("en")} stored | ${a.calls} / ${f(a.reads)} / ${
          f(a.ms)
        } | ${b.calls} / ${f(b.reads)} / ${f(b.ms)} |`,
      );
    }
  }
  console.log(
    "\n| a default store's call, rows not due stored | calls by kind | Scan | seq counter reads | Streams client |",
  );
  console.log("| --- | --- | --- | --- | --- |");
  for (const { stored, costs } of figures.passes) {
    for (const [name, cost] of Object.entries(costs)) {
      const kinds = Object.entries(cost.kinds).sort().map(([k, n]) => `${k} ${n}`).join(", ");
      // A default store builds no Streams client (only otherWriters: true does): every call it
      // makes is DynamoDB's, counted here.
      console.log(
        `| ${name}, ${stored.toLocaleString("en")} stored | ${kinds} | ${
          cost.kinds.Scan ?? 0
        } | ${cost.counterReads} | none |`,
      );
    }
  }
  console.log("\n| write units (DynamoDB Local's figures), the relay index's included | units |");
  console.log("| --- | --- |");
  for (const [name, units] of Object.entries(figures.writes)) {
    console.log(`| ${name} | ${f(units)} |`);
  }
}
