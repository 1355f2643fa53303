// Running the operator CLI as an operator does: `deno run src/cli.ts ...` with the permissions
// docs/operations.md gives it, against the test DynamoDB.
import assert from "node:assert/strict";
import { endpoint } from "./env.ts";

const CLI = new URL("../../src/cli.ts", import.meta.url).pathname;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with the permissions docs/operations.md gives it, and DYNAMODB_ENDPOINT set. */
export function cli(...args: string[]): Promise<Run> {
  return cliWith({}, ...args);
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
