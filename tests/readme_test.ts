// The README runs as written: its quick start, saved as a file, completes against the test
// DynamoDB with DYNAMODB_ENDPOINT set and exactly the narrow permissions the README documents.
import assert from "node:assert/strict";
import { endpoint } from "./_env.ts";

const ROOT = new URL("../", import.meta.url);
const README = await Deno.readTextFile(new URL("README.md", ROOT));

/** The first fenced block of `lang` after `heading`. */
function block(heading: string, lang: string): string {
  const at = README.indexOf(heading);
  assert.ok(at >= 0, `the README has ${heading}`);
  const code = README.slice(at).match(new RegExp("```" + lang + "\\n([\\s\\S]*?)\\n```"))?.[1];
  assert.ok(code, `a ${lang} block under ${heading}`);
  return code;
}

async function runQuickStart(permissions: string[]): Promise<{ code: number; output: string }> {
  const dir = await Deno.makeTempDir({ prefix: "harel_readme_" });
  try {
    const file = `${dir}/quick_start.ts`;
    await Deno.writeTextFile(file, block("## Quick start", "ts"));
    const { code, stdout, stderr } = await new Deno.Command("deno", {
      // --config: "@harel/dynamodb" is this package, as after `deno add jsr:@harel/dynamodb`.
      args: [
        "run",
        "--no-prompt",
        "--config",
        new URL("deno.json", ROOT).pathname,
        ...permissions,
        file,
      ],
      env: { DYNAMODB_ENDPOINT: endpoint(), NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code,
      output: new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the README's quick start completes as a file with the narrowest permissions it documents", async () => {
  // The documented command, with its endpoint's host:port replaced by the test DynamoDB's.
  const command = block("### Permissions", "sh").replaceAll("\\\n", " ");
  const flags = command.split(/\s+/).filter((word) => word.startsWith("--allow-"));
  assert.ok(flags.some((flag) => flag.startsWith("--allow-env=")), command);
  assert.ok(!flags.some((flag) => flag.startsWith("--allow-read")), "no --allow-read documented");
  const host = new URL(endpoint()).host;
  const permissions = flags.map((flag) =>
    flag.startsWith("--allow-net=") ? `--allow-net=${host}` : flag
  );
  const { code, output } = await runQuickStart(permissions);
  assert.equal(code, 0, output);
  assert.match(output, /deliver order\.ship to \(broadcast\)/);
});

Deno.test("the README's quick start command line runs it", async () => {
  const { code, output } = await runQuickStart([
    "--allow-net",
    "--allow-env",
    "--allow-sys=osRelease",
  ]);
  assert.equal(code, 0, output);
  assert.match(output, /deliver order\.ship/);
});

Deno.test("every README snippet reads its endpoint from DYNAMODB_ENDPOINT", () => {
  const snippets = [...README.matchAll(/```ts\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
  for (const code of snippets) {
    assert.doesNotMatch(code, /endpoint: "http:\/\/127\.0\.0\.1:8000"/, code);
  }
  assert.match(README, /Deno\.env\.get\("DYNAMODB_ENDPOINT"\)/);
});

Deno.test("the README's testing example uses assertions that can fail", () => {
  const code = block("## Testing your code without DynamoDB", "ts");
  assert.doesNotMatch(code, /console\.assert/);
  assert.match(code, /from "node:assert\/strict"/);
  assert.doesNotMatch(code, /from "@harel\/dynamodb"/, "imports only the testing module");
});

Deno.test("the published files leave out deno.lock", async () => {
  const { code, stdout, stderr } = await new Deno.Command("deno", {
    args: ["publish", "--dry-run", "--allow-dirty"],
    cwd: ROOT.pathname,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const output = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  assert.equal(code, 0, output);
  assert.match(output, /README\.md/);
  assert.doesNotMatch(output, /deno\.lock/);
});
