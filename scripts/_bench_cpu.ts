// deno task bench's CPU figure of a commit: the store's commit next to the AWS SDK's send
// of the very same transaction, both through a client whose request handler answers at once
// (a canned 200, no network), so what is timed is CPU: the store's planning, checks and layout
// on top of the SDK's serialization, signing and parsing. Runs alone too, with no DynamoDB:
// `deno run --allow-env --allow-read --allow-sys=osRelease scripts/_bench_cpu.ts [--rounds N]`.
import { DynamoDBClient, TransactWriteItemsCommand } from "@aws-sdk/client-dynamodb";
import type { TransactWriteItemsCommandInput } from "@aws-sdk/client-dynamodb";
import process from "node:process";
import {
  type CommitChanges,
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
} from "../mod.ts";

/** One row: CPU µs per commit and per bare send, and their ratio (medians of the slices). */
export interface CpuRow {
  label: string;
  commitMicros: number;
  bareMicros: number;
  ratio: number;
}

/** A client whose every call is answered at once: `{}`, and a counter block for UpdateItem. */
function instantClient(
  captured: string[] | null,
): { client: DynamoDBClient; capture: boolean } {
  const state = { capture: false, counter: 0 };
  const encoder = new TextEncoder(), decoder = new TextDecoder();
  const requestHandler = {
    handle(request: { headers: Record<string, string>; body?: unknown }) {
      const target = request.headers["x-amz-target"] ?? "";
      let body = "{}";
      if (target.endsWith(".UpdateItem")) {
        // A seq block (src/execution/commit/_seq_blocks.ts reads the counter's `n` it returns).
        body = JSON.stringify({ Attributes: { n: { N: String(state.counter += 1_000_000) } } });
      } else if (target.endsWith(".Query")) body = '{"Items":[],"Count":0}';
      else if (state.capture && captured && target.endsWith(".TransactWriteItems")) {
        const sent = request.body;
        captured.push(typeof sent === "string" ? sent : decoder.decode(sent as Uint8Array));
      }
      return Promise.resolve({
        response: {
          statusCode: 200,
          headers: { "content-type": "application/x-amz-json-1.0" },
          body: encoder.encode(body),
        },
      });
    },
  };
  const client = new DynamoDBClient({
    region: "us-east-1",
    endpoint: "http://instant.invalid",
    credentials: { accessKeyId: "bench", secretAccessKey: "bench" },
    requestHandler,
    maxAttempts: 1,
  });
  return Object.assign(state, { client });
}

const doc = () =>
  newExecution({
    definition_id: "order",
    status: "RUNNING",
    context: { customer: "c-1", lines: [{ sku: "a", qty: 2 }, { sku: "b", qty: 1 }], total: 42 },
  });

/** The commits timed: the (2 emits and a dedupe mark) and the bench's full one. */
const CASES: { label: string; changes: (i: number) => CommitChanges }[] = [
  {
    label: "2 emits, dedupe mark",
    changes: (i) => ({
      emits: [
        { target: "peer", event: newEvent("order.step", { i }) },
        { target: null, event: newEvent("order.audit", { i }) },
      ],
      processedEventId: crypto.randomUUID(),
    }),
  },
  {
    label: "2 emits, dedupe mark, timer, trace step",
    changes: (i) => ({
      emits: [
        { target: "peer", event: newEvent("order.step", { i }) },
        { target: null, event: newEvent("order.audit", { i }) },
      ],
      processedEventId: crypto.randomUUID(),
      timers: [{ action: "schedule", path: "order.waiting", fireAt: 2e9 + i }],
      trace: { event: "order.step", i },
    }),
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A case set up: its store and client, the execution, and the transactions it sent. */
interface Setup {
  label: string;
  changes: (i: number) => CommitChanges;
  store: DynamoDBStore;
  commitClient: DynamoDBClient;
  bareClient: DynamoDBClient;
  exe: Execution;
  captured: string[];
  commit: number[];
  bare: number[];
  ratios: number[];
}

/** Process CPU time (user + system, all threads) `run` takes, µs: other processes do not count. */
async function cpu(run: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  await run();
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

/**
 * Times `perRound` commits of one execution per case and round, and the SDK sending the
 * transactions those commits sent (captured from the same handler), in alternating slices, so
 * that both meet the same machine; every case is set up and warmed before any is timed.
 */
export async function benchCommitCpu(
  rounds: number,
  progress: (line: string) => void = () => {},
  perRound = 2000,
): Promise<CpuRow[]> {
  const setups: Setup[] = [];
  // The bare side sends the same transactions as fresh objects, parsed before the clock
  // starts, as a caller that builds its own items would: sending one object again would let
  // the SDK reuse what V8 caches on its strings (their hashes), which no real send gets.
  const parse = (body: string) => JSON.parse(body) as TransactWriteItemsCommandInput;
  for (const { label, changes } of CASES) {
    progress(`commit CPU: warming up, ${label}`);
    const captured: string[] = [];
    const instant = instantClient(captured);
    const store = new DynamoDBStore(instant.client, { prefix: "cpu" });
    const exe = doc();
    // Warm up (JIT, seq block, the trace ring's end), then capture one round's transactions.
    for (let i = 0; i < perRound; i++) await store.commit(exe, changes(i));
    instant.capture = true;
    for (let i = 0; i < perRound; i++) await store.commit(exe, changes(i));
    instant.capture = false;
    const bareClient = instantClient(null).client;
    for (const body of captured) await bareClient.send(new TransactWriteItemsCommand(parse(body)));
    const commitClient = instant.client;
    setups.push({
      label,
      changes,
      store,
      commitClient,
      bareClient,
      exe,
      captured,
      commit: [],
      bare: [],
      ratios: [],
    });
  }
  const slices = 10, perSlice = Math.ceil(perRound / slices);
  for (let round = 1; round <= rounds; round++) {
    progress(`round ${round}/${rounds}: commit CPU`);
    for (const setup of setups) {
      for (let slice = 0; slice < slices; slice++) {
        const changeSets = Array.from({ length: perSlice }, (_, i) => setup.changes(i));
        const batch = setup.captured.slice(slice * perSlice, (slice + 1) * perSlice).map(parse);
        let commit = 0, bare = 0;
        const timeCommits = async () => {
          commit = await cpu(async () => {
            for (const set of changeSets) await setup.store.commit(setup.exe, set);
          }) / changeSets.length;
        };
        const timeBare = async () => {
          bare = await cpu(async () => {
            for (const input of batch) {
              await setup.bareClient.send(new TransactWriteItemsCommand(input));
            }
          }) / batch.length;
        };
        if ((round + slice) % 2) await timeCommits().then(timeBare);
        else await timeBare().then(timeCommits);
        // Each slice of commits against the bare slice next to it in time: the same machine.
        setup.commit.push(commit);
        setup.bare.push(bare);
        setup.ratios.push(commit / bare);
      }
    }
  }
  return setups.map((setup) => {
    setup.commitClient.destroy();
    setup.bareClient.destroy();
    return {
      label: setup.label,
      commitMicros: median(setup.commit),
      bareMicros: median(setup.bare),
      ratio: median(setup.ratios),
    };
  });
}

/** The section's table, as Markdown. */
export function printCommitCpu(rows: CpuRow[]): void {
  console.log(
    "\n| commit, 1 writer, instant request handler | commit, CPU µs | bare send, CPU µs | commit / bare |",
  );
  console.log("| --- | --- | --- | --- |");
  for (const r of rows) {
    console.log(
      `| ${r.label} | ${r.commitMicros.toFixed(0)} | ${r.bareMicros.toFixed(0)} | ${
        r.ratio.toFixed(2)
      } |`,
    );
  }
}

if (import.meta.main) {
  const args = Deno.args;
  const rounds = args.includes("--rounds") ? Number(args[args.indexOf("--rounds") + 1]) : 5;
  printCommitCpu(await benchCommitCpu(rounds, (line) => console.error(`[bench] ${line}`)));
}
