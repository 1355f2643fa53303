// deno task bench's figures for @harel/dynamodb/sqs, against $SQS_ENDPOINT (moto, which
// deno task bench starts) and $DYNAMODB_ENDPOINT: publish throughput of SqsQueue.publish next to a
// bare SendMessage of the same body (sequential and 16 in flight), a relay() pass draining the
// outbox next to bare SendMessages of the same entries, and commit-to-queue latency (a commit
// with one emit, then relay({ outbox: { seqs } })) next to a commit followed by a bare SendMessage.
// Every ratio is of figures measured in the same run. Run alone:
//   deno run -A scripts/_bench_sqs.ts   (with both endpoints set)
import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBStore, type Event, newEvent, newExecution } from "../mod.ts";
import { FleetClient, SqsQueue } from "../src/sqs.ts";
import { messageBody } from "../src/sqs/_wire.ts";

/** The figures of this section. */
export interface SqsFigures {
  publish: { inFlight: number; publish: number; bare: number; ratio: number }[];
  drain: { entries: number; relay: number; bare: number; ratio: number };
  latency: {
    relayMedianMs: number;
    relayP95Ms: number;
    bareMedianMs: number;
    bareP95Ms: number;
    ratio: number;
  };
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const median = (xs: number[]) => quantile(xs, 0.5);

/** Runs `n` calls of `call`, `inFlight` at a time; answers calls per second. */
async function rate(n: number, inFlight: number, call: (i: number) => Promise<unknown>) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) await call(next++);
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

/** The section: `rounds` rounds, medians. */
export async function benchSqs(
  rounds: number,
  progress: (line: string) => void,
): Promise<SqsFigures> {
  const sqsEndpoint = Deno.env.get("SQS_ENDPOINT");
  const dynamoEndpoint = Deno.env.get("DYNAMODB_ENDPOINT");
  if (!sqsEndpoint || !dynamoEndpoint) {
    throw new Error("SQS_ENDPOINT and DYNAMODB_ENDPOINT must be set: run `deno task bench`");
  }
  const tag = `bench_${Date.now().toString(36)}`;
  // moto checks a send's deduplication id against every message the queue holds, so a send gets
  // slower as a queue fills: each measurement gets an empty queue of its own.
  let made = 0;
  const queues: SqsQueue[] = [];
  const fresh = async () => {
    const q = await SqsQueue.create({ endpoint: sqsEndpoint, queueName: `${tag}_${made++}.fifo` });
    queues.push(q);
    return q;
  };
  // A fleet's store shares its tables with Python workers (FleetClient refuses any other); its
  // streamed tables get a DynamoDB Local database of their own (another region), where no earlier
  // stream's records slow their writes (docs/development.md).
  await using store = await DynamoDBStore.create({
    endpoint: dynamoEndpoint,
    region: "bench-sqs",
    prefix: tag,
    otherWriters: true,
  });
  const bare = new SQSClient({
    endpoint: sqsEndpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  const send = (url: string, group: string, event: Event) =>
    bare.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: messageBody(event),
        MessageGroupId: group,
        MessageDeduplicationId: crypto.randomUUID(),
      }),
    );
  const event = newEvent("bench.step", { i: 1, note: "a typical small event" });
  try {
    const publish: SqsFigures["publish"] = [];
    for (const inFlight of [1, 16]) {
      const n = inFlight === 1 ? 100 : 300;
      const ours: number[] = [], theirs: number[] = [];
      for (let r = 0; r < rounds; r++) {
        progress(`sqs publish, ${inFlight} in flight, round ${r + 1}/${rounds}`);
        // Alternated, so a drift of the machine weighs on both.
        const plain = await fresh();
        theirs.push(await rate(n, inFlight, (i) => send(plain.url, `g${i % 64}`, event)));
        const queue = await fresh();
        ours.push(await rate(n, inFlight, (i) => queue.publish(`g${i % 64}`, event)));
      }
      publish.push({
        inFlight,
        publish: median(ours),
        bare: median(theirs),
        ratio: median(ours) / median(theirs),
      });
    }

    const entries = 200;
    const drainRelay: number[] = [], drainBare: number[] = [];
    for (let r = 0; r < rounds; r++) {
      progress(`sqs relay drain of ${entries} entries, round ${r + 1}/${rounds}`);
      const targets = Array.from({ length: 64 }, (_, i) => `t${r}_${i}`);
      const exe = newExecution({ definition_id: "bench", status: "RUNNING" });
      await store.save(exe);
      for (let i = 0; i < entries; i += 50) {
        await store.commit(exe, {
          emits: Array.from({ length: 50 }, (_, j) => ({
            target: targets[(i + j) % targets.length]!,
            event: newEvent("bench.emit", { i: i + j }),
          })),
        });
      }
      const pending = await store.pendingOutbox({ limit: entries });
      const plain = await fresh();
      drainBare.push(
        await rate(
          pending.length,
          16,
          (i) => send(plain.url, pending[i]!.targetId!, pending[i]!.event),
        ),
      );
      const fleet = new FleetClient({ store, queue: await fresh() });
      const started = performance.now();
      const report = await fleet.relay({ outbox: { limit: entries } });
      if (report.outbox.delivered !== entries) {
        throw new Error(`relay delivered ${report.outbox.delivered} of ${entries}`);
      }
      drainRelay.push(entries / ((performance.now() - started) / 1000));
    }

    const viaRelay: number[] = [], viaBare: number[] = [];
    const runs = Math.max(20, rounds * 5);
    progress(`sqs commit-to-queue latency, ${runs} commits each way`);
    const exe = newExecution({ definition_id: "bench", status: "RUNNING" });
    await store.save(exe);
    const fleet = new FleetClient({ store, queue: await fresh() });
    const plainQueue = await fresh();
    for (let i = 0; i < runs; i++) {
      let started = performance.now();
      const { outbox } = await store.commit(exe, {
        emits: [{ target: exe.id, event: newEvent("bench.latency") }],
      });
      const report = await fleet.relay({ outbox: { seqs: outbox } });
      if (report.outbox.delivered !== 1) throw new Error("the entry was not published");
      viaRelay.push(performance.now() - started);
      started = performance.now();
      const plain = newEvent("bench.latency");
      await store.commit(exe);
      await send(plainQueue.url, exe.id, plain);
      viaBare.push(performance.now() - started);
    }
    return {
      publish,
      drain: {
        entries,
        relay: median(drainRelay),
        bare: median(drainBare),
        ratio: median(drainRelay) / median(drainBare),
      },
      latency: {
        relayMedianMs: median(viaRelay),
        relayP95Ms: quantile(viaRelay, 0.95),
        bareMedianMs: median(viaBare),
        bareP95Ms: quantile(viaBare, 0.95),
        ratio: median(viaRelay) / median(viaBare),
      },
    };
  } finally {
    bare.destroy();
    for (const q of queues) await q.close();
  }
}

/** The section's tables. */
export function printSqs(figures: SqsFigures): void {
  const f = (n: number) => n.toFixed(n < 10 ? 2 : 0);
  console.log(
    "\n| SQS publish (moto) | SqsQueue.publish (msg/s) | bare SendMessage (msg/s) | ratio |",
  );
  console.log("| --- | --- | --- | --- |");
  for (const p of figures.publish) {
    console.log(
      `| ${p.inFlight} in flight | ${f(p.publish)} | ${f(p.bare)} | ${p.ratio.toFixed(2)} |`,
    );
  }
  const d = figures.drain;
  console.log(
    `| relay() drain of ${d.entries} outbox entries (16 targets at once) | ${f(d.relay)} | ${
      f(d.bare)
    } (same entries, 16 in flight) | ${d.ratio.toFixed(2)} |`,
  );
  const l = figures.latency;
  console.log("\n| commit to queue | median ms | p95 ms |\n| --- | --- | --- |");
  console.log(
    `| commit + relay({ outbox: { seqs } }) | ${f(l.relayMedianMs)} | ${f(l.relayP95Ms)} |`,
  );
  console.log(`| commit + bare SendMessage | ${f(l.bareMedianMs)} | ${f(l.bareP95Ms)} |`);
  console.log(`| ratio (medians) | ${l.ratio.toFixed(2)} | |`);
}

if (import.meta.main) {
  const rounds = Deno.args.includes("--rounds")
    ? Number(Deno.args[Deno.args.indexOf("--rounds") + 1])
    : 3;
  const t0 = performance.now();
  const log = (line: string) =>
    console.error(`[bench] ${((performance.now() - t0) / 1000).toFixed(1)} s: ${line}`);
  printSqs(await benchSqs(rounds, log));
}
