// Hostile tests of the operator CLI: odd arguments get the documented exit codes.
// Fails on the code it was written against; names the behaviour a fix must give.
import assert from "node:assert/strict";
import { main } from "../../src/cli.ts";
import { endpoint, uniqueName } from "../_support/env.ts";

Deno.test("the CLI answers an over-long id or definition with exit code 2 (a usage error), as it does an empty one", async (t) => {
  // An empty --definition is a TypeError, mapped to usage (2); an over-long one is a
  // RangeError, reported as a runtime failure (1), as is `show` of an id over 2048 bytes.
  const prefix = uniqueName("cli");
  const cases: [string, string[]][] = [
    ["show ID over 2048 bytes", ["show", "x".repeat(3000)]],
    ["executions --definition over 400 KB", ["executions", "--definition", "d".repeat(410_000)]],
    ["executions --definition empty", ["executions", "--definition", ""]],
  ];
  for (const [what, args] of cases) {
    await t.step(what, async () => {
      const err: string[] = [];
      const code = await main([...args, "--prefix", prefix, "--endpoint", endpoint()], {
        out: () => {},
        err: (line) => err.push(line),
      });
      assert.equal(code, 2, err.join("\n"));
    });
  }
});
