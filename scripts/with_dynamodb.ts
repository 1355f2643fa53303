// Usage:
//   deno task dynamodb                      start a local DynamoDB, print its endpoint, wait for Ctrl-C
//   scripts/with_dynamodb.ts -- CMD ARGS    run CMD with DYNAMODB_ENDPOINT set, then stop what was started
//   scripts/with_dynamodb.ts --sqs ...      the same, with moto's SQS too (SQS_ENDPOINT): the tests,
//                                           the bench and `deno task dynamodb` pass it
import { bringUpDynamoDB, type RunningDynamoDB } from "./local_dynamodb.ts";
import { bringUpSqs, type RunningSqs } from "./local_sqs.ts";

const dash = Deno.args.indexOf("--");
const own = dash === -1 ? Deno.args : Deno.args.slice(0, dash);
const withSqs = own.includes("--sqs");
const command = dash === -1
  ? Deno.args.filter((arg) => arg !== "--sqs")
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
    env: { DYNAMODB_ENDPOINT: service!.endpoint, ...(sqs ? { SQS_ENDPOINT: sqs.endpoint } : {}) },
    stdin: "inherit",
  }).spawn();
  code = (await child.status).code;
} catch (error) {
  console.error(`[dynamodb] ${error instanceof Error ? error.message : error}`);
} finally {
  await stop();
}
Deno.exit(code);
