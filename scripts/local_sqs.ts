// Brings up an SQS API for tests and benchmarks: $SQS_ENDPOINT when set (used as is), else
// moto's server (`python3 -m moto.server`) on a free loopback port. Used by with_dynamodb.ts.
import { ListQueuesCommand } from "@aws-sdk/client-sqs";
import { buildSqsClient, untilSqsAnswers } from "../src/sqs/_connect.ts";
import { freePort } from "./local_dynamodb.ts";

/** A running SQS and how to stop what this script started. */
export interface RunningSqs {
  endpoint: string;
  /** "endpoint" (given) or "moto". */
  kind: string;
  stop(): Promise<void>;
}

/** Waits until the SQS at `endpoint` answers a ListQueues. */
export async function waitUntilSqsAnswers(endpoint: string, deadlineMs = 60_000): Promise<void> {
  const client = buildSqsClient({ endpoint });
  try {
    await untilSqsAnswers(
      (signal) => client.send(new ListQueuesCommand({}), { abortSignal: signal }),
      { endpoint, deadlineMs },
      "us-east-1",
    );
  } finally {
    client.destroy();
  }
}

/** Starts moto's server on a free loopback port and waits until its SQS answers. */
export async function startMoto(): Promise<RunningSqs> {
  const port = freePort();
  let process: Deno.ChildProcess;
  try {
    process = new Deno.Command("python3", {
      args: ["-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    throw new Error(
      "cannot start moto for the SQS tests: python3 is not on the PATH " +
        "(install Python 3 and `pip install 'moto[server]' boto3 pydantic`, or set SQS_ENDPOINT)",
      { cause: error },
    );
  }
  const endpoint = `http://127.0.0.1:${port}`;
  let stderr = "";
  const drained = process.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (stderr = (stderr + chunk).slice(-4000)) }),
  ).catch(() => {});
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      process.kill("SIGTERM");
    } catch { /* already gone */ }
    const killer = setTimeout(() => {
      try {
        process.kill("SIGKILL");
      } catch { /* already gone */ }
    }, 5_000);
    await process.status;
    clearTimeout(killer);
    await drained;
  };
  const exited = process.status.then((s) => {
    if (!stopped) throw new Error(`moto exited early with code ${s.code}`);
  });
  try {
    await Promise.race([waitUntilSqsAnswers(endpoint), exited]);
  } catch (error) {
    await stop();
    throw new Error(
      `moto's SQS did not come up on ${endpoint} (is moto installed? ` +
        `\`pip install 'moto[server]'\`)${stderr ? `:\n${stderr}` : ""}`,
      { cause: error },
    );
  }
  return { endpoint, kind: "moto", stop };
}

/** $SQS_ENDPOINT, or moto started here. */
export async function bringUpSqs(): Promise<RunningSqs> {
  const given = Deno.env.get("SQS_ENDPOINT");
  if (given) return { endpoint: given, kind: "endpoint", stop: async () => {} };
  return await startMoto();
}
