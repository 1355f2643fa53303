// The README runs as written: its quick start, saved as a file, completes against the test
// DynamoDB with the command lines the README gives, and it stays what a newcomer reads in ten
// minutes. The docs pages have their own test (docs_test.ts).
import assert from "node:assert/strict";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { testClient } from "../_support/env.ts";
import {
  blocks,
  blockUnder,
  readDoc,
  README_REGION,
  ROOT,
  run,
  runQuickStart,
  section,
} from "../_support/markdown.ts";

const CONFIG = new URL("deno.json", ROOT).pathname;

Deno.test("the README's quick start runs with the command line of its first hour", async () => {
  const steps = section("README.md", "## Your first hour");
  const line = steps.split("\n").map((l) => l.trim()).find((l) => l.startsWith("deno run "));
  assert.ok(line, "the first hour has a deno run command line");
  using client = testClient(README_REGION);
  const count = (table: string) =>
    client.send(new ScanCommand({ TableName: table, Select: "COUNT" })).then(
      (answer) => answer.Count ?? 0,
      (error) => error?.name === "ResourceNotFoundException" ? 0 : Promise.reject(error),
    );
  const defaults = ["harel_executions", "harel_timers"];
  const before = await Promise.all(defaults.map(count));
  const { code, output } = await runQuickStart(line, {}, { region: README_REGION });
  assert.equal(code, 0, output);
  assert.match(output, /deliver order\.ship to \(broadcast\)/, "what step 4 says it prints");
  // It keeps to tables of its own and removes what it made: no RUNNING order with an hour's
  // timer is left for a fleet on the default tables to show.
  assert.deepEqual(await Promise.all(defaults.map(count)), before, "the default tables untouched");
  for (const table of ["quickstart_executions", "quickstart_timers", "quickstart_outbox"]) {
    assert.equal(await count(table), 0, `${table} is empty after the quick start`);
  }
  assert.match(steps, /deno task dynamodb/);
  assert.match(steps, /deno task test/);
});

Deno.test("the README's quick start passes the repository's own checks, saved as quick_start.ts in the clone", async () => {
  // Step 4 saves it at the root of the clone, and step 5 runs `deno task check` there: its
  // format and lint steps (run without paths) and a type check, with the repository's config.
  const check = JSON.parse(readDoc("deno.json")).tasks.check as string;
  const steps = check.split("&&").map((step) => step.trim().split(/\s+/));
  const wholeRepo = steps.filter(([deno, command, ...rest]) =>
    deno === "deno" && ["fmt", "lint"].includes(command!) && rest.every((a) => a.startsWith("-"))
  );
  assert.deepEqual(wholeRepo.map((step) => step.join(" ")), ["deno fmt --check", "deno lint"]);
  const dir = await Deno.makeTempDir({ prefix: "harel_readme_" });
  try {
    const file = `${dir}/quick_start.ts`;
    await Deno.writeTextFile(file, `${blockUnder("README.md", "## Quick start", "ts")}\n`);
    for (const [, command, ...flags] of [...wholeRepo, ["deno", "check"]]) {
      const { code, output } = await run("deno", [command!, ...flags, "--config", CONFIG, file]);
      assert.equal(code, 0, `deno ${command} on the quick start:\n${output}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // Saved in the clone, it is the reader's file, not the repository's: git and `deno publish`
  // leave it out.
  assert.ok(readDoc(".gitignore").split("\n").includes("/quick_start.ts"));
});

Deno.test("the README's recipe for a clone makes a project of one's own import the package, its exports and its npm dependencies, with JSR out of reach", async () => {
  const install = section("README.md", "## Install");
  const recipe = blocks("README.md", install).find((b) =>
    b.lang === "sh" && /deno link/.test(b.code)
  );
  assert.ok(recipe, "the Install section has a sh block with deno link");
  const clone = recipe.code.match(/deno link (\S+)/)![1]!;
  assert.equal(clone, "../harel-dynamodb");
  assert.match(install, /cloned next to your project as `harel-dynamodb`/);
  const exports = Object.keys(JSON.parse(readDoc("deno.json")).exports as Record<string, string>);
  for (const subpath of exports.filter((e) => e !== ".")) {
    assert.ok(
      install.includes(`\`${subpath.slice(1)}\``),
      `the recipe names the export ${subpath}`,
    );
  }
  const dir = await Deno.makeTempDir({ prefix: "harel_link_" });
  try {
    // The clone next to the project, and a project with no deno.json yet.
    await Deno.symlink(ROOT.pathname.replace(/\/$/, ""), `${dir}/harel-dynamodb`);
    const project = `${dir}/my-app`;
    await Deno.mkdir(project);
    // A JSR that cannot answer: whatever resolves, resolves from the clone.
    const offline = { JSR_URL: "http://127.0.0.1:9/" };
    const linked = await run("bash", ["-c", recipe.code], { cwd: project, env: offline });
    assert.equal(linked.code, 0, linked.output);
    const config = JSON.parse(await Deno.readTextFile(`${project}/deno.json`));
    assert.deepEqual(config.links, [clone]);
    assert.ok(install.includes(`"links": ${JSON.stringify(config.links)}`), "what the README says");

    // Every export, by name, type-checks; the testing module runs with no permissions.
    const names = exports.map((e, i) => `import * as m${i} from "@harel/dynamodb${e.slice(1)}";`);
    await Deno.writeTextFile(
      `${project}/main.ts`,
      `${names.join("\n")}\nconsole.log(${exports.map((_, i) => `Object.keys(m${i}).length`)});\n`,
    );
    const checked = await run("deno", ["check", "main.ts"], { cwd: project, env: offline });
    assert.equal(checked.code, 0, checked.output);
    await Deno.writeTextFile(
      `${project}/unit.ts`,
      `import { MemoryStore, newExecution } from "@harel/dynamodb/testing";
const store = new MemoryStore();
const exe = newExecution({ definition_id: "order" });
await store.save(exe);
console.log("saved", exe.version);\n`,
    );
    const unit = await run("deno", ["run", "--no-prompt", "unit.ts"], {
      cwd: project,
      env: offline,
    });
    assert.equal(unit.code, 0, unit.output);
    assert.match(unit.output, /saved 1/);
    const info = await run("deno", ["info", "--json", "main.ts"], { cwd: project, env: offline });
    assert.equal(info.code, 0, info.output);
    const modules = (JSON.parse(info.output).modules as { specifier: string }[]).map((m) =>
      m.specifier
    );
    assert.ok(modules.includes(`file://${dir}/harel-dynamodb/mod.ts`), "the clone's mod.ts");
    assert.ok(!modules.some((m) => m.startsWith("jsr:") || m.includes("jsr.io")), "nothing of JSR");

    // Step 4's claim: in your own project the same command runs the quick start.
    const line = section("README.md", "## Your first hour").split("\n").map((l) => l.trim())
      .find((l) => l.startsWith("deno run "))!;
    const quick = await runQuickStart(line, offline, { project, region: README_REGION });
    assert.equal(quick.code, 0, quick.output);
    assert.match(quick.output, /deliver order\.ship to \(broadcast\)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the README's simple permission set runs the quick start", async () => {
  const simple = section("README.md", "## Permissions").match(/The simple set: `([^`]+)`/)?.[1];
  assert.equal(simple, "--allow-net --allow-env --allow-read --allow-sys=osRelease");
  const { code, output } = await runQuickStart(`deno run ${simple} quick_start.ts`, {}, {
    region: README_REGION,
  });
  assert.equal(code, 0, output);
  assert.match(output, /deliver order\.ship/);
});

Deno.test("the README's Permissions section says what each flag of the simple set is for, and what happens without it", async (t) => {
  const text = section("README.md", "## Permissions");
  const simple = text.match(/The simple set: `([^`]+)`/)![1]!.split(" ");
  const bullets = text.split(/\n(?=- `)/).filter((b) => b.startsWith("- `"));
  assert.deepEqual(
    bullets.map((b) => b.match(/^- `([^`]+)`/)![1]).sort(),
    [...simple].sort(),
    "one bullet per flag",
  );
  for (const bullet of bullets) {
    const flag = bullet.match(/^- `([^`]+)`/)![1]!;
    await t.step(`without ${flag}`, async () => {
      const without = bullet.replaceAll(/\s+/g, " ").match(/Without it (.*?)(?:\. |\.$)/)?.[1];
      assert.ok(without, `${flag}: says what happens without it`);
      const error = without.match(/`(NotCapable: [^`]+)`/)?.[1];
      const rest = simple.filter((f) => f !== flag).join(" ");
      const { code, output } = await runQuickStart(`deno run ${rest} quick_start.ts`, {}, {
        region: README_REGION,
      });
      if (error === undefined) {
        assert.equal(code, 0, `${flag}: "${without}", but:\n${output}`);
      } else {
        assert.notEqual(code, 0, output);
        assert.ok(output.includes(error), `${flag}: "${error}" expected in:\n${output}`);
      }
    });
  }
});

Deno.test("the README is what a newcomer reads in ten minutes", () => {
  const readme = readDoc("README.md");
  const size = new TextEncoder().encode(readme).length;
  assert.ok(
    size < 16 * 1024,
    `README.md is ${size} bytes; keep it under 16 KB (move detail to docs/)`,
  );
  const headings = readme.split("\n").filter((line) => line.startsWith("## "));
  assert.deepEqual(headings, [
    "## Install",
    "## Your first hour",
    "## Quick start",
    "## Permissions",
    "## API map",
    "## Versioning",
    "## Links",
  ]);
  const intro = readme.slice(0, readme.indexOf("## Install"));
  assert.match(intro, /harel.*statechart engine/s, "says what harel is");
  assert.match(intro, /Deno KV/, "says when to pick it over Deno KV");
  const steps = section("README.md", "## Your first hour").match(/^\d\. /gm) ?? [];
  assert.equal(steps.length, 5, "five steps");
});

Deno.test("the README's API map links every docs page", () => {
  const map = section("README.md", "## API map");
  for (const entry of Deno.readDirSync(new URL("docs/", ROOT))) {
    if (entry.name.endsWith(".md")) {
      assert.match(map, new RegExp(`\\(docs/${entry.name.replace(".", "\\.")}[)#]`), entry.name);
    }
  }
});

Deno.test("the published files hold the README, the docs and the CHANGELOG, and leave out deno.lock", async () => {
  const { code, output } = await run("deno", ["publish", "--dry-run", "--allow-dirty"], {
    cwd: ROOT.pathname,
  });
  assert.equal(code, 0, output);
  assert.match(output, /README\.md/);
  assert.match(output, /CHANGELOG\.md/);
  assert.match(output, /docs\/operations\.md/);
  assert.doesNotMatch(output, /deno\.lock/);
  assert.doesNotMatch(output, /\.github\//);
});
