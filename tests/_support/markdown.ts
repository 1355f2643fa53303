// Reading the README and docs/ as the tests that hold them to what they say need: sections,
// fenced blocks (with the HTML comment that may precede one), headings' anchors, links.
import assert from "node:assert/strict";
import { endpoint } from "./env.ts";

export const ROOT = new URL("../../", import.meta.url);

/** The text of a file of the repository, e.g. "README.md" or "docs/permissions.md". */
export function readDoc(path: string): string {
  return Deno.readTextFileSync(new URL(path, ROOT));
}

/** The markdown files the docs tests cover: the README, the CHANGELOG and every docs/ page. */
export function docFiles(): string[] {
  const pages = [...Deno.readDirSync(new URL("docs/", ROOT))]
    .filter((entry) => entry.isFile && entry.name.endsWith(".md"))
    .map((entry) => `docs/${entry.name}`)
    .sort();
  return ["README.md", "CHANGELOG.md", ...pages];
}

/** A fenced block: its language, code, 1-based line, and the `<!-- ... -->` right above it. */
export interface Block {
  file: string;
  lang: string;
  code: string;
  line: number;
  note: string | null;
}

/** Every fenced block of a markdown file, in order (indented fences included). */
export function blocks(file: string, text = readDoc(file)): Block[] {
  const found: Block[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i]!.match(/^(\s*)```(\w*)/);
    if (!open) continue;
    const indent = open[1]!.length;
    const end = lines.findIndex((line, j) => j > i && line.trim() === "```");
    assert.ok(end > i, `${file}:${i + 1}: an unclosed code block`);
    const code = lines.slice(i + 1, end).map((line) => line.slice(indent)).join("\n");
    // deno fmt keeps a blank line between the comment and the fence.
    let above = i - 1;
    while (above >= 0 && lines[above]!.trim() === "") above--;
    const before = lines[above]?.trim() ?? "";
    const note = before.match(/^<!--\s*(.*?)\s*-->$/)?.[1] ?? null;
    found.push({ file, lang: open[2]!, code, line: i + 1, note });
    i = end;
  }
  return found;
}

/** The text of `file` from `heading` to the next heading of the same or a higher level. */
export function section(file: string, heading: string): string {
  const text = readDoc(file);
  const at = text.split("\n").findIndex((line) => line === heading);
  assert.ok(at >= 0, `${file} has the heading ${heading}`);
  const level = heading.match(/^#+/)![0].length;
  const lines = text.split("\n").slice(at + 1);
  let fenced = false; // a `# comment` in a shell block is no heading
  const next = lines.findIndex((line) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const hashes = fenced ? undefined : line.match(/^(#+) /)?.[1];
    return hashes !== undefined && hashes.length <= level;
  });
  return lines.slice(0, next === -1 ? undefined : next).join("\n");
}

/** The first fenced block of `lang` under `heading` in `file`. */
export function blockUnder(file: string, heading: string, lang: string): string {
  const found = blocks(file, section(file, heading)).find((block) => block.lang === lang);
  assert.ok(found, `a ${lang} block under ${heading} in ${file}`);
  return found.code;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
}

/** The anchors of a markdown file's headings (a repeated heading gets -1, -2, ...). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let fenced = false;
  for (const line of text.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = !fenced && line.match(/^#{1,6} (.*)$/)?.[1];
    if (!heading) continue;
    const base = anchor(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

/** The relative links (not http(s), not mailto) of a markdown file, with their line. */
export function relativeLinks(text: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  let fenced = false;
  text.split("\n").forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) return;
    for (const match of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1]!;
      if (!/^(https?:|mailto:)/.test(target)) links.push({ target, line: i + 1 });
    }
  });
  return links;
}

/** Runs a command and returns its exit code and both outputs together. */
export async function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ code: number; output: string }> {
  const { code, stdout, stderr } = await new Deno.Command(command, {
    args,
    cwd: options.cwd,
    // A snippet that never ends (a server, a cron) fails its test instead of hanging the suite.
    signal: AbortSignal.timeout(options.timeoutMs ?? 120_000),
    env: { NO_COLOR: "1", ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code, output: decode(stdout) + decode(stderr) };
}

const CONFIG = new URL("deno.json", ROOT).pathname;

/** The region of the docs' own database: DynamoDB Local keeps one per access key and region. */
export const DOCS_REGION = "ap-northeast-3";

/**
 * The region of the README's quick start runs (tests/docs/readme_test.ts): a database of their
 * own too, so that they and the docs' code (both on the default tables) can run at the same time.
 */
export const README_REGION = "ap-southeast-3";

/**
 * An endpoint for the code of the README and docs/, which uses the default tables (`harel_*`)
 * by design: a proxy to the test DynamoDB that moves every request into a database of its own
 * by rewriting the region of its credential scope (DynamoDB Local and LocalStack do not check
 * signatures). So the suite's own database never sees that code, whatever region it runs with
 * and whatever permissions: the narrowest documented set cannot even read `AWS_REGION`. It
 * also spares that code the suite's crowded database, where adding the timer index to a table
 * can outlast `create()`'s deadline. `await using docs = docsEndpoint()` stops it.
 */
export function docsEndpoint(region = DOCS_REGION): { url: string } & AsyncDisposable {
  const upstream = endpoint();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const headers = new Headers(request.headers);
    const authorization = headers.get("authorization");
    if (authorization !== null) {
      headers.set(
        "authorization",
        authorization.replace(
          /(Credential=[^/,\s]+\/\d{8}\/)[^/]+(\/dynamodb\/aws4_request)/,
          `$1${region}$2`,
        ),
      );
    }
    const url = new URL(request.url);
    const answer = await fetch(new URL(url.pathname + url.search, upstream), {
      method: request.method,
      headers,
      body: await request.arrayBuffer(),
    });
    return new Response(await answer.arrayBuffer(), {
      status: answer.status,
      headers: answer.headers,
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/**
 * Runs a documented `deno run ... quick_start.ts` command line in bash, in a temporary folder
 * holding the README's quick start as quick_start.ts, with DYNAMODB_ENDPOINT set to the docs'
 * own database ({@linkcode docsEndpoint}); `--config` makes "@harel/dynamodb" this package, as
 * in a clone or after `deno add jsr:@harel/dynamodb`. Given `project`, it runs there instead,
 * with that folder's own deno.json (a user's project that links a clone). `endpointVariable`
 * names the variable that carries the docs' endpoint (`AWS_ENDPOINT_URL_DYNAMODB`: the SDK's,
 * for a command line meant for AWS; DYNAMODB_ENDPOINT is then unset), and `unset` the variables
 * of this process the command must not see; `region`, the database it runs in (the docs', by
 * default).
 */
export async function runQuickStart(
  commandLine: string,
  env: Record<string, string> = {},
  options: { project?: string; endpointVariable?: string; unset?: string[]; region?: string } = {},
): Promise<{ code: number; output: string }> {
  const command = commandLine.replaceAll("\\\n", " ").trim();
  assert.match(command, /^deno run .* quick_start\.ts$/, command);
  const dir = options.project ?? await Deno.makeTempDir({ prefix: "harel_readme_" });
  await using docs = docsEndpoint(options.region);
  try {
    await Deno.writeTextFile(
      `${dir}/quick_start.ts`,
      blockUnder("README.md", "## Quick start", "ts"),
    );
    const config = options.project === undefined ? ` --config '${CONFIG}'` : "";
    const { endpointVariable = "DYNAMODB_ENDPOINT" } = options;
    const unset = [...options.unset ?? []];
    if (endpointVariable !== "DYNAMODB_ENDPOINT") unset.push("DYNAMODB_ENDPOINT");
    const script = (unset.length > 0 ? `unset ${unset.join(" ")}; ` : "") +
      command.replace(/^deno run /, `deno run --no-prompt${config} `);
    return await run("bash", ["-c", script], {
      cwd: dir,
      env: { [endpointVariable]: docs.url, ...env },
    });
  } finally {
    if (options.project === undefined) await Deno.remove(dir, { recursive: true });
  }
}
