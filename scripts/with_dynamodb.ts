// Usage:
//   deno task dynamodb                      start a local DynamoDB, print its endpoint, wait for Ctrl-C
//   scripts/with_dynamodb.ts -- CMD ARGS    run CMD with DYNAMODB_ENDPOINT set, then stop what was started
//   scripts/with_dynamodb.ts --sqs ...      the same, with moto's SQS too (SQS_ENDPOINT): the tests,
//                                           the bench and `deno task dynamodb` pass it
//   scripts/with_dynamodb.ts --progress -- deno test ...
//                                           numbers the test files as they start and prints a
//                                           heartbeat while a test runs long (_test_progress.ts)
//   scripts/with_dynamodb.ts --parallel -- deno test ...
//                                           runs the test files in two groups: those that share
//                                           nothing DENO_JOBS at a time (default 4), then the few
//                                           listed in _test_groups.ts one by one; then the ten
//                                           slowest files (their tests' time) and one summary line
import { bringUpDynamoDB, type RunningDynamoDB, SUITE_JVM_OPTIONS } from "./local_dynamodb.ts";
import { bringUpSqs, type RunningSqs } from "./local_sqs.ts";
import { countTestFiles, elapsed, HEARTBEAT_MS, TestProgress } from "./_test_progress.ts";
import {
  DEFAULT_JOBS,
  fileTimes,
  slowestFiles,
  summaryLine,
  summaryOf,
  testGroups,
  type TestSummary,
} from "./_test_groups.ts";

const OWN = ["--sqs", "--progress", "--parallel"];
const dash = Deno.args.indexOf("--");
const own = dash === -1 ? Deno.args : Deno.args.slice(0, dash);
const withSqs = own.includes("--sqs");
const withProgress = own.includes("--progress");
const inGroups = own.includes("--parallel");
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
    bringUpDynamoDB(inGroups ? { javaOptions: SUITE_JVM_OPTIONS } : {}),
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
  const env = {
    DYNAMODB_ENDPOINT: service!.endpoint,
    ...(sqs ? { SQS_ENDPOINT: sqs.endpoint } : {}),
    // The heartbeat says it every 10 s; deno test's own warning (at 60 s) would break its line.
    ...(withProgress
      ? { DENO_SLOW_TEST_TIMEOUT: Deno.env.get("DENO_SLOW_TEST_TIMEOUT") ?? "86400" }
      : {}),
  };
  const [cmd, ...args] = command;
  if (!inGroups) {
    const progress = withProgress ? newProgress(countTestFiles(args.slice(1))) : undefined;
    code = await runChild(cmd!, args, env, progress);
  } else {
    if (args[0] !== "test") throw new Error("--parallel runs a `deno test ...` command");
    const root = new URL("..", import.meta.url).pathname;
    const groups = testGroups(args.slice(1), root);
    const progress = withProgress
      ? newProgress(groups.reduce((n, group) => n + group.files.length, 0))
      : undefined;
    // The default tables as the run found them, for tests/zz_default_tables_test.ts (the
    // groups are two processes: the first test file cannot record them for both).
    const { baselineOf, BASELINE } = await import("../tests/_support/default_tables.ts");
    const baseline = Deno.env.get(BASELINE) ??
      await baselineOf(service!.endpoint, "scripts/with_dynamodb.ts");
    const jobs = Deno.env.get("DENO_JOBS") ?? String(DEFAULT_JOBS);
    const summaries: TestSummary[] = [];
    // Each group's JUnit report, for the ten slowest files at the end.
    const reports = groups.map(() => Deno.makeTempFileSync({ suffix: ".xml" }));
    code = 0;
    for (const [i, group] of groups.entries()) {
      let output = "";
      const groupCode = await runChild(
        cmd!,
        ["test", `--junit-path=${reports[i]}`, ...group.args],
        { ...env, DENO_JOBS: jobs, [BASELINE]: baseline },
        progress,
        (text) => void (output = (output + text).slice(-4096)),
      );
      if (groupCode !== 0) code = groupCode;
      const summary = summaryOf(output);
      if (summary === null && code === 0) code = 1;
      if (summary) summaries.push(summary);
    }
    const read = reports.map((path) => {
      try {
        const xml = Deno.readTextFileSync(path);
        Deno.removeSync(path);
        return xml;
      } catch {
        return ""; // a group that did not get to write it
      }
    });
    const slowest = slowestFiles(fileTimes(read));
    if (slowest.length > 0) {
      console.log(`\nThe ${slowest.length} slowest test files (their tests' time):`);
      console.log(slowest.join("\n"));
    }
    if (groups.length > 1) {
      console.log(`\n${summaryLine(summaries, code === 0, elapsed(Date.now() - started))}`);
    }
  }
} catch (error) {
  console.error(`[dynamodb] ${error instanceof Error ? error.message : error}`);
} finally {
  await stop();
}
Deno.exit(code);

/** A TestProgress writing to stdout, ticked every second until the run ends. */
function newProgress(total: number): TestProgress {
  const encoder = new TextEncoder();
  const write = (text: string) => {
    const bytes = encoder.encode(text);
    for (let at = 0; at < bytes.length;) at += Deno.stdout.writeSync(bytes.subarray(at));
  };
  const heartbeatMs = Number(Deno.env.get("HAREL_TEST_HEARTBEAT_S") ?? HEARTBEAT_MS / 1000) * 1000;
  const progress = new TestProgress({ total, write, heartbeatMs });
  Deno.unrefTimer(setInterval(() => progress.tick(), Math.min(1000, heartbeatMs)));
  return progress;
}

/**
 * Runs `cmd args` with `env` and waits for it; with a progress, its output goes through it
 * (and to `tap`, which sees it as it streams).
 */
async function runChild(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  progress?: TestProgress,
  tap?: (text: string) => void,
): Promise<number> {
  const running = child = new Deno.Command(cmd, {
    args,
    env,
    stdin: "inherit",
    stdout: progress ? "piped" : "inherit",
  }).spawn();
  const shown = progress
    ? (async () => {
      for await (const chunk of running.stdout.pipeThrough(new TextDecoderStream())) {
        progress.feed(chunk);
        tap?.(chunk);
      }
    })()
    : Promise.resolve();
  const { code } = await running.status;
  await shown;
  child = undefined;
  return code;
}
