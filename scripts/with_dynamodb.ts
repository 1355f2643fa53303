// Usage:
//   deno task dynamodb                      start a local DynamoDB, print its endpoint, wait for Ctrl-C
//   scripts/with_dynamodb.ts -- CMD ARGS    run CMD with DYNAMODB_ENDPOINT set, then stop what was started
//   scripts/with_dynamodb.ts --sqs ...      the same, with moto's SQS too (SQS_ENDPOINT): the tests,
//                                           the bench and `deno task dynamodb` pass it
//   scripts/with_dynamodb.ts --progress -- deno test ...
//                                           numbers the test files as they start and prints a
//                                           heartbeat while a test runs long (_test_progress.ts)
import { bringUpDynamoDB, type RunningDynamoDB } from "./local_dynamodb.ts";
import { bringUpSqs, type RunningSqs } from "./local_sqs.ts";
import { countTestFiles, HEARTBEAT_MS, TestProgress } from "./_test_progress.ts";

const OWN = ["--sqs", "--progress"];
const dash = Deno.args.indexOf("--");
const own = dash === -1 ? Deno.args : Deno.args.slice(0, dash);
const withSqs = own.includes("--sqs");
const withProgress = own.includes("--progress");
const command = dash === -1
  ? Deno.args.filter((arg) => !OWN.includes(arg))
  : Deno.args.slice(dash + 1);

let service: RunningDynamoDB | undefined;
let sqs: RunningSqs | undefined;
let child: Deno.ChildProcess | undefined;
let stopping: Promise<void> | undefined;
const stop = () => (stopping ??= Promise.all([service?.stop(), sqs?.stop()]).then(() => {}));

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, async () => {
    if (child) {
      // The child sees a terminal's Ctrl-C itself; a kill aimed at us is passed on.
      try {
        child.kill(signal);
      } catch { /* already exited */ }
      return; // cleanup follows when it exits
    }
    await stop();
    Deno.exit(130);
  });
}

let code = 1;
try {
  const started = Date.now();
  const [dynamodb, queue] = await Promise.allSettled([
    bringUpDynamoDB(),
    withSqs ? bringUpSqs() : Promise.resolve(undefined),
  ]);
  if (dynamodb.status === "fulfilled") service = dynamodb.value;
  if (queue.status === "fulfilled") sqs = queue.value;
  if (dynamodb.status === "rejected") throw dynamodb.reason;
  if (queue.status === "rejected") throw queue.reason;
  console.error(
    `[dynamodb] ${service!.kind} answers at ${service!.endpoint}${
      sqs ? `, SQS (${sqs.kind}) at ${sqs.endpoint}` : ""
    } (${Date.now() - started} ms)`,
  );
  if (command.length === 0) {
    console.log(`DYNAMODB_ENDPOINT=${service!.endpoint}`);
    if (sqs) console.log(`SQS_ENDPOINT=${sqs.endpoint}`);
    console.error("[dynamodb] running in the foreground; Ctrl-C stops it");
    await new Promise(() => {}); // until a signal
  }
  const [cmd, ...args] = command;
  child = new Deno.Command(cmd!, {
    args,
    env: {
      DYNAMODB_ENDPOINT: service!.endpoint,
      ...(sqs ? { SQS_ENDPOINT: sqs.endpoint } : {}),
      // The heartbeat says it every 10 s; deno test's own warning (at 60 s) would break its line.
      ...(withProgress
        ? { DENO_SLOW_TEST_TIMEOUT: Deno.env.get("DENO_SLOW_TEST_TIMEOUT") ?? "86400" }
        : {}),
    },
    stdin: "inherit",
    stdout: withProgress ? "piped" : "inherit",
  }).spawn();
  const shown = withProgress ? showProgress(child.stdout, args.slice(1)) : Promise.resolve();
  code = (await child.status).code;
  await shown;
} catch (error) {
  console.error(`[dynamodb] ${error instanceof Error ? error.message : error}`);
} finally {
  await stop();
}
Deno.exit(code);

/** Passes `deno test ARGS`'s output on through a TestProgress, ticking it every second. */
async function showProgress(output: ReadableStream<Uint8Array>, testArgs: string[]): Promise<void> {
  const encoder = new TextEncoder();
  const write = (text: string) => {
    const bytes = encoder.encode(text);
    for (let at = 0; at < bytes.length;) at += Deno.stdout.writeSync(bytes.subarray(at));
  };
  const heartbeatMs = Number(Deno.env.get("HAREL_TEST_HEARTBEAT_S") ?? HEARTBEAT_MS / 1000) * 1000;
  const progress = new TestProgress({ total: countTestFiles(testArgs), write, heartbeatMs });
  const timer = setInterval(() => progress.tick(), Math.min(1000, heartbeatMs));
  try {
    for await (const chunk of output.pipeThrough(new TextDecoderStream())) progress.feed(chunk);
  } finally {
    clearInterval(timer);
  }
}
