// How `deno task test` runs the suite in two groups (`scripts/with_dynamodb.ts --parallel`):
// first every test file that shares no state with another, DENO_JOBS at a time
// (`deno test --parallel`; each file works on tables of its own prefix), then the few listed
// below, one after another, in this order. Each group is the same `deno test` command; the
// summary of the two is restated as one line at the end.
import { testFiles } from "./_test_progress.ts";

/**
 * The test files that run after the parallel group, one at a time, in this order, and why.
 * A file that shares state with another or checks what the whole suite did goes here. (The
 * docs' code and the README's quick start both use the default tables: each runs in a database
 * of its own, tests/_support/markdown.ts, so they run in parallel.)
 */
export const SERIAL_TESTS: readonly { file: string; why: string }[] = [
  {
    file: "tests/system/secrets_test.ts",
    why: "sets AWS_ACCESS_KEY_ID in the process's environment, which a parallel file's CLI " +
      "children inherit (another key is another DynamoDB Local database: 'non-existent table')",
  },
  {
    file: "tests/dynamo/setup_errors_test.ts",
    why: "deletes the AWS_* variables from the process's environment for a while",
  },
  {
    file: "tests/zz_default_tables_test.ts",
    why: "compares the default tables with how the run found them: after every other file",
  },
];

/**
 * The longest files of the parallel group, longest first (their tests' time in a run of three
 * files at a time on two cores, 40 s to 130 s each), started first so that the run does not end
 * waiting for one of them; the others follow in path order.
 */
export const LONGEST_FIRST: readonly string[] = [
  "tests/execution/mixed_order_test.ts",
  "tests/docs/docs_test.ts",
  "tests/sqs/fleet_client_test.ts",
  "tests/state/state_store_model_test.ts",
  "tests/sqs/fleet_harel_test.ts",
  "tests/execution/status_feed_rate_test.ts",
  "tests/relay/index_lag_test.ts",
  "tests/execution/hostile_mixed_test.ts",
  "tests/docs/readme_test.ts",
  "tests/execution/mixed_bounds_test.ts",
  "tests/system/faults_load_test.ts",
  "tests/relay/relay_delivery_test.ts",
  "tests/system/restart_test.ts",
  "tests/dashboard/browser_test.ts",
  "tests/system/cli_test.ts",
  "tests/execution/mixed_cost_test.ts",
  "tests/sqs/harel_limits_test.ts",
  "tests/execution/seed_fleet_test.ts",
  "tests/conformance/conformance_test.ts",
  "tests/relay/relay_index_test.ts",
  "tests/sqs/sqs_queue_test.ts",
  "tests/execution/foreign_rows_test.ts",
  "tests/sqs/harel_models_test.ts",
];

/** How many test files run at once in the parallel group, unless DENO_JOBS says otherwise. */
export const DEFAULT_JOBS = 4;

/** One `deno test` command of a grouped run, and the files it runs. */
export interface TestGroup {
  args: string[];
  files: string[];
}

/**
 * Splits `deno test ARGS` (`args` after `test`) into its parallel group (the files not listed
 * in {@linkcode SERIAL_TESTS}, named one by one, with `--parallel`) and its
 * serial group (the listed files among those it would run, in their listed order). A group
 * with no file is left out.
 */
export function testGroups(args: string[], root: string, cwd = Deno.cwd()): TestGroup[] {
  const end = args.indexOf("--");
  const own = end === -1 ? args : args.slice(0, end);
  const rest = end === -1 ? [] : args.slice(end);
  const files = testFiles(args, cwd);
  const serial = SERIAL_TESTS.map(({ file }) => `${root.replace(/\/$/, "")}/${file}`)
    .filter((file) => files.includes(file));
  const rank = (file: string) => {
    const at = LONGEST_FIRST.findIndex((name) => file === `${root.replace(/\/$/, "")}/${name}`);
    return at === -1 ? LONGEST_FIRST.length : at;
  };
  const parallel = files.filter((file) => !serial.includes(file))
    .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  const isPath = (arg: string) => !arg.startsWith("-") && exists(arg, cwd);
  const flags = own.filter((arg) => !isPath(arg));
  const groups: TestGroup[] = [];
  if (parallel.length > 0) {
    groups.push({ args: ["--parallel", ...flags, ...parallel, ...rest], files: parallel });
  }
  if (serial.length > 0) groups.push({ args: [...flags, ...serial, ...rest], files: serial });
  return groups;
}

function exists(path: string, cwd: string): boolean {
  try {
    Deno.statSync(path.startsWith("/") ? path : `${cwd}/${path}`);
    return true;
  } catch {
    return false; // a flag's value (--filter NAME), not a path
  }
}

/** The counts of a `deno test` summary line (`ok | 3 passed (2 steps) | 1 failed (4s)`). */
export interface TestSummary {
  passed: number;
  passedSteps: number;
  failed: number;
  failedSteps: number;
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/** The counts of the summary line in `output` (deno test's last), or null when there is none. */
export function summaryOf(output: string): TestSummary | null {
  const lines = output.replace(ANSI, "").split("\n")
    .filter((line) => /^(ok|FAILED) \| \d+ passed/.test(line));
  const line = lines.at(-1);
  if (line === undefined) return null;
  const count = (pattern: RegExp) => Number(line.match(pattern)?.[1] ?? 0);
  return {
    passed: count(/(\d+) passed/),
    passedSteps: count(/\d+ passed \((\d+) steps?\)/),
    failed: count(/(\d+) failed/),
    failedSteps: count(/\d+ failed \((\d+) steps?\)/),
  };
}

/** One summary line for the groups, as deno test writes its own: the line CI reads. */
export function summaryLine(summaries: TestSummary[], ok: boolean, elapsed: string): string {
  const sum = (key: keyof TestSummary) => summaries.reduce((n, s) => n + s[key], 0);
  const steps = (n: number) => n > 0 ? ` (${n} step${n === 1 ? "" : "s"})` : "";
  return `${ok ? "ok" : "FAILED"} | ${sum("passed")} passed${steps(sum("passedSteps"))} | ${
    sum("failed")
  } failed${steps(sum("failedSteps"))} (${elapsed})`;
}

/** XML's five escapes, undone. */
const unescapeXml = (text: string) =>
  text.replace(
    /&(lt|gt|quot|apos|amp);/g,
    (_, name: string) => ({ lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" })[name]!,
  );

/**
 * Seconds per test file in `deno test --junit-path` reports: the sum of its tests' times (a
 * step, `test > step`, counts within its test, wherever its t.step() call is).
 */
export function fileTimes(reports: string[]): Map<string, number> {
  const times = new Map<string, number>();
  for (const xml of reports) {
    const cases = [...xml.matchAll(/<testcase name="([^"]*)" classname="([^"]*)" time="([^"]*)"/g)]
      .map(([, name, file, time]) => ({
        name: unescapeXml(name!),
        file: unescapeXml(file!),
        time: Number(time),
      }));
    // A step's file is where its t.step() call is (a helper's, for steps run concurrently).
    const names = new Set(cases.map((c) => c.name));
    const isStep = ({ name }: { name: string }) => {
      for (let at = name.indexOf(" > "); at !== -1; at = name.indexOf(" > ", at + 1)) {
        if (names.has(name.slice(0, at))) return true;
      }
      return false;
    };
    for (const c of cases) {
      if (!isStep(c) && Number.isFinite(c.time)) {
        times.set(c.file, (times.get(c.file) ?? 0) + c.time);
      }
    }
  }
  return times;
}

/** The `count` slowest files of `times`, slowest first, one line each: `  1m05s  ./tests/x_test.ts`. */
export function slowestFiles(times: Map<string, number>, count = 10): string[] {
  return [...times].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1)).slice(0, count)
    .map(([file, seconds]) => `${formatSeconds(seconds).padStart(7)}  ${file}`);
}

function formatSeconds(seconds: number): string {
  const whole = Math.round(seconds);
  return whole >= 60
    ? `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, "0")}s`
    : `${seconds.toFixed(1)}s`;
}
