// deno task bench [--json FILE] [--rounds N] [--only SECTION]
// Commit throughput next to a bare TransactWriteItems of the same items, a commit's own CPU next
// to the SDK's send of the same transaction (an instant request handler), relay drain (bare and
// relayOutbox), heap of a bounded read of a 20,000-entry backlog, calls from a cold create() to
// the first commit, calls per operation, hash-store throughput and write units next to the Python
// seed store's algorithm (scripts/_bench_writes.ts), against $DYNAMODB_ENDPOINT
// (deno task bench starts one; it runs with --v8-flags=--expose-gc for the heap figure), and
// SQS publish throughput and commit-to-queue latency against $SQS_ENDPOINT (moto, started too),
// and one commit's latency with 10 ms added per request next to the seed's Python store's
// (scripts/_bench_latency.ts).
import { DeleteItemCommand } from "@aws-sdk/client-dynamodb";
import { countingClient, testClient } from "../tests/_support/env.ts";
import { countingProxy } from "../tests/_support/counting_proxy.ts";
import { heapProbe, seedOutbox } from "../tests/_support/heap.ts";
import { setSpansEnabled } from "../src/core/_telemetry.ts";
import { benchStatusIndex, printStatusIndex } from "./_bench_status.ts";
import { benchRelayIndex, printRelayIndex } from "./_bench_relay.ts";
import { benchMixed, printMixed } from "./_bench_mixed.ts";
import { benchCommitCpu, printCommitCpu } from "./_bench_cpu.ts";
import { benchWrites, printWrites } from "./_bench_writes.ts";
import { benchSqs, printSqs } from "./_bench_sqs.ts";
import { benchLatency, printLatency as printRoundTrip } from "./_bench_latency.ts";
import { BareWriter } from "./_bench_floor.ts";
import {
  type CommitChanges,
  DynamoDBStateStore,
  DynamoDBStore,
  newEvent,
  newExecution,
  relayOutbox,
} from "../mod.ts";

const args = Deno.args;
const jsonPath = args.includes("--json") ? args[args.indexOf("--json") + 1] : undefined;
const rounds = args.includes("--rounds") ? Number(args[args.indexOf("--rounds") + 1]) : 5;
/** The sections, in the order they run; `--only NAME` runs one of them. */
const SECTIONS = [
  "cpu",
  "writes",
  "commits",
  "spans",
  "relay-index",
  "mixed",
  "status-index",
  "calls",
  "drain",
  "latency",
  "round-trip",
  "heap",
  "cold-start",
  "hash",
  "sqs",
] as const;
type Section = typeof SECTIONS[number];
const only = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined;
if (only !== undefined && !(SECTIONS as readonly string[]).includes(only)) {
  throw new Error(`--only takes one of ${SECTIONS.join(", ")}; got ${JSON.stringify(only)}`);
}
/** Whether this run measures `section`. */
const runs = (section: Section) => only === undefined || only === section;
const endpoint = Deno.env.get("DYNAMODB_ENDPOINT");
if (!endpoint) throw new Error("DYNAMODB_ENDPOINT is not set: run `deno task bench`");

const progress = (line: string) => console.error(`[bench] ${line}`);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

// A commit's own CPU, first, on a fresh process: the store's commit next to the SDK's send
// of the same transaction, through a client whose request handler answers at once (no network).
if (runs("cpu")) progress("commit CPU with an instant request handler");
const commitCpu = runs("cpu") ? await benchCommitCpu(rounds, progress) : undefined;

const prefix = `bench_${Date.now().toString(36)}`;

// Write units next to the seed's algorithm: the same commits and acknowledgements made by our
// store and by the Python store's algorithm, on fresh tables of this DynamoDB (a few seconds).
if (runs("writes")) progress("write units next to the seed's algorithm");
const writes = runs("writes")
  ? await benchWrites({ endpoint, prefix: `${prefix}_bw`, progress })
  : undefined;
const { client, calls } = countingClient();
// The bench measures no status feed: its stores run without one (on DynamoDB Local a stream
// slows every write to its table several times, and the fills below are 300,000 rows).
const store = new DynamoDBStore(client, { prefix });
await store.ensureTables();
const t = store.tables;

/** What every benchmarked commit carries: 2 emits, a dedupe mark, a timer, a trace step. */
function changes(i: number): CommitChanges {
  return {
    emits: [
      { target: "peer", event: newEvent("order.step", { i }) },
      { target: null, event: newEvent("order.audit", { i }) },
    ],
    processedEventId: crypto.randomUUID(),
    timers: [{ action: "schedule", path: "order.waiting", fireAt: 2e9 + i }],
    trace: { event: "order.step", i },
  };
}

const doc = () =>
  newExecution({
    definition_id: "order",
    status: "RUNNING",
    context: { customer: "c-1", lines: [{ sku: "a", qty: 2 }, { sku: "b", qty: 1 }], total: 42 },
  });

/** Commits per second with `writers` concurrent writers, each on its own execution. */
async function throughput(
  writers: number,
  perWriter: number,
  commit: (w: number, i: number) => Promise<void>,
): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; i < perWriter; i++) await commit(w, i);
    }),
  );
  return (writers * perWriter) / ((performance.now() - started) / 1000);
}

const levels = [
  { writers: 1, perWriter: 200 },
  { writers: 8, perWriter: 50 },
  { writers: 32, perWriter: 15 },
];
const commitRuns = new Map<number, { store: number[]; bare: number[]; same: number[] }>(
  levels.map(({ writers }) => [writers, { store: [], bare: [], same: [] }]),
);
let seqBase = 1e12;
for (let round = 1; round <= (runs("commits") ? rounds : 0); round++) {
  for (const { writers, perWriter } of levels) {
    progress(`round ${round}/${rounds}: commits with ${writers} writer(s)`);
    // Warm executions: the first commits reserve seq blocks and read the trace end.
    const exes = Array.from({ length: writers }, doc);
    for (const exe of exes) await store.commit(exe, changes(0));
    // The two floors (scripts/_bench_floor.ts): the light transaction of the figures since
    // 0.1.0, and the same items as the store's commit.
    const writersOf = (floor: "light" | "same items") =>
      Array.from(
        { length: writers },
        () => new BareWriter(client, t, doc(), seqBase += 1e6, floor),
      );
    const bare = writersOf("light"), same = writersOf("same items");
    for (const writer of [...bare, ...same]) await writer.commit(0, changes(0));
    // Rotate which one goes first, so none always meets a warmer DynamoDB.
    const runs = commitRuns.get(writers)!;
    const measured = [
      async () =>
        runs.store.push(
          await throughput(writers, perWriter, (w, i) =>
            store.commit(exes[w]!, changes(i)).then(() => {})),
        ),
      async () =>
        runs.bare.push(
          await throughput(writers, perWriter, (w, i) => bare[w]!.commit(i + 1, changes(i + 1))),
        ),
      async () =>
        runs.same.push(
          await throughput(writers, perWriter, (w, i) => same[w]!.commit(i + 1, changes(i + 1))),
        ),
    ];
    for (let k = 0; k < measured.length; k++) await measured[(k + round) % measured.length]!();
  }
}

// Spans: commit throughput with the store's spans on (no exporter: Deno without OTEL_DENO, so
// @opentelemetry/api's no-op tracer) and with them switched off inside the module.
const spanLevels = [{ writers: 1, perWriter: 200 }, { writers: 8, perWriter: 50 }];
const spanRuns = new Map(
  spanLevels.map(({ writers }) => [writers, { on: [] as number[], off: [] as number[] }]),
);
for (let round = 1; round <= (runs("spans") ? rounds : 0); round++) {
  for (const { writers, perWriter } of spanLevels) {
    progress(`round ${round}/${rounds}: commits with spans on and off, ${writers} writer(s)`);
    const exes = Array.from({ length: writers }, doc);
    for (const exe of exes) await store.commit(exe, changes(0));
    const run = (on: boolean) => {
      setSpansEnabled(on);
      return throughput(
        writers,
        perWriter,
        (w, i) => store.commit(exes[w]!, changes(i)).then(() => {}),
      );
    };
    const runs = spanRuns.get(writers)!;
    for (const on of round % 2 ? [true, false] : [false, true]) {
      (on ? runs.on : runs.off).push(await run(on));
    }
  }
}
setSpansEnabled(true);

// The relay index: one pass, sweep and dead-letter listing at 1k, 10k and 50k rows not due,
// and on empty tables; and the write cost of a commit and its acknowledgement.
if (runs("relay-index")) {
  progress("relay index: passes at 0, 1k, 10k and 50k stored rows, and write units");
}
const relayIndex = runs("relay-index")
  ? await benchRelayIndex(prefix, rounds, progress)
  : undefined;

// The mixed fleet: a pass, a sweep and a feed round with otherWriters: true next to a
// default store's, at 1k and 3k rows not due, and what another writer's rows add.
if (runs("mixed")) {
  progress("mixed fleet: passes, sweeps and feed rounds at 1k and 3k stored rows");
}
const mixed = runs("mixed") ? await benchMixed(prefix, progress, endpoint) : undefined;

// The status index: listings at 1k, 10k and 50k executions, and its write cost per commit.
if (runs("status-index")) {
  progress("status index: listings at 1k, 10k and 50k executions, and commit WCU");
}
const statusIndex = runs("status-index")
  ? await benchStatusIndex(prefix, rounds, progress)
  : undefined;

// Calls per operation in the steady state.
const perOp = async (n: number, op: (i: number) => Promise<unknown>) => {
  calls.length = 0;
  for (let i = 0; i < n; i++) await op(i);
  return calls.length / n;
};
const callsPerOp: Record<string, number> = {};
if (runs("calls")) {
  progress("counting calls per operation");
  const counted = doc();
  await store.commit(counted, changes(0));
  callsPerOp.commit = await perOp(50, (i) => store.commit(counted, changes(i)));
  callsPerOp.loadForEvent = await perOp(20, () => store.loadForEvent(counted.id, "e"));
}

// Relay drain: 2 000 entries over 50 targets, batched acks next to one DeleteItem per entry,
// and the package's relayOutbox (no-op deliver) next to the bare batched drain.
async function fillOutbox(n: number): Promise<void> {
  const exe = doc();
  for (let made = 0; made < n; made += 25) {
    await store.commit(exe, {
      emits: Array.from({ length: 25 }, (_, k) => ({
        target: `target-${(made + k) % 50}`,
        event: newEvent("relay"),
      })),
    });
  }
}
const drain = {
  batched: [] as number[],
  perItem: [] as number[],
  relay: [] as number[],
  batchedBounded: [] as number[],
  relayPasses: [] as number[],
};
const all = { limit: Infinity };
const noop = () => Promise.resolve();
// The commit rounds left their emits in the outbox: clear them, so each round drains 2 000.
await store.ackOutbox((await store.pendingOutbox(all)).map((e) => e.seq));
const relayRounds = runs("drain") ? Math.max(3, Math.ceil(rounds / 2)) : 0;
for (let round = 1; round <= relayRounds; round++) {
  progress(`round ${round}/${relayRounds}: relay drain of 2000 entries`);
  const bareDrain = async () => {
    await fillOutbox(2000);
    const started = performance.now();
    calls.length = 0;
    const pending = await store.pendingOutbox(all);
    await store.ackOutbox(pending.map((e) => e.seq));
    drain.batched.push(pending.length / ((performance.now() - started) / 1000));
    callsPerOp["ackOutbox of 2000 (calls)"] = calls.filter((c) =>
      c === "BatchWriteItemCommand"
    ).length;
  };
  // relayOutbox over the same read (limit: Infinity), so the ratio is the runner's cost.
  const relayDrain = async () => {
    await fillOutbox(2000);
    const started = performance.now();
    const report = await relayOutbox(store, noop, all);
    drain.relay.push(report.delivered / ((performance.now() - started) / 1000));
  };
  // Alternate which one goes first, so neither always meets a warmer DynamoDB.
  if (round % 2) await bareDrain().then(relayDrain);
  else await relayDrain().then(bareDrain);
  // Both again with the default bounded read (1000 a pass: a keys-only scan, then
  // BatchGetItem), in passes until the outbox is empty.
  const bareBounded = async () => {
    await fillOutbox(2000);
    const started = performance.now();
    let drained = 0;
    for (let got = -1; got !== 0;) {
      const pending = await store.pendingOutbox();
      await store.ackOutbox(pending.map((e) => e.seq));
      drained += got = pending.length;
    }
    drain.batchedBounded.push(drained / ((performance.now() - started) / 1000));
  };
  const relayBounded = async () => {
    await fillOutbox(2000);
    const started = performance.now();
    let delivered = 0;
    for (let got = -1; got !== 0;) delivered += got = (await relayOutbox(store, noop)).delivered;
    drain.relayPasses.push(delivered / ((performance.now() - started) / 1000));
  };
  if (round % 2) await bareBounded().then(relayBounded);
  else await relayBounded().then(bareBounded);

  await fillOutbox(2000);
  const started = performance.now();
  const again = await store.pendingOutbox(all);
  for (const entry of again) {
    await client.send(
      new DeleteItemCommand({ TableName: t.outbox.name, Key: { seq: { N: String(entry.seq) } } }),
    );
  }
  drain.perItem.push(again.length / ((performance.now() - started) / 1000));
}

// Commit-to-delivery latency: a commit with one emit to another execution, then either its own
// seqs delivered inline (relayOutbox with { seqs }) or the next relay pass over a backlog of
// other targets' entries, run at once (on Deno.cron that pass starts up to 60 s later).
const latency = { inline: [] as number[], nextPass: [] as number[] };
if (runs("latency")) {
  progress("commit-to-delivery latency, inline and by the next pass");
  await store.ackOutbox((await store.pendingOutbox(all)).map((e) => e.seq));
  const sender = doc();
  await store.save(sender);
  const backlog = doc();
  await store.save(backlog);
  for (let i = 0; i < 40; i++) {
    const inline = i % 2 === 0;
    if (!inline) {
      await store.commit(backlog, {
        emits: Array.from(
          { length: 25 },
          (_, k) => ({ target: `other-${k}`, event: newEvent("x") }),
        ),
      });
    }
    const started = performance.now();
    let at = 0;
    const { outbox } = await store.commit(sender, {
      emits: [{ target: "receiver", event: newEvent("ping") }],
    });
    const deliver = (entry: { seq: number }) => {
      if (entry.seq === outbox[0]) at = performance.now();
      return Promise.resolve();
    };
    await relayOutbox(store, deliver, inline ? { seqs: outbox } : {});
    (inline ? latency.inline : latency.nextPass).push(at - started);
  }
}

// One commit's latency with 10 ms added to every request, next to the Python seed store's.
const roundTrip = runs("round-trip")
  ? await benchLatency(`${prefix}_rt`, Math.min(rounds, 3), progress)
  : undefined;

// Heap grown by a bounded read of a 20 000-entry backlog (after a full gc around every
// request, see tests/_support/heap.ts), next to reading the backlog whole.
let heap: { limit100: number; whole: number } | undefined;
if (runs("heap")) {
  progress("heap of a bounded read of a 20000-entry backlog");
  const heapClient = testClient();
  const heapStore = new DynamoDBStore(heapClient, {
    prefix: `${prefix}_heap`,
  });
  const probe = heapProbe(heapClient);
  await heapStore.ensureTables();
  await seedOutbox(heapClient, heapStore.tables.outbox.name, 20_000);
  heap = {
    limit100: (await probe.measure(() => heapStore.pendingOutbox({ limit: 100 }))).grownBytes,
    whole: (await probe.measure(() => heapStore.pendingOutbox(all))).grownBytes,
  };
  heapClient.destroy();
}

// Calls from a cold create() to the first commit, counted by a proxy (create() builds its client).
const coldStart: Record<string, number> = {};
if (runs("cold-start")) {
  progress("calls from a cold create() to the first commit");
  const proxy = countingProxy();
  const measureCalls = async (label: string, action: () => Promise<unknown>) => {
    proxy.calls.length = 0;
    await action();
    coldStart[label] = proxy.calls.length;
  };
  const cold = (ensureTables: boolean) =>
    DynamoDBStore.create({ endpoint: proxy.url, prefix, ensureTables });
  let coldStore = await cold(true);
  await coldStore.close();
  await measureCalls("create() (ensureTables, tables exist)", async () => {
    coldStore = await cold(true);
  });
  await coldStore.close();
  await measureCalls("create({ ensureTables: false })", async () => {
    coldStore = await cold(false);
  });
  await measureCalls(
    "first untraced commit with an emit",
    () => coldStore.commit(doc(), { emits: [{ target: null, event: newEvent("cold") }] }),
  );
  await coldStore.close();
  coldStore = await cold(false);
  await measureCalls(
    "first traced commit of a new execution",
    () => coldStore.commit(doc(), { trace: { event: "start" } }),
  );
  await coldStore.close();
  await proxy.server.shutdown();
}

// Hash store.
const state = new DynamoDBStateStore(client, { tableName: `${prefix}_state` });
await state.ensureTable();
const hash = { hset: [] as number[], hgetall: [] as number[] };
for (let round = 1; round <= (runs("hash") ? rounds : 0); round++) {
  progress(`round ${round}/${rounds}: hash store`);
  const key = `session:${round}`;
  await state.hset(key, "seed", 0);
  let started = performance.now();
  for (let i = 0; i < 200; i++) await state.hset(key, `f${i % 20}`, i);
  hash.hset.push(200 / ((performance.now() - started) / 1000));
  started = performance.now();
  for (let i = 0; i < 200; i++) await state.hgetall(key);
  hash.hgetall.push(200 / ((performance.now() - started) / 1000));
}
if (runs("calls")) {
  await state.hset("session:1", "seed", 0);
  callsPerOp.hset = await perOp(50, (i) => state.hset("session:1", `f${i}`, i));
  callsPerOp.hdel = await perOp(20, (i) => state.hdel("session:1", `f${i}`));
  callsPerOp.hgetall = await perOp(20, () => state.hgetall("session:1"));
}

// @harel/dynamodb/sqs: publish throughput and commit-to-queue latency, against moto.
// Medians of at most 3 rounds: moto answers slowly (a third of a 5-round run went to this section).
const sqs = runs("sqs") ? await benchSqs(Math.min(rounds, 3), progress) : undefined;

// Report.
const machine =
  `${navigator.hardwareConcurrency} cores, ${Deno.build.os} ${Deno.build.arch}, Deno ${Deno.version.deno}`;
const commits = levels.map(({ writers }) => {
  const runs = commitRuns.get(writers)!;
  const storeRate = median(runs.store), bareRate = median(runs.bare);
  const sameRate = median(runs.same);
  return {
    writers,
    store: storeRate,
    bare: bareRate,
    ratio: storeRate / bareRate,
    sameItems: sameRate,
    sameItemsRatio: storeRate / sameRate,
  };
});
const spans = spanLevels.map(({ writers }) => {
  const runs = spanRuns.get(writers)!;
  return {
    writers,
    on: median(runs.on),
    off: median(runs.off),
    ratio: median(runs.on) / median(runs.off),
  };
});
const relay = {
  batched: median(drain.batched),
  perItem: median(drain.perItem),
  ratio: median(drain.batched) / median(drain.perItem),
  relayOutbox: median(drain.relay),
  relayOutboxRatio: median(drain.relay) / median(drain.batched),
  batchedBounded: median(drain.batchedBounded),
  relayOutboxPasses: median(drain.relayPasses),
  relayOutboxPassesRatio: median(drain.relayPasses) / median(drain.batchedBounded),
};
// The figures of the sections this run measured (all of them without --only).
const results = {
  endpoint,
  machine,
  rounds,
  ...(only === undefined ? {} : { only }),
  ...(runs("commits") ? { commits } : {}),
  ...(runs("drain") ? { relay } : {}),
  ...(runs("latency")
    ? { latency: { inlineMs: median(latency.inline), nextPassMs: median(latency.nextPass) } }
    : {}),
  ...(roundTrip ? { roundTrip } : {}),
  ...(heap ? { heap } : {}),
  ...(runs("cold-start") ? { coldStart } : {}),
  ...(runs("hash") ? { hash: { hset: median(hash.hset), hgetall: median(hash.hgetall) } } : {}),
  ...(Object.keys(callsPerOp).length > 0 ? { callsPerOp } : {}),
  ...(runs("spans") ? { spans } : {}),
  ...(commitCpu ? { commitCpu } : {}),
  ...(relayIndex ? { relayIndex } : {}),
  ...(mixed ? { mixed } : {}),
  ...(statusIndex ? { statusIndex } : {}),
  ...(writes ? { writes } : {}),
  ...(sqs ? { sqs } : {}),
};
const f = (n: number) => n.toFixed(n < 10 ? 2 : 0);
console.log(`\nMachine: ${machine}; DynamoDB at ${endpoint}; medians of ${rounds} rounds\n`);
if (runs("commits")) {
  console.log(
    "| commit (2 emits, dedupe, timer, trace) | store commits/s | bare TransactWriteItems/s | ratio | the same items bare/s | ratio |",
  );
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const c of commits) {
    console.log(
      `| ${c.writers} writer(s) | ${f(c.store)} | ${f(c.bare)} | ${c.ratio.toFixed(2)} | ${
        f(c.sameItems)
      } | ${c.sameItemsRatio.toFixed(2)} |`,
    );
  }
}
if (runs("spans")) {
  console.log("\n| commits, no exporter | spans on (commits/s) | spans off (commits/s) | ratio |");
  console.log("| --- | --- | --- | --- |");
  for (const c of spans) {
    console.log(`| ${c.writers} writer(s) | ${f(c.on)} | ${f(c.off)} | ${c.ratio.toFixed(2)} |`);
  }
}
if (commitCpu) printCommitCpu(commitCpu);
if (writes) printWrites(writes);
if (relayIndex) printRelayIndex(relayIndex);
if (mixed) printMixed(mixed);
if (statusIndex) printStatusIndex(statusIndex);
if (sqs) printSqs(sqs);
if (runs("drain")) printDrain();
if (runs("latency")) printLatency();
if (roundTrip) printRoundTrip(roundTrip);
if (heap) printHeap(heap);
if (runs("cold-start")) {
  console.log("\n| cold start (calls, counted by a proxy) | calls |\n| --- | --- |");
  for (const [op, n] of Object.entries(coldStart)) console.log(`| ${op} | ${n} |`);
}
if (runs("hash")) {
  console.log("\n| hash store (1 client, sequential) | ops/s |\n| --- | --- |");
  console.log(
    `| hset (existing key) | ${f(median(hash.hset))} |\n| hgetall | ${f(median(hash.hgetall))} |`,
  );
}
if (Object.keys(callsPerOp).length > 0) {
  console.log("\n| DynamoDB calls per operation (steady state) | calls |\n| --- | --- |");
  for (const [op, n] of Object.entries(callsPerOp)) console.log(`| ${op} | ${n} |`);
}
if (jsonPath) {
  await Deno.writeTextFile(jsonPath, JSON.stringify(results, null, 2) + "\n");
  progress(`wrote ${jsonPath}`);
}
client.destroy();

function printDrain(): void {
  console.log("\n| relay drain of 2000 entries | entries/s |\n| --- | --- |");
  console.log(`| pendingOutbox + batched ackOutbox | ${f(relay.batched)} |`);
  console.log(`| pendingOutbox + one DeleteItem each | ${f(relay.perItem)} |`);
  console.log(`| ratio | ${relay.ratio.toFixed(2)} |`);
  console.log(
    "\n| relay drain of 2000 entries over 50 targets, no-op deliver | entries/s | ratio |",
  );
  console.log("| --- | --- | --- |");
  console.log(`| limit: Infinity: pendingOutbox + batched ackOutbox | ${f(relay.batched)} | |`);
  console.log(
    `| limit: Infinity: relayOutbox (one pass) | ${f(relay.relayOutbox)} | ${
      relay.relayOutboxRatio.toFixed(2)
    } |`,
  );
  console.log(
    `| default limit 1000, passes until empty: pendingOutbox + batched ackOutbox | ${
      f(relay.batchedBounded)
    } | |`,
  );
  console.log(
    `| default limit 1000, passes until empty: relayOutbox | ${f(relay.relayOutboxPasses)} | ${
      relay.relayOutboxPassesRatio.toFixed(2)
    } |`,
  );
}

function printLatency(): void {
  console.log("\n| commit-to-delivery latency, one emit (median of 20) | ms |\n| --- | --- |");
  console.log(
    `| inline: relayOutbox({ seqs }) right after the commit | ${f(median(latency.inline))} |`,
  );
  console.log(
    `| next relay pass, run at once over a 25-entry backlog (+ its schedule: up to 60 s on Deno.cron) | ${
      f(median(latency.nextPass))
    } |`,
  );
}

function printHeap(heap: { limit100: number; whole: number }): void {
  const mb = (bytes: number) => (bytes / 1e6).toFixed(2);
  console.log("\n| heap grown, 20 000-entry outbox backlog | MB |\n| --- | --- |");
  console.log(`| pendingOutbox({ limit: 100 }) | ${mb(heap.limit100)} |`);
  console.log(`| pendingOutbox({ limit: Infinity }) (the whole backlog) | ${mb(heap.whole)} |`);
}
