// The docs hold: every TypeScript block of the README and docs/ runs against the test DynamoDB
// (unless an HTML comment above it says why not), the module docs' examples run, every relative
// link resolves, and docs/permissions.md's command lines work as the page says.
import assert from "node:assert/strict";
import {
  anchors,
  blocks,
  blockUnder,
  docFiles,
  docsEndpoint,
  readDoc,
  relativeLinks,
  ROOT,
  run,
  runQuickStart,
} from "../_support/markdown.ts";

const CONFIG = new URL("deno.json", ROOT).pathname;
const PERMISSIONS = ["--allow-net", "--allow-env", "--allow-read", "--allow-sys=osRelease"];

Deno.test("every TypeScript block of the README and docs/ runs, unless marked not to with a reason", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "harel_docs_" });
  await using docs = docsEndpoint(); // the blocks use the default tables: a database of their own
  try {
    for (const file of docFiles()) {
      for (const block of blocks(file).filter((b) => b.lang === "ts")) {
        const where = `${file}:${block.line}`;
        if (block.note !== null) {
          assert.match(block.note, /^not run: \S/, `${where}: a note above a block says why`);
          continue;
        }
        await t.step(where, async () => {
          const test = block.code.includes("Deno.test(");
          const path = `${dir}/${file.replace(/\W/g, "_")}_${block.line}${test ? "_test" : ""}.ts`;
          await Deno.writeTextFile(path, block.code);
          const { code, output } = await run(
            "deno",
            [test ? "test" : "run", "--no-prompt", "--config", CONFIG, ...PERMISSIONS, path],
            { env: { DYNAMODB_ENDPOINT: docs.url } },
          );
          assert.equal(code, 0, `${where}:\n${output}`);
        });
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the examples of mod.ts, @harel/dynamodb/testing and @harel/dynamodb/sqs run and assert", async () => {
  await using docs = docsEndpoint(); // they use the default tables too
  const { code, output } = await run("deno", [
    "test",
    "--doc",
    "--no-prompt",
    ...PERMISSIONS,
    "mod.ts",
    "src/testing.ts",
    "src/sqs.ts", // against the SQS the test task started (SQS_ENDPOINT, inherited)
    "src/sqs/",
  ], { cwd: ROOT.pathname, env: { DYNAMODB_ENDPOINT: docs.url } });
  assert.equal(code, 0, output);
  const passed = Number(output.match(/ok \| (\d+) passed/)?.[1]);
  assert.ok(passed >= 7, output);
  const overview = readDoc("mod.ts").slice(0, readDoc("mod.ts").indexOf("@module"));
  const examples = overview.split("@example").slice(1);
  assert.ok(examples.length >= 5, "the overview shows the main uses");
  for (const example of examples) assert.match(example, /assert\./, example.split("\n")[0]);
});

Deno.test("every TypeScript snippet reads its endpoint from DYNAMODB_ENDPOINT", () => {
  let withEndpoint = 0;
  for (const file of docFiles()) {
    for (const block of blocks(file).filter((b) => b.lang === "ts")) {
      assert.doesNotMatch(block.code, /endpoint: "http:\/\/127\.0\.0\.1:\d+"/, block.code);
      if (/Deno\.env\.get\("DYNAMODB_ENDPOINT"\)/.test(block.code)) withEndpoint++;
    }
  }
  assert.ok(withEndpoint >= 5, `${withEndpoint} snippets read DYNAMODB_ENDPOINT`);
});

Deno.test("docs/testing.md's example uses assertions that can fail and only the testing module", () => {
  const code = blockUnder("docs/testing.md", "## The in-memory twins", "ts");
  assert.doesNotMatch(code, /console\.assert/);
  assert.match(code, /from "node:assert\/strict"/);
  assert.doesNotMatch(code, /from "@harel\/dynamodb"/, "imports only the testing module");
  assert.match(code, /relayOutbox/, "the runners come from the testing module too");
});

Deno.test("every relative link of the README, the CHANGELOG and docs/ resolves, anchors included", () => {
  for (const file of docFiles()) {
    const base = new URL(file, ROOT);
    for (const { target, line } of relativeLinks(readDoc(file))) {
      const [path, hash] = target.split("#") as [string, string | undefined];
      const url = path === "" ? base : new URL(path, base);
      let stat: Deno.FileInfo;
      try {
        stat = Deno.statSync(url);
      } catch {
        assert.fail(`${file}:${line}: ${target} does not exist`);
      }
      if (hash !== undefined) {
        assert.ok(stat.isFile && url.pathname.endsWith(".md"), `${file}:${line}: ${target}`);
        const known = anchors(Deno.readTextFileSync(url));
        assert.ok(known.has(hash), `${file}:${line}: no heading #${hash} in ${path || file}`);
      }
    }
  }
});

Deno.test("docs/permissions.md: the quick start runs with exactly the narrowest set it documents", async () => {
  const command = blockUnder("docs/permissions.md", "## The narrowest set that works", "sh");
  const flags = command.replaceAll("\\\n", " ").split(/\s+/).filter((w) =>
    w.startsWith("--allow-")
  );
  // The port is whatever `deno task dynamodb` picked: the shell derives it from the endpoint.
  assert.ok(flags.includes('--allow-net="${DYNAMODB_ENDPOINT#http://}"'), command);
  assert.ok(flags.some((flag) => flag.startsWith("--allow-env=")), command);
  assert.ok(!flags.some((flag) => flag.startsWith("--allow-read")), "no --allow-read documented");
  const { code, output } = await runQuickStart(command);
  assert.equal(code, 0, output);
  assert.match(output, /deliver order\.ship to \(broadcast\)/);
});

Deno.test("docs/permissions.md: with a custom CA the simple set asks for sys access to ca, and the documented set works", async () => {
  const dir = await Deno.makeTempDir({ prefix: "harel_ca_" });
  try {
    const script = `${dir}/tls.ts`;
    // An HTTPS endpoint that refuses: reaching the TLS setup is enough.
    await Deno.writeTextFile(
      script,
      `import { DynamoDBStore } from "@harel/dynamodb";
try {
  await DynamoDBStore.create({ endpoint: "https://127.0.0.1:9", deadlineMs: 300 });
} catch (error) {
  console.log(String(error));
}
Deno.exit(0); // the SDK may hold a socket open after a refused permission`,
    );
    await Deno.writeTextFile(`${dir}/extra.pem`, "");
    const env = { NODE_EXTRA_CA_CERTS: `${dir}/extra.pem` };
    const flagsOf = (heading: string) =>
      blockUnder("docs/permissions.md", heading, "sh").split(/\s+/).filter((w) =>
        w.startsWith("--allow-")
      );
    const attempt = (flags: string[]) =>
      run("deno", ["run", "--no-prompt", "--config", CONFIG, ...flags, script], { env });

    const simple = await attempt(flagsOf("## The simple set"));
    assert.match(simple.output, /NotCapable: Requires sys access to "ca"/, simple.output);
    const custom = await attempt(flagsOf("## A custom CA (`NODE_EXTRA_CA_CERTS`)"));
    assert.doesNotMatch(custom.output, /NotCapable/, custom.output);
    assert.match(custom.output, /EndpointUnreachable/, custom.output);
    const narrow = await attempt(["--allow-net", "--allow-env", "--allow-sys=osRelease,ca"]);
    assert.match(
      narrow.output,
      /unknown sys descriptor/,
      "Deno now takes --allow-sys=ca: document it in docs/permissions.md and the README instead of --allow-sys",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
