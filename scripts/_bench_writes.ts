// deno task bench's figures for the issue "writes at the seed's cost": the write units
// (ReturnConsumedCapacity: "INDEXES", table + GSI) of the same commits and acknowledgements, with
// the same ~1 KB execution document, made by this module's DynamoDBStore and by the Python seed
// store's algorithm (re-enacted here with raw SDK calls), on one DynamoDB, side by side. Only the
// public API of mod.ts is used for our side, so the figures follow whatever the store does inside.
//
// Run alone: DYNAMODB_ENDPOINT=... deno run --allow-net --allow-env --allow-read
//   --allow-write --allow-sys=osRelease scripts/_bench_writes.ts [--json FILE]
import {
  type AttributeValue,
  CreateTableCommand,
  DeleteItemCommand,
  DynamoDBClient,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import {
  type CommitChanges,
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  type Status,
} from "../mod.ts";

/** What one side spent on one scenario: write units (GSI share apart) and calls. */
export interface WriteCost {
  /** Write capacity units, table and indexes together. */
  units: number;
  /** The part of `units` spent on global secondary indexes. */
  gsi: number;
  /** Calls sent (reads included; their read units are not counted). */
  calls: number;
  /** The calls by command name, e.g. `{ TransactWriteItems: 1, UpdateItem: 1 }`. */
  byCommand: Record<string, number>;
  /** Write units by table (its indexes included), named without the prefix: `executions`, ... */
  byTable: Record<string, number>;
}

/** One scenario, both sides. */
export interface WriteScenario {
  /** Short key, `a` to `f`. */
  key: string;
  /** What the scenario does. */
  name: string;
  /** This module's DynamoDBStore, tables made by its ensureTables() (indexes included). */
  ours: WriteCost;
  /** The seed's algorithm on tables made by the same ensureTables() (its rows lack index keys). */
  seed: WriteCost;
  /** The seed's algorithm on tables of the seed's own layout (no GSI), for reference. */
  seedBare: WriteCost;
  /** ours.units / seed.units. */
  ratio: number;
  /** The bound on `ratio`, where it gives one. */
  bound: number | null;
  /** ratio <= bound (null without a bound). */
  ok: boolean | null;
}

/** The figures of this section. */
export interface WriteFigures {
  /** When they were measured (ISO 8601). */
  measuredAt: string;
  /** Bytes of the execution document's JSON (`data`) at the first commit. */
  documentBytes: number;
  /** Each scenario measured this many times on fresh executions; the median is reported. */
  reps: number;
  scenarios: WriteScenario[];
}

/** Options of {@linkcode benchWrites}. */
export interface BenchWritesOptions {
  /** The DynamoDB to measure on. @default {Deno.env.get("DYNAMODB_ENDPOINT")} */
  endpoint?: string;
  /** Stem of the table prefixes (three sets of tables are made). @default {"bw_<time>"} */
  prefix?: string;
  /** Fresh executions per scenario and side; the median is reported. @default {3} */
  reps?: number;
  /** Progress lines. @default {() => {}} */
  progress?: (line: string) => void;
}

/** The bounds: ours / seed write units. */
export const WRITE_BOUNDS: Readonly<Record<string, number>> = { a: 1.0, b: 1.25, c: 2, d: 1.15 };

interface Consumed {
  TableName?: string;
  CapacityUnits?: number;
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

const READS = /^(Query|Scan|GetItem|BatchGetItem|DescribeTable|ListTables)Command$/;

/** A meter on a client: sums write units (and their GSI share) and counts calls from reset. */
class Meter {
  units = 0;
  gsi = 0;
  byCommand: Record<string, number> = {};
  byTable: Record<string, number> = {};
  reset(): void {
    this.units = 0;
    this.gsi = 0;
    this.byCommand = {};
    this.byTable = {};
  }
  read(): WriteCost {
    const calls = Object.values(this.byCommand).reduce((a, b) => a + b, 0);
    return {
      units: this.units,
      gsi: this.gsi,
      calls,
      byCommand: { ...this.byCommand },
      byTable: { ...this.byTable },
    };
  }
}

/** A client on `endpoint` that asks every call for INDEXES capacity and feeds `meter`. */
function meteredClient(endpoint: string, meter: Meter): DynamoDBClient {
  const accessKeyId = Deno.env.get("AWS_ACCESS_KEY_ID");
  const secretAccessKey = Deno.env.get("AWS_SECRET_ACCESS_KEY");
  const client = new DynamoDBClient({
    endpoint,
    region: Deno.env.get("AWS_REGION") ?? "us-east-1",
    credentials: accessKeyId && secretAccessKey
      ? { accessKeyId, secretAccessKey }
      : { accessKeyId: "test", secretAccessKey: "test" },
  });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName as string;
      if (!/^(CreateTable|DescribeTable|UpdateTimeToLive|ListTables)/.test(name)) {
        (args.input as Record<string, unknown>).ReturnConsumedCapacity = "INDEXES";
      }
      const result = await next(args);
      const short = name.replace(/Command$/, "");
      meter.byCommand[short] = (meter.byCommand[short] ?? 0) + 1;
      if (!READS.test(name)) {
        const consumed = (result.output as { ConsumedCapacity?: Consumed | Consumed[] })
          .ConsumedCapacity;
        for (const each of [consumed ?? []].flat()) {
          meter.units += each.CapacityUnits ?? 0;
          // Every table is `{prefix}_{name}`, and no name of the layout holds an underscore.
          const table = each.TableName?.slice(each.TableName.lastIndexOf("_") + 1) ?? "?";
          meter.byTable[table] = (meter.byTable[table] ?? 0) + (each.CapacityUnits ?? 0);
          for (const index of Object.values(each.GlobalSecondaryIndexes ?? {})) {
            meter.gsi += index.CapacityUnits ?? 0;
          }
        }
      }
      return result;
    },
    { step: "initialize", name: "meterWrites" },
  );
  return client;
}

// ---- The seed's algorithm (harel's Python DynamoDBStore), re-enacted with raw SDK calls. ----

const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number): AttributeValue => ({ N: String(n) });

/** The seed's tables, as its _ensure_tables makes them: keys only, no index. */
async function createSeedTables(client: DynamoDBClient, prefix: string): Promise<void> {
  const specs: [string, [string, "S" | "N"][]][] = [
    ["executions", [["id", "S"]]],
    ["outbox", [["seq", "N"]]],
    ["spawns", [["seq", "N"]]],
    ["timers", [["execution_id", "S"], ["path", "S"]]],
    ["processed", [["execution_id", "S"], ["event_id", "S"]]],
    ["counters", [["id", "S"]]],
    ["trace", [["execution_id", "S"], ["idx", "N"]]],
  ];
  for (const [name, keys] of specs) {
    await client.send(
      new CreateTableCommand({
        TableName: `${prefix}_${name}`,
        BillingMode: "PAY_PER_REQUEST",
        KeySchema: keys.map(([k], i) => ({
          AttributeName: k,
          KeyType: i === 0 ? "HASH" : "RANGE",
        })),
        AttributeDefinitions: keys.map(([k, t]) => ({ AttributeName: k, AttributeType: t })),
      }),
    );
  }
}

/** The seed's writer: a commit is counter ADDs, then one TransactWriteItems; an ack a delete. */
class SeedWriter {
  constructor(readonly client: DynamoDBClient, readonly prefix: string) {}

  #t(name: string): string {
    return `${this.prefix}_${name}`;
  }

  /** _next_seq: reserve `count` seqs of counter `name` with an atomic ADD; the first. */
  async #nextSeq(name: string, count: number): Promise<number> {
    const out = await this.client.send(
      new UpdateItemCommand({
        TableName: this.#t("counters"),
        Key: { id: S(name) },
        UpdateExpression: "ADD n :k",
        ExpressionAttributeValues: { ":k": N(count) },
        ReturnValues: "UPDATED_NEW",
      }),
    );
    return Number(out.Attributes!.n!.N) - count + 1;
  }

  /** commit(): as the seed, bumps exe.version; returns the outbox seqs it wrote. */
  async commit(exe: Execution, changes: CommitChanges = {}): Promise<number[]> {
    const emits = changes.emits ?? [];
    const spawns = changes.spawns ?? [];
    const outboxBase = emits.length ? await this.#nextSeq("outbox", emits.length) : 0;
    const spawnBase = spawns.length ? await this.#nextSeq("spawn", spawns.length) : 0;
    const old = exe.version;
    const next = { ...exe, version: old + 1 };
    const items: TransactWriteItem[] = [{
      Put: {
        TableName: this.#t("executions"),
        Item: {
          id: S(exe.id),
          data: S(JSON.stringify(next)),
          version: N(old + 1),
          definition_id: S(exe.definition_id),
        },
        ...(old === 0
          ? { ConditionExpression: "attribute_not_exists(id)" }
          : { ConditionExpression: "version = :ov", ExpressionAttributeValues: { ":ov": N(old) } }),
      },
    }];
    const seqs = emits.map((_, i) => outboxBase + i);
    emits.forEach((emit, i) =>
      items.push({
        Put: {
          TableName: this.#t("outbox"),
          Item: {
            seq: N(seqs[i]!),
            target_id: emit.target === null ? { NULL: true } : S(emit.target),
            event: S(JSON.stringify(emit.event)),
          },
        },
      })
    );
    spawns.forEach((spawn, i) =>
      items.push({
        Put: {
          TableName: this.#t("spawns"),
          Item: {
            seq: N(spawnBase + i),
            parent_id: S(exe.id),
            child_id: S(spawn.childId),
            root_path: S(spawn.rootPath),
            context: S(JSON.stringify(spawn.context)),
          },
        },
      })
    );
    if (changes.processedEventId !== undefined) {
      items.push({
        Put: {
          TableName: this.#t("processed"),
          Item: { execution_id: S(exe.id), event_id: S(changes.processedEventId) },
        },
      });
    }
    for (const op of changes.timers ?? []) {
      const key = { execution_id: S(exe.id), path: S(op.path) };
      items.push(
        op.action === "schedule"
          ? { Put: { TableName: this.#t("timers"), Item: { ...key, fire_at: N(op.fireAt) } } }
          : { Delete: { TableName: this.#t("timers"), Key: key } },
      );
    }
    await this.client.send(new TransactWriteItemsCommand({ TransactItems: items }));
    exe.version = old + 1;
    return seqs;
  }

  /** ack_outbox(seq), once per seq: one DeleteItem each. */
  async ackOutbox(seqs: number[]): Promise<void> {
    for (const seq of seqs) {
      await this.client.send(
        new DeleteItemCommand({ TableName: this.#t("outbox"), Key: { seq: N(seq) } }),
      );
    }
  }
}

// ---- The scenarios, written once against either side. ----

interface Side {
  commit(exe: Execution, changes?: CommitChanges): Promise<number[]>;
  ack(seqs: number[]): Promise<void>;
}

/** The same ~1 KB document on both sides (the context is what makes it ~1 KB). */
export function benchDocument(status: Status = "RUNNING"): Execution {
  return newExecution({
    definition_id: "order",
    status,
    active_path: "order.open",
    context: {
      customer: "c-00042",
      lines: Array.from({ length: 8 }, (_, i) => ({ sku: `sku-${i}`, qty: i + 1, price: 9.5 })),
      note: "n".repeat(480),
    },
  });
}

const mark = (): CommitChanges => ({ processedEventId: crypto.randomUUID().replaceAll("-", "") });
const twoEmits = (): CommitChanges => ({
  ...mark(),
  emits: [
    { target: "payments", event: newEvent("order.charge", { amount: 42 }) },
    { target: null, event: newEvent("order.audit", { step: "charge" }) },
  ],
});

/** A step of the running document: the engine handled one more event. */
function step(exe: Execution, status?: Status): void {
  exe.processed_events++;
  (exe.context as Record<string, unknown>).step = exe.processed_events;
  if (status) exe.status = status;
}

interface Scenario {
  key: string;
  name: string;
  /** Unmeasured: brings a fresh execution to where the measured part starts. */
  setup(side: Side): Promise<{ exe: Execution; seqs: number[] }>;
  /** Measured. */
  run(side: Side, exe: Execution, seqs: number[]): Promise<void>;
}

/** Inserts a RUNNING document and commits once (steady state: the first commit's costs paid). */
async function running(side: Side): Promise<{ exe: Execution; seqs: number[] }> {
  const exe = benchDocument("RUNNING");
  await side.commit(exe);
  step(exe);
  await side.commit(exe, twoEmits());
  return { exe, seqs: [] };
}

/**
 * Ten commits of one execution (the fifth with two emits, the others with a dedupe mark), the
 * last to DONE (`started`: the second to RUNNING, as a worker starting a PENDING one), then
 * both entries acknowledged.
 */
async function lifecycle(side: Side, exe: Execution, started: boolean): Promise<void> {
  await side.commit(exe);
  const seqs: number[] = [];
  for (let i = 1; i < 10; i++) {
    step(exe, i === 1 && started ? "RUNNING" : i === 9 ? "DONE" : undefined);
    if (i === 9) exe.outcome = "done";
    seqs.push(...await side.commit(exe, i === 5 ? twoEmits() : mark()));
  }
  await side.ack(seqs);
}

const SCENARIOS: Scenario[] = [
  {
    key: "a",
    name: "commit, status unchanged, dedupe mark",
    setup: running,
    run: async (side, exe) => {
      step(exe);
      await side.commit(exe, mark());
    },
  },
  {
    key: "b",
    name: "commit with 2 emits, status unchanged, dedupe mark",
    setup: running,
    run: async (side, exe) => {
      step(exe);
      await side.commit(exe, twoEmits());
    },
  },
  {
    key: "c",
    name: "acknowledge 50 outbox entries",
    setup: async (side) => {
      const { exe } = await running(side);
      const seqs: number[] = [];
      for (let k = 0; k < 2; k++) {
        step(exe);
        seqs.push(
          ...await side.commit(exe, {
            emits: Array.from({ length: 25 }, (_, i) => ({
              target: `target-${i % 5}`,
              event: newEvent("relay", { i }),
            })),
          }),
        );
      }
      return { exe, seqs };
    },
    run: (side, _exe, seqs) => side.ack(seqs),
  },
  {
    key: "d",
    name: "lifecycle: insert RUNNING ... DONE (10 commits, one with 2 emits), ack both",
    setup: () => Promise.resolve({ exe: benchDocument("RUNNING"), seqs: [] }),
    run: (side, exe) => lifecycle(side, exe, false),
  },
  {
    key: "g",
    name: "lifecycle: insert PENDING, RUNNING ... DONE (10 commits, one with 2 emits), ack both",
    setup: () => Promise.resolve({ exe: benchDocument("PENDING"), seqs: [] }),
    run: (side, exe) => lifecycle(side, exe, true),
  },
  {
    key: "e",
    name: "commit that changes the status (RUNNING -> SUSPENDED), dedupe mark",
    setup: running,
    run: async (side, exe) => {
      step(exe, "SUSPENDED");
      await side.commit(exe, mark());
    },
  },
  {
    key: "f",
    name: "commit with a timer schedule and a spawn, dedupe mark",
    setup: running,
    run: async (side, exe) => {
      step(exe);
      await side.commit(exe, {
        ...mark(),
        timers: [{ action: "schedule", path: "order.waiting", fireAt: 2e9 + 0.25 }],
        spawns: [{ childId: crypto.randomUUID(), rootPath: "order.fork", context: { n: 1 } }],
      });
    },
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The median cost over reps (by units; ties keep the first). */
function medianCost(costs: WriteCost[]): WriteCost {
  const m = median(costs.map((c) => c.units));
  return costs.find((c) => c.units === m)!;
}

/**
 * Measures every scenario on both sides, each `reps` times on fresh executions, on three sets of
 * fresh tables of one DynamoDB: ours (ensureTables), the seed's on tables of the same
 * ensureTables, and the seed's on its own index-free layout.
 */
export async function benchWrites(options: BenchWritesOptions = {}): Promise<WriteFigures> {
  const endpoint = options.endpoint ?? Deno.env.get("DYNAMODB_ENDPOINT");
  if (!endpoint) throw new Error("DYNAMODB_ENDPOINT is not set (or pass `endpoint`)");
  const stem = options.prefix ?? `bw_${Date.now().toString(36)}`;
  const reps = options.reps ?? 3;
  const progress = options.progress ?? (() => {});

  const meters = { ours: new Meter(), seed: new Meter(), seedBare: new Meter() };
  const clients = {
    ours: meteredClient(endpoint, meters.ours),
    seed: meteredClient(endpoint, meters.seed),
    seedBare: meteredClient(endpoint, meters.seedBare),
  };
  try {
    progress("writes: creating three sets of tables");
    const store = new DynamoDBStore(clients.ours, { prefix: `${stem}_ours` });
    await store.ensureTables();
    // The seed's rows on tables with our indexes: the same ensureTables, another prefix.
    await new DynamoDBStore(clients.seed, { prefix: `${stem}_seed` })
      .ensureTables();
    await createSeedTables(clients.seedBare, `${stem}_bare`);
    const sides: Record<keyof typeof meters, Side> = {
      ours: {
        commit: async (exe, changes) => (await store.commit(exe, changes)).outbox,
        ack: (seqs) => store.ackOutbox(seqs),
      },
      seed: new SeedSide(new SeedWriter(clients.seed, `${stem}_seed`)),
      seedBare: new SeedSide(new SeedWriter(clients.seedBare, `${stem}_bare`)),
    };
    // One unmeasured commit with an emit per side: our store reserves its seq block here, once
    // a process (a counter call per 1,000 seqs), so the scenarios measure the steady state.
    for (const side of Object.values(sides)) {
      const warm = benchDocument();
      await side.commit(warm, twoEmits());
    }

    const scenarios: WriteScenario[] = [];
    for (const scenario of SCENARIOS) {
      progress(`writes: (${scenario.key}) ${scenario.name}`);
      const costs: Record<keyof typeof meters, WriteCost[]> = { ours: [], seed: [], seedBare: [] };
      for (let rep = 0; rep < reps; rep++) {
        for (const key of Object.keys(sides) as (keyof typeof meters)[]) {
          const { exe, seqs } = await scenario.setup(sides[key]);
          meters[key].reset();
          await scenario.run(sides[key], exe, seqs);
          costs[key].push(meters[key].read());
        }
      }
      const ours = medianCost(costs.ours), seed = medianCost(costs.seed);
      const ratio = ours.units / seed.units;
      const bound = WRITE_BOUNDS[scenario.key] ?? null;
      scenarios.push({
        key: scenario.key,
        name: scenario.name,
        ours,
        seed,
        seedBare: medianCost(costs.seedBare),
        ratio,
        bound,
        ok: bound === null ? null : ratio <= bound + 1e-9,
      });
    }
    const documentBytes = new TextEncoder().encode(JSON.stringify(benchDocument())).length;
    return { measuredAt: new Date().toISOString(), documentBytes, reps, scenarios };
  } finally {
    for (const client of Object.values(clients)) client.destroy();
  }
}

/** The seed writer as a {@linkcode Side}. */
class SeedSide implements Side {
  constructor(readonly writer: SeedWriter) {}
  commit(exe: Execution, changes?: CommitChanges): Promise<number[]> {
    return this.writer.commit(exe, changes);
  }
  ack(seqs: number[]): Promise<void> {
    return this.writer.ackOutbox(seqs);
  }
}

/** The section's table, as Markdown. */
export function printWrites(figures: WriteFigures): void {
  const u = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
  const calls = (c: WriteCost) =>
    Object.entries(c.byCommand).map(([k, v]) => `${v} ${k}`).join(" + ") || "0";
  console.log(
    `\nWrite units next to the seed (DynamoDB Local, ReturnConsumedCapacity INDEXES; ` +
      `a ${figures.documentBytes}-byte execution document; median of ${figures.reps})\n`,
  );
  console.log(
    "| scenario | ours: units (GSI) | seed: units (GSI) | ratio | bound | ok | ours: calls | seed: calls | seed, no GSI: units |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const s of figures.scenarios) {
    console.log(
      `| (${s.key}) ${s.name} | ${u(s.ours.units)} (${u(s.ours.gsi)}) | ${u(s.seed.units)} (${
        u(s.seed.gsi)
      }) | ${s.ratio.toFixed(2)} | ${s.bound?.toFixed(2).replace(/0$/, "") ?? ""} | ${
        s.ok === null ? "" : s.ok ? "ok" : "OVER"
      } | ${calls(s.ours)} | ${calls(s.seed)} | ${u(s.seedBare.units)} |`,
    );
  }
}

if (import.meta.main) {
  const args = Deno.args;
  const jsonPath = args.includes("--json") ? args[args.indexOf("--json") + 1] : undefined;
  const figures = await benchWrites({ progress: (line) => console.error(`[bench] ${line}`) });
  printWrites(figures);
  if (jsonPath) await Deno.writeTextFile(jsonPath, JSON.stringify(figures, null, 2) + "\n");
}
