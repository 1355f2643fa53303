// `deno task test` shows progress: each test file's first line gets its number and the time so
// far, and a test that runs long without printing gets a heartbeat line naming it, while the
// lines CI reads (the summary, the exit code) stay as deno test makes them. It runs the files in
// two groups (scripts/_test_groups.ts): those that share nothing in parallel, then a few serially.
import assert from "node:assert/strict";
import { countTestFiles, elapsed, TestProgress } from "../../scripts/_test_progress.ts";
import {
  fileTimes,
  LONGEST_FIRST,
  SERIAL_TESTS,
  slowestFiles,
  summaryLine,
  summaryOf,
  testGroups,
} from "../../scripts/_test_groups.ts";
import { readDoc, ROOT, run } from "../_support/markdown.ts";

/** A TestProgress on a clock the test moves, and everything it wrote. */
function progress(total = 2) {
  let now = 1_000_000;
  let out = "";
  const p = new TestProgress({ total, write: (text) => void (out += text), now: () => now });
  return {
    feed: (text: string) => p.feed(text),
    /** Moves the clock by `ms`, ticking every second as the script does. */
    wait(ms: number) {
      for (let t = 0; t < ms; t += 1000) {
        now += 1000;
        p.tick();
      }
    },
    output: () => out,
  };
}

Deno.test("TestProgress numbers each test file as it starts, with the time so far", () => {
  const p = progress();
  p.feed("running 2 tests from ./tests/a_test.ts\nfirst ... ok (1ms)\n");
  p.wait(3000);
  p.feed("\x1b[0m\x1b[38;5;245mrunning 1 test from ./tests/b_test.ts\x1b[0m\nb ... ok (2ms)\n");
  p.feed("\nok | 3 passed | 0 failed (3s)\n");
  assert.equal(
    p.output(),
    "[1/2 · 0s] running 2 tests from ./tests/a_test.ts\nfirst ... ok (1ms)\n" +
      "[2/2 · 3s] \x1b[0m\x1b[38;5;245mrunning 1 test from ./tests/b_test.ts\x1b[0m\n" +
      "b ... ok (2ms)\n\nok | 3 passed | 0 failed (3s)\n",
  );
});

Deno.test("TestProgress names a test that runs long every 10 s, and its line reads whole when it ends", () => {
  const p = progress();
  p.feed("running 1 test from ./tests/a_test.ts\nthe property ...");
  p.wait(9000);
  assert.equal(p.output(), "[1/2 · 0s] running 1 test from ./tests/a_test.ts\nthe property ...");
  p.wait(16_000);
  p.feed(" ok (25s)\n");
  assert.equal(
    p.output(),
    "[1/2 · 0s] running 1 test from ./tests/a_test.ts\nthe property ...\n" +
      "[1/2 · 10s] still running the property (10s, ./tests/a_test.ts)\n" +
      "[1/2 · 20s] still running the property (20s, ./tests/a_test.ts)\n" +
      "the property ... ok (25s)\n",
  );
});

Deno.test("TestProgress names a test that runs for minutes once a minute after its first", () => {
  const p = progress();
  p.feed("running 1 test from ./tests/a_test.ts\nthe load ...");
  p.wait(5 * 60_000);
  const beats = p.output().split("\n").filter((line) => line.includes("still running"));
  assert.deepEqual(
    beats.map((line) => line.match(/running the load \((\S+),/)![1]),
    ["10s", "20s", "30s", "40s", "50s", "1m00s", "2m00s", "3m00s", "4m00s", "5m00s"],
  );
});

Deno.test("TestProgress names the step that runs long with its test, and stays quiet while output flows", () => {
  const p = progress(1);
  p.feed("running 1 test from ./x_test.ts\nsuite ...\n  first ... ok (1s)\n  second ...");
  p.wait(10_000);
  p.feed(" ok (10s)\n");
  for (let i = 0; i < 30; i++) {
    p.wait(5000);
    p.feed(`  step ${i} ... ok (5s)\n`);
  }
  p.feed("suite ... ok (2m40s)\n");
  const beats = p.output().split("\n").filter((line) => line.includes("still running"));
  assert.deepEqual(beats, ["[1/1 · 10s] still running suite › second (10s, ./x_test.ts)"]);
});

Deno.test("TestProgress says what it waits for before the first file and between tests", () => {
  const p = progress();
  p.wait(10_000);
  p.feed("running 1 test from ./tests/a_test.ts\nquick ... ok (1ms)\n");
  p.wait(10_000);
  assert.deepEqual(p.output().split("\n").filter((line) => !line.includes("running 1 test")), [
    "[0/2 · 10s] loading the test files",
    "quick ... ok (1ms)",
    "[1/2 · 20s] still in ./tests/a_test.ts, no output for 10s",
    "",
  ]);
});

Deno.test("TestProgress numbers the files of a parallel run as their first result comes, and says how long none came", () => {
  const p = progress(2);
  p.feed("./tests/a_test.ts => first ... ok (1ms)\n");
  p.feed("\x1b[0m\x1b[38;5;245m./tests/b_test.ts => \x1b[0mb ... ok (2ms)\n");
  p.feed("./tests/a_test.ts => second ... ok (3ms)\n");
  p.wait(10_000);
  p.feed("ERRORS\n\nsome test => ./tests/a_test.ts:1:6\n");
  assert.equal(
    p.output(),
    "[1/2 · 0s] ./tests/a_test.ts => first ... ok (1ms)\n" +
      "[2/2 · 0s] \x1b[0m\x1b[38;5;245m./tests/b_test.ts => \x1b[0mb ... ok (2ms)\n" +
      "./tests/a_test.ts => second ... ok (3ms)\n" +
      "[2/2 · 10s] no test ended for 10s (the last: ./tests/a_test.ts)\n" +
      "ERRORS\n\nsome test => ./tests/a_test.ts:1:6\n",
  );
});

Deno.test("TestProgress numbers a parallel run's result line the pipe cut in two, and passes on a line start that is none", () => {
  const p = progress(2);
  p.feed("../../tmp/x/b_te");
  p.feed("st.ts => b ... FAILED (864µs)\n./tests/a_test.ts => a");
  p.feed(" quick one ... ok (409µs)\n");
  p.feed("./not_a_result"); // a line start that never becomes one: on after a second
  p.wait(1000);
  p.feed(" after all\n");
  assert.equal(
    p.output(),
    "[1/2 · 0s] ../../tmp/x/b_test.ts => b ... FAILED (864µs)\n" +
      "[2/2 · 0s] ./tests/a_test.ts => a quick one ... ok (409µs)\n" +
      "./not_a_result after all\n",
  );
});

Deno.test("the suite runs in two groups: the files that share nothing in parallel, then the listed ones in order", () => {
  const root = ROOT.pathname.replace(/\/$/, "");
  const args = ["--allow-net", "--v8-flags=--expose-gc", "tests/"];
  const [parallel, serial, ...more] = testGroups(args, root, root);
  assert.equal(more.length, 0);
  const listed = SERIAL_TESTS.map(({ file }) => `${root}/${file}`);
  assert.deepEqual(serial!.files, listed, "the serial group, in the listed order");
  assert.equal(serial!.files.at(-1), `${root}/tests/zz_default_tables_test.ts`);
  assert.deepEqual(serial!.args, ["--allow-net", "--v8-flags=--expose-gc", ...listed]);
  assert.equal(parallel!.args[0], "--parallel");
  assert.equal(parallel!.files.length + serial!.files.length, countTestFiles(args, root));
  assert.ok(parallel!.files.every((file) => !listed.includes(file)));
  // The longest files start first (those of the list that exist), the others in path order.
  const longest = LONGEST_FIRST.map((file) => `${root}/${file}`)
    .filter((file) => parallel!.files.includes(file));
  assert.deepEqual(parallel!.files.slice(0, longest.length), longest);
  const rest = parallel!.files.slice(longest.length);
  assert.deepEqual(rest, [...rest].sort());
  assert.deepEqual(parallel!.args.slice(1), [
    "--allow-net",
    "--v8-flags=--expose-gc",
    ...parallel!.files,
  ]);
  // One file, or a folder without a listed file: one group.
  assert.equal(testGroups(["tests/core/"], root, root).length, 1);
  assert.deepEqual(testGroups(["tests/zz_default_tables_test.ts"], root, root).map((g) => g.args), [
    [`${root}/tests/zz_default_tables_test.ts`],
  ]);
});

Deno.test("the groups' summaries add up to one line, read as deno test's", () => {
  const a = summaryOf("...\n\x1b[0m\x1b[32mok\x1b[0m | 600 passed (680 steps) | 0 failed (4m1s)\n");
  const b = summaryOf("FAILED | 2 passed | 1 failed (2 steps) (3s)\n\nerror: Test failed\n");
  assert.deepEqual(a, { passed: 600, passedSteps: 680, failed: 0, failedSteps: 0 });
  assert.deepEqual(b, { passed: 2, passedSteps: 0, failed: 1, failedSteps: 2 });
  assert.equal(summaryOf("error: Module not found"), null);
  assert.equal(
    summaryLine([a!, b!], false, "4m05s"),
    "FAILED | 602 passed (680 steps) | 1 failed (2 steps) (4m05s)",
  );
  assert.equal(summaryLine([a!], true, "1s"), "ok | 600 passed (680 steps) | 0 failed (1s)");
});

Deno.test("elapsed() reads as minutes and seconds", () => {
  assert.deepEqual([0, 999, 59_999, 60_000, 125_400].map(elapsed), [
    "0s",
    "0s",
    "59s",
    "1m00s",
    "2m05s",
  ]);
});

Deno.test("countTestFiles() counts the test files deno test runs in the repository's tests/", () => {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(dir)) {
      if (entry.isDirectory) walk(`${dir}/${entry.name}`);
      else if (entry.name.endsWith("_test.ts")) files.push(entry.name);
    }
  };
  walk(new URL("tests", ROOT).pathname);
  const args = ["--allow-net", "--v8-flags=--expose-gc", "--filter", "nothing", "tests/"];
  assert.equal(countTestFiles(args, ROOT.pathname.replace(/\/$/, "")), files.length);
  assert.equal(countTestFiles(["tests/core/documents_test.ts"], ROOT.pathname), 1);
});

Deno.test("deno task test numbers the files and names a long test, with deno test's summary and exit code", async () => {
  const task = (JSON.parse(readDoc("deno.json")).tasks as Record<string, string>).test!;
  assert.match(task, / --progress --parallel -- deno test .* tests\/$/, task);
  const dir = await Deno.makeTempDir({ prefix: "harel_progress_" });
  try {
    await Deno.writeTextFile(
      `${dir}/a_test.ts`,
      `Deno.test("a quick one", () => {});
Deno.test("a slow one", () => new Promise((resolve) => setTimeout(resolve, 2500)));\n`,
    );
    await Deno.writeTextFile(
      `${dir}/b_test.ts`,
      `Deno.test("b", () => { throw new Error("no"); });\n`,
    );
    const command = task.replace(/ tests\/$/, ` ${dir}/`);
    const env = { HAREL_TEST_HEARTBEAT_S: "1" }; // the suite's DYNAMODB_ENDPOINT is used as is
    const { code, output } = await run("bash", ["-c", command], { cwd: ROOT.pathname, env });
    assert.equal(code, 1, output);
    // In parallel: each file is numbered at its first result, each result names its file.
    assert.match(output, /^\[[12]\/2 · \d+s\] \S*a_test\.ts => a quick one \.\.\. ok/m);
    assert.match(output, /^\[[12]\/2 · \d+s\] \S*b_test\.ts => b \.\.\. FAILED/m);
    assert.match(output, /^\[2\/2 · \d+s\] no test ended for \ds \(the last: \S*_test\.ts\)$/m);
    assert.match(output, /^\S*a_test\.ts => a slow one \.\.\. ok \(\d/m);
    assert.match(output, /^FAILED \| 2 passed \| 1 failed/m, "the summary .ci/run reads");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the slowest files are read from the groups' JUnit reports: each file's tests' time, its steps within their test", () => {
  const report = (file: string, cases: [string, number][]) =>
    `<testsuite name="${file}">\n${
      cases.map(([name, time]) =>
        `<testcase name="${name}" classname="${file}" time="${
          time.toFixed(3)
        }" line="1" col="6">\n</testcase>`
      ).join("\n")
    }\n</testsuite>`;
  const parallel = `<testsuites>${
    report("./tests/a_test.ts", [["slow &gt; one", 30], ["slow", 61.5], ["slow &gt; two", 31]])
  }${report("./tests/b_test.ts", [["x &amp; y", 2], ["z", 3.25]])}${
    report("./tests/_support/steps.ts", [["z &gt; at once", 3]]) // a helper's t.step()
  }</testsuites>`;
  const serial = report("./tests/zz_test.ts", [["last", 0.4]]);
  const times = fileTimes([parallel, serial, ""]);
  assert.deepEqual([...times], [
    ["./tests/a_test.ts", 61.5],
    ["./tests/b_test.ts", 5.25],
    ["./tests/zz_test.ts", 0.4],
  ]);
  assert.deepEqual(slowestFiles(times, 2), [
    "  1m02s  ./tests/a_test.ts",
    "   5.3s  ./tests/b_test.ts",
  ]);
  assert.equal(slowestFiles(times).length, 3);
});
