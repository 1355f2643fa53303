// Running the operator CLI as an operator does: `deno run src/cli.ts ...` with the permissions
// docs/operations.md gives it, against the test DynamoDB.
import assert from "node:assert/strict";
import { main } from "../../src/cli.ts";
import { endpoint } from "./env.ts";

const CLI = new URL("../../src/cli.ts", import.meta.url).pathname;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI's `main` in this process, as `deno run src/cli.ts ARGS` runs it with
 * DYNAMODB_ENDPOINT set: its lines and exit code, without a process of its own to start (a second
 * of CPU each). {@linkcode cliWith} runs it as an operator does, with the permissions
 * docs/operations.md gives it; so does this when the tests talk through a proxy.
 */
export async function cli(...args: string[]): Promise<Run> {
  if (endpoint() !== Deno.env.get("DYNAMODB_ENDPOINT")) return await cliWith({}, ...args);
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await main(args, {
    out: (line) => void stdout.push(`${line}\n`),
    err: (line) => void stderr.push(`${line}\n`),
  });
  return { code, stdout: stdout.join(""), stderr: stderr.join("") };
}

/** Runs the CLI as {@linkcode cli} does, with more `env` and a heap of at most `heapMb`. */
export async function cliWith(
  { env = {}, heapMb }: { env?: Record<string, string>; heapMb?: number },
  ...args: string[]
): Promise<Run> {
  const { code, stdout, stderr } = await new Deno.Command("deno", {
    args: [
      "run",
      "--no-prompt",
      ...(heapMb ? [`--v8-flags=--max-old-space-size=${heapMb}`] : []),
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-sys=osRelease",
      CLI,
      ...args,
    ],
    env: { DYNAMODB_ENDPOINT: endpoint(), NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code, stdout: decode(stdout), stderr: decode(stderr) };
}

export function ok(run: Run): string {
  assert.equal(run.code, 0, run.stderr);
  return run.stdout;
}
