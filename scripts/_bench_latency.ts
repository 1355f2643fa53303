// deno task bench's round-trip section: one commit's latency when every request to DynamoDB
// takes 10 ms more (a proxy that holds each request 10 ms before passing it on), next to the
// Python seed store's commit of the same changes through the same proxy
// (scripts/_bench_latency.py: a counter ADD, then its TransactWriteItems; with a trace step, its
// Query, Put and Delete after). A steady-state commit of ours is one TransactWriteItems and waits
// for nothing else. Medians of every commit of the rounds, each round's slices interleaved.
import { DynamoDBStore, newEvent, newExecution } from "../mod.ts";
import { buildClient } from "../src/dynamo/connect.ts";
import { countingProxy } from "../tests/_support/counting_proxy.ts";

/** One workload's figures: milliseconds per commit (medians), ours and the seed's. */
export interface LatencyRow {
  label: string;
  oursMs: number;
  seedMs: number;
  ratio: number;
}

/** The milliseconds every request is held. */
export const ADDED_MS = 10;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** Runs `rounds` rounds of `perRound` commits per side and workload. */
export async function benchLatency(
  prefix: string,
  rounds: number,
  progress: (line: string) => void = () => {},
  perRound = 30,
): Promise<LatencyRow[]> {
  const proxy = countingProxy(0, () => new Promise((r) => setTimeout(r, ADDED_MS)));
  const client = buildClient({ endpoint: proxy.url });
  const store = new DynamoDBStore(client, { prefix });
  const script = new URL("./_bench_latency.py", import.meta.url).pathname;
  const cases = [
    { label: "2 emits, dedupe mark", trace: false },
    { label: "2 emits, dedupe mark, trace step", trace: true },
  ];
  const ours = cases.map(() => [] as number[]), seed = cases.map(() => [] as number[]);
  try {
    await store.ensureTables();
    for (let round = 1; round <= rounds; round++) {
      progress(`round ${round}/${rounds}: commit latency with ${ADDED_MS} ms added per request`);
      for (const [k, { trace }] of cases.entries()) {
        const timeOurs = async () => {
          const exe = newExecution({ definition_id: "order", status: "RUNNING", context: {} });
          // The first commits of an execution reserve seq blocks and read the ring's end.
          for (let i = 0; i <= perRound + 1; i++) {
            const started = performance.now();
            await store.commit(exe, {
              emits: [
                { target: "peer", event: newEvent("order.step", { i }) },
                { target: null, event: newEvent("order.audit", { i }) },
              ],
              processedEventId: crypto.randomUUID(),
              ...(trace ? { trace: { event: "order.step", i } } : {}),
            });
            if (i > 1) ours[k]!.push(performance.now() - started);
          }
        };
        const timeSeed = async () => {
          const args = [script, proxy.url, prefix, String(perRound), ...(trace ? ["--trace"] : [])];
          const { code, stdout, stderr } = await new Deno.Command("python3", { args }).output();
          if (code !== 0) throw new Error(`_bench_latency.py: ${new TextDecoder().decode(stderr)}`);
          seed[k]!.push(...(JSON.parse(new TextDecoder().decode(stdout)).ms as number[]));
        };
        if (round % 2) await timeOurs().then(timeSeed);
        else await timeSeed().then(timeOurs);
      }
    }
  } finally {
    await store.close();
    client.destroy();
    await proxy.server.shutdown();
  }
  return cases.map(({ label }, k) => {
    const oursMs = median(ours[k]!), seedMs = median(seed[k]!);
    return { label, oursMs, seedMs, ratio: oursMs / seedMs };
  });
}

/** The section's table, as Markdown. */
export function printLatency(rows: LatencyRow[]): void {
  console.log(
    `\n| commit, 1 writer, ${ADDED_MS} ms added per request | ours, ms | the seed's Python store, ms | ratio |`,
  );
  console.log("| --- | --- | --- | --- |");
  for (const r of rows) {
    console.log(
      `| ${r.label} | ${r.oursMs.toFixed(1)} | ${r.seedMs.toFixed(1)} | ${r.ratio.toFixed(2)} |`,
    );
  }
}

if (import.meta.main) {
  const args = Deno.args;
  const rounds = args.includes("--rounds") ? Number(args[args.indexOf("--rounds") + 1]) : 3;
  printLatency(
    await benchLatency(
      `bench_rt_${Date.now().toString(36)}`,
      rounds,
      (line) => console.error(`[bench] ${line}`),
    ),
  );
}
