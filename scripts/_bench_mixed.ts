// deno task bench's figures for the mixed fleet: what a relay pass, a sweep and a feed round
// cost with `otherWriters: true` next to a default store on the same tables (calls, Streams calls
// among them, and read units as DynamoDB Local reports them), with 1,000 and 3,000 rows not due
// stored in each relay table (scripts/_bench_relay.ts's fill, written before the streams are on),
// and what finding another writer's rows adds: the Python store's entries, due timers and commits
// (tests/_support/seed_writer.py, boto3), each call in a fresh store, as a cron invocation runs it.
import { buildClient } from "../src/dynamo/connect.ts";
import { countingProxy } from "../tests/_support/counting_proxy.ts";
import { testClient } from "../tests/_support/env.ts";
import { feedsCaughtUp } from "../tests/_support/parked_rows.ts";
import { seedWrite } from "../tests/_support/seed_writer.ts";
import {
  DynamoDBStore,
  newEvent,
  newExecution,
  relayOutbox,
  relaySpawns,
  sweepTimers,
} from "../mod.ts";
import { fill } from "./_bench_relay.ts";

/** One call's cost: every call it sent (Streams' too), the Streams calls, read units. */
export interface MixedCost {
  calls: number;
  streamCalls: number;
  reads: number;
}

/** The figures of this section, by stored rows: each call's cost, default and mixed. */
export interface MixedFigures {
  stored: number;
  costs: Record<string, { default: MixedCost | null; mixed: MixedCost }>;
}

const READS = /^(Query|Scan|GetItem|BatchGetItem|TransactGetItems)Command$/;

/** Rows not due stored in each relay table. */
const STORED = [1_000, 3_000];

/**
 * Runs the section: a minute or two, most of it the feeds' one-off scans of the filled tables (100
 * rows a round: 10,000 rows took 3 minutes on an idle machine, more than 10 on a busy one).
 */
export async function benchMixed(
  prefix: string,
  progress: (line: string) => void,
  endpoint: string,
): Promise<MixedFigures[]> {
  const out: MixedFigures[] = [];
  // Every call goes through the proxy (the Streams client is built on the same endpoint), and the
  // DynamoDB client sums the read units.
  const proxy = countingProxy();
  const client = buildClient({ endpoint: proxy.url });
  let reads = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as Record<string, unknown>).ReturnConsumedCapacity = "TOTAL";
      const result = await next(args);
      if (READS.test(context.commandName as string)) {
        const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
        for (const each of [consumed ?? []].flat() as { CapacityUnits?: number }[]) {
          reads += each.CapacityUnits ?? 0;
        }
      }
      return result;
    },
    { step: "initialize", name: "meterMixed" },
  );
  /** One call in a fresh store (default or mixed) on `tables`, and what it sent. */
  const measure = async (
    tables: string,
    otherWriters: boolean,
    op: (store: DynamoDBStore) => Promise<unknown>,
  ): Promise<MixedCost> => {
    await using store = new DynamoDBStore(client, { prefix: tables, otherWriters });
    const before = proxy.calls.length;
    reads = 0;
    await op(store);
    const sent = proxy.calls.slice(before);
    return {
      calls: sent.length,
      streamCalls: sent.filter((call) => call.startsWith("DynamoDBStreams")).length,
      reads,
    };
  };
  const filler = testClient();
  try {
    for (const stored of STORED) {
      progress(`mixed fleet: ${stored} rows not due in each relay table`);
      const tables = `${prefix}_mx${stored}`;
      const setup = new DynamoDBStore(filler, { prefix: tables });
      await setup.ensureTables();
      await fill(filler, setup, stored);
      const costs: MixedFigures["costs"] = {};
      const ours = newExecution({ definition_id: "bench" });
      const both = async (name: string, prepare: () => Promise<unknown>, op: Op) => {
        await prepare();
        const plain = await measure(tables, false, op);
        await prepare();
        const mixed = await measure(tables, true, op);
        costs[name] = { default: plain, mixed };
      };
      // Default first, then the streams on (the mixed store's ensureTables) and their one-off
      // scans of the filled tables run to their end, so that the mixed figures are a fleet's.
      const emits = () =>
        setup.commit(ours, {
          emits: Array.from(
            { length: 10 },
            (_, i) => ({ target: `ok-${i}`, event: newEvent("ok") }),
          ),
        });
      const timers = () =>
        setup.commit(ours, {
          timers: Array.from({ length: 10 }, (_, i) => ({
            action: "schedule" as const,
            path: `due-${i}-${crypto.randomUUID()}`,
            fireAt: Date.now() / 1000 - 1,
          })),
        });
      const none = () => Promise.resolve();
      {
        await using mixed = await DynamoDBStore.create({
          endpoint,
          prefix: tables,
          otherWriters: true,
        });
        await feedsCaughtUp(mixed, 5);
      }
      await both("relayOutbox, 10 of ours due", emits, (s) => relayOutbox(s, ok));
      await both("relayOutbox, none due", none, (s) => relayOutbox(s, ok));
      await both("relaySpawns, none due", none, (s) => relaySpawns(s, ok));
      await both("sweepTimers, 10 of ours due", timers, (s) => sweepTimers(s, ok));
      // Another writer's rows: only a mixed store finds them.
      const python = (emits: number, timers: number) =>
        seedWrite({ endpoint, prefix: tables, executions: 1, emits, timers, fireInSeconds: -60 });
      await python(10, 0);
      costs["relayOutbox, 10 of another writer's"] = {
        default: null,
        mixed: await measure(tables, true, (s) => delivers(10, relayOutbox(s, ok))),
      };
      await python(0, 5);
      costs["sweepTimers, 5 of another writer's due"] = {
        default: null,
        mixed: await measure(tables, true, (s) => delivers(5, sweepTimers(s, ok))),
      };
      await python(0, 0);
      costs["catchUpStatusIndex (a feed round), 1 of another writer's commits"] = {
        default: null,
        mixed: await measure(tables, true, (s) => s.catchUpStatusIndex()),
      };
      costs["catchUpStatusIndex, nothing new"] = {
        default: null,
        mixed: await measure(tables, true, (s) => s.catchUpStatusIndex()),
      };
      out.push({ stored, costs });
    }
  } finally {
    filler.destroy();
    client.destroy();
    await proxy.server.shutdown();
  }
  return out;
}

type Op = (store: DynamoDBStore) => Promise<unknown>;
const ok = () => Promise.resolve();

/** The pass's report, once it says it delivered `count` (a figure of a pass that found nothing would mislead). */
async function delivers<R extends { delivered: number }>(count: number, pass: Promise<R>) {
  const report = await pass;
  if (report.delivered !== count) {
    throw new Error(`the pass delivered ${report.delivered} of another writer's ${count} rows`);
  }
  return report;
}

/** Prints the section's table (Markdown). */
export function printMixed(figures: MixedFigures[]): void {
  const f = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
  const cell = (c: MixedCost | null) =>
    c === null ? "—" : `${c.calls} (${c.streamCalls} Streams) / ${f(c.reads)}`;
  console.log(
    "\n| one call in a fresh store, rows not due stored | default: calls / RCU | otherWriters: true: calls (Streams) / RCU |",
  );
  console.log("| --- | --- | --- |");
  for (const { stored, costs } of figures) {
    for (const [name, cost] of Object.entries(costs)) {
      console.log(
        `| ${name}, ${stored.toLocaleString("en")} stored | ${cell(cost.default)} | ${
          cell(cost.mixed)
        } |`,
      );
    }
  }
}
