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
  section,
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
            // Type-checked by `deno task check` (deno check --doc-only): here they run.
            [
              test ? "test" : "run",
              "--no-check",
              "--no-prompt",
              "--config",
              CONFIG,
              ...PERMISSIONS,
              path,
            ],
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
    "--no-check", // the examples are type-checked by `deno task check` (deno check --doc)
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
  const command = blockUnder("docs/permissions.md", "### A local DynamoDB", "sh");
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

/** The names of a command line's `--allow-env=` list. */
function envList(command: string): string[] {
  const list = command.match(/--allow-env=(\S+)/)?.[1];
  assert.ok(list, `an --allow-env= list in ${command}`);
  return list.split(",");
}

Deno.test("docs/permissions.md: the quick start runs on AWS with exactly the set it documents, with the keys in the environment and with a default profile", async () => {
  const command = blockUnder("docs/permissions.md", "### AWS", "sh").replaceAll("\\\n", " ");
  const net = command.match(/--allow-net=(\S+)/)?.[1];
  assert.match(net ?? "", /^dynamodb\.[a-z0-9-]+\.amazonaws\.com:443$/, command);
  assert.ok(command.includes('--allow-read="$HOME/.aws"'), command);
  // AWS_ENDPOINT_URL_DYNAMODB sends the SDK to the test DynamoDB instead: that variable and the
  // proxy's host:port are what the test adds.
  const redirected = command
    .replace(`--allow-net=${net}`, '--allow-net="${AWS_ENDPOINT_URL_DYNAMODB#http://}"')
    .replace(/--allow-env=(\S+)/, "--allow-env=$1,AWS_ENDPOINT_URL_DYNAMODB");
  const others = [
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_SESSION_TOKEN",
  ];
  const keys = ["AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"];
  const home = await Deno.makeTempDir({ prefix: "harel_home_" });
  // A HOME of its own, but Deno's cache as it is (it lives under HOME by default).
  const { denoDir } = JSON.parse((await run("deno", ["info", "--json"])).output);
  try {
    const inEnvironment = await runQuickStart(
      redirected,
      {
        HOME: home,
        DENO_DIR: denoDir,
        AWS_REGION: "eu-west-1",
        AWS_ACCESS_KEY_ID: "test",
        AWS_SECRET_ACCESS_KEY: "test",
      },
      { endpointVariable: "AWS_ENDPOINT_URL_DYNAMODB", unset: others },
    );
    assert.equal(inEnvironment.code, 0, inEnvironment.output);
    assert.match(inEnvironment.output, /deliver order\.ship to \(broadcast\)/);
    // A profile, region included: without reading it the SDK would have no region and no keys.
    await Deno.mkdir(`${home}/.aws`);
    await Deno.writeTextFile(`${home}/.aws/config`, "[default]\nregion = eu-west-1\n");
    await Deno.writeTextFile(
      `${home}/.aws/credentials`,
      "[default]\naws_access_key_id = test\naws_secret_access_key = test\n",
    );
    const inProfile = await runQuickStart(
      redirected,
      { HOME: home, DENO_DIR: denoDir },
      { endpointVariable: "AWS_ENDPOINT_URL_DYNAMODB", unset: [...others, ...keys] },
    );
    assert.equal(inProfile.code, 0, inProfile.output);
    assert.match(inProfile.output, /deliver order\.ship to \(broadcast\)/);
    const unread = await runQuickStart(
      redirected.replace('--allow-read="$HOME/.aws" ', ""),
      { HOME: home, DENO_DIR: denoDir },
      { endpointVariable: "AWS_ENDPOINT_URL_DYNAMODB", unset: [...others, ...keys] },
    );
    assert.notEqual(unread.code, 0, "the profile needs --allow-read");
    assert.doesNotMatch(unread.output, /deliver order/, unread.output);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("docs/permissions.md: its table of names says what each name of the narrowest lists is for, and the README counts them", () => {
  const local = envList(blockUnder("docs/permissions.md", "### A local DynamoDB", "sh"));
  const aws = envList(blockUnder("docs/permissions.md", "### AWS", "sh"));
  const table = section("docs/permissions.md", "### What the names are").split("\n")
    .filter((line) => line.startsWith("| ") && !line.startsWith("| when"));
  const named = table.flatMap((row) =>
    [...row.split("|").at(-2)!.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]!)
  );
  assert.deepEqual([...named].sort(), [...aws].sort(), "the table names the AWS list");
  assert.deepEqual(local.filter((name) => !aws.includes(name)), [], "the local list is in it");
  assert.equal(new Set(aws).size, aws.length, "no name twice");
  assert.match(
    section("README.md", "## Permissions"),
    new RegExp(`${local.length} names\\s+for a local DynamoDB, ${aws.length} on AWS`),
  );
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
