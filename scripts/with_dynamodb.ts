// Usage:
//   deno task dynamodb                      start a local DynamoDB, print its endpoint, wait for Ctrl-C
//   scripts/with_dynamodb.ts -- CMD ARGS    run CMD with DYNAMODB_ENDPOINT set, then stop what was started
import { bringUpDynamoDB, type RunningDynamoDB } from "./local_dynamodb.ts";

const dash = Deno.args.indexOf("--");
const command = dash === -1 ? Deno.args : Deno.args.slice(dash + 1);

let service: RunningDynamoDB | undefined;
let child: Deno.ChildProcess | undefined;
let stopping: Promise<void> | undefined;
const stop = () => (stopping ??= service?.stop() ?? Promise.resolve());

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
  service = await bringUpDynamoDB();
  console.error(
    `[dynamodb] ${service.kind} answers at ${service.endpoint} (${Date.now() - started} ms)`,
  );
  if (command.length === 0) {
    console.log(`DYNAMODB_ENDPOINT=${service.endpoint}`);
    console.error("[dynamodb] running in the foreground; Ctrl-C stops it");
    await new Promise(() => {}); // until a signal
  }
  const [cmd, ...args] = command;
  child = new Deno.Command(cmd!, {
    args,
    env: { DYNAMODB_ENDPOINT: service.endpoint },
    stdin: "inherit",
  }).spawn();
  code = (await child.status).code;
} catch (error) {
  console.error(`[dynamodb] ${error instanceof Error ? error.message : error}`);
} finally {
  await stop();
}
Deno.exit(code);
