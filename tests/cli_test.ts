// The operator CLI end to end: `deno run src/cli.ts ...` against the test DynamoDB.
import assert from "node:assert/strict";
import { DynamoDBStore, newEvent, newExecution } from "../mod.ts";
import { leastPrivilegePolicy } from "../src/cli.ts";
import { endpoint, uniqueName } from "./_env.ts";

const CLI = new URL("../src/cli.ts", import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with the permissions docs/operations.md gives it, and DYNAMODB_ENDPOINT set. */
async function cli(...args: string[]): Promise<Run> {
  const { code, stdout, stderr } = await new Deno.Command("deno", {
    args: [
      "run",
      "--no-prompt",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-sys=osRelease",
      CLI,
      ...args,
    ],
    env: { DYNAMODB_ENDPOINT: endpoint(), NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code, stdout: decode(stdout), stderr: decode(stderr) };
}

function ok(run: Run): string {
  assert.equal(run.code, 0, run.stderr);
  return run.stdout;
}

Deno.test("the CLI shows what the stores hold, for people and as JSON", async (t) => {
  const prefix = uniqueName("cli");
  assert.match(ok(await cli("ensure-tables", "--prefix", prefix)), new RegExp(`${prefix}_trace`));
  await using store = await DynamoDBStore.create({ endpoint: endpoint(), prefix });
  const now = Date.now() / 1000;
  const order = newExecution({ definition_id: "order", status: "RUNNING" });
  await store.commit(order, {
    emits: [
      { target: null, event: newEvent("order.created") },
      { target: order.id, event: newEvent("order.check") },
    ],
    timers: [
      { action: "schedule", path: "order.payment", fireAt: now - 60 },
      { action: "schedule", path: "order.expiry", fireAt: now + 3600 },
    ],
    trace: { event: "start", to: "order.new" },
  });
  const other = newExecution({ definition_id: "invoice", status: "DONE" });
  await store.save(other);

  await t.step("executions lists summaries, filtered", async () => {
    const table = ok(await cli("executions", "--prefix", prefix));
    assert.match(table, /^ID\s+DEFINITION\s+STATUS\s+ACTIVE PATH\s+VERSION\s+PARENT$/m);
    assert.match(table, new RegExp(`^${order.id}\\s+order\\s+RUNNING\\s+1`, "m"));
    assert.match(table, new RegExp(`^${other.id}\\s+invoice\\s+DONE`, "m"));
    const page = JSON.parse(
      ok(await cli("executions", "--prefix", prefix, "--status", "running", "--json")),
    );
    assert.deepEqual(page.items.map((s: { id: string }) => s.id), [order.id]);
    assert.equal(page.nextCursor, null);
    const byDefinition = JSON.parse(
      ok(await cli("executions", "--prefix", prefix, "--definition", "invoice", "--json")),
    );
    assert.deepEqual(byDefinition.items.map((s: { id: string }) => s.id), [other.id]);
    const first = JSON.parse(
      ok(await cli("executions", "--prefix", prefix, "--limit", "1", "--json")),
    );
    assert.equal(first.items.length, 1);
    assert.ok(first.nextCursor);
    const second = JSON.parse(
      ok(
        await cli(
          "executions",
          "--prefix",
          prefix,
          "--limit",
          "1",
          "--cursor",
          first.nextCursor,
          "--json",
        ),
      ),
    );
    assert.notEqual(second.items[0].id, first.items[0].id);
  });

  await t.step("show prints the document, the trace and the armed timers", async () => {
    const shown = JSON.parse(ok(await cli("show", order.id, "--prefix", prefix, "--json")));
    assert.equal(shown.execution.id, order.id);
    assert.equal(shown.execution.version, 1);
    assert.deepEqual(shown.trace, await store.readTrace(order.id));
    assert.deepEqual(shown.trace.map((step: { to: string }) => step.to), ["order.new"]);
    assert.deepEqual(shown.timers.map((t: { path: string }) => t.path).sort(), [
      "order.expiry",
      "order.payment",
    ]);
    const text = ok(await cli("show", order.id, "--prefix", prefix));
    assert.match(text, /trace \(1 steps/);
    assert.match(text, /armed timers \(2\)/);
    assert.match(text, /order\.payment\s+\d{4}-\d\d-\d\dT[\d:.]+Z\s+\d+ s ago/);
  });

  await t.step("outbox counts the backlog and lists the oldest entries", async () => {
    const backlog = JSON.parse(
      ok(await cli("outbox", "--prefix", prefix, "--limit", "1", "--json")),
    );
    assert.equal(backlog.outbox, 2);
    assert.equal(backlog.spawns, 0);
    const pending = await store.pendingOutbox();
    assert.deepEqual(backlog.oldest.map((e: { seq: number }) => e.seq), [pending[0]!.seq]);
    assert.equal(backlog.oldest[0].event.kind, "order.created");
    const text = ok(await cli("outbox", "--prefix", prefix));
    assert.match(text, /outbox backlog: 2 entries; pending spawns: 0/);
    assert.match(text, /\(broadcast\)\s+order\.created/);
  });

  await t.step("timers lists armed timers, --due only the due ones", async () => {
    const all = JSON.parse(ok(await cli("timers", "--prefix", prefix, "--json")));
    assert.equal(all.total, 2);
    assert.deepEqual(all.timers.map((t: { path: string }) => t.path), [
      "order.payment",
      "order.expiry",
    ]);
    const due = JSON.parse(ok(await cli("timers", "--due", "--prefix", prefix, "--json")));
    assert.deepEqual(due.timers, [{
      executionId: order.id,
      path: "order.payment",
      fireAt: now - 60,
    }]);
    assert.match(ok(await cli("timers", "--due", "--prefix", prefix)), /^1 due timers/);
  });

  await t.step("show of an unknown id is a runtime error", async () => {
    const run = await cli("show", "no-such-id", "--prefix", prefix);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /no execution "no-such-id" in .*_executions/);
  });
});

Deno.test("the CLI refuses bad usage with exit code 2 and a message", async (t) => {
  const cases: [string[], RegExp][] = [
    [["executions", "--bogus"], /Unknown option '--bogus'/],
    [["frobnicate"], /unknown command "frobnicate"/],
    [[], /no command given/],
    [["show"], /show needs exactly 1 argument/],
    [["executions", "--limit", "0"], /--limit must be a whole number from 1 to 1000/],
    [["executions", "--status", "SLEEPING"], /--status "SLEEPING" is not a status/],
    [["timers", "--status", "RUNNING"], /--status does not apply to timers/],
    [["executions", "--prefix", "no spaces"], /prefix must be/],
    [["show", ""], /id must/],
  ];
  for (const [args, message] of cases) {
    await t.step(args.join(" ") || "(nothing)", async () => {
      const run = await cli(...args);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
      assert.match(run.stderr, /--help/);
    });
  }
  await t.step("--help prints the usage and exits 0", async () => {
    const help = ok(await cli("--help"));
    for (const command of ["executions", "show", "outbox", "timers", "ensure-tables", "policy"]) {
      assert.match(help, new RegExp(`^  ${command}`, "m"));
    }
  });
});

Deno.test("the CLI names a missing table and exits 1", async () => {
  const prefix = uniqueName("cli_none");
  for (const command of ["executions", "outbox", "timers"]) {
    const run = await cli(command, "--prefix", prefix);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, new RegExp(`table ${prefix}_\\w+ does not exist`));
    assert.match(run.stderr, /ensure-tables/);
  }
});

Deno.test("the CLI names an endpoint it cannot reach, prints each failed attempt while it waits, and exits 1", async () => {
  const started = Date.now();
  const run = await cli("executions", "--endpoint", "http://127.0.0.1:9");
  assert.equal(run.code, 1, run.stderr);
  assert.ok(Date.now() - started < 15_000, "gives up after about 5 s");
  const waits = run.stderr.split("\n").filter((line) => line.startsWith("waiting for DynamoDB"));
  assert.ok(waits.length >= 2, run.stderr);
  assert.match(
    waits[0]!,
    /^waiting for DynamoDB at http:\/\/127\.0\.0\.1:9: attempt 1 failed \(connect ECONNREFUSED 127\.0\.0\.1:9\); retrying in \d\.\d s \(gives up after 5 s\)$/,
  );
  assert.match(run.stderr, /cannot reach DynamoDB at http:\/\/127\.0\.0\.1:9/);
  assert.match(run.stderr, /did not answer within \d+ ms/);
  assert.match(run.stderr, /Start one with `deno task dynamodb`/);
  assert.equal(run.stdout, "");
});

Deno.test("the CLI says what answered when the endpoint is not DynamoDB", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("<html>It works!</html>", { headers: { "content-type": "text/html" } }),
  );
  const run = await cli("outbox", "--endpoint", `http://127.0.0.1:${server.addr.port}`);
  assert.equal(run.code, 1, run.stderr);
  assert.match(
    run.stderr,
    /answered HTTP 200 text\/html starting "<html>It w": that is not DynamoDB/,
  );
  assert.doesNotMatch(run.stderr, /waiting for DynamoDB/, "no wait: waiting cannot fix it");
});

Deno.test("the CLI's policy is the least-privilege policy for the prefix", async () => {
  const policy = JSON.parse(
    ok(await cli("policy", "--prefix", "prod", "--account", "123456789012")),
  );
  assert.deepEqual(policy, leastPrivilegePolicy({ prefix: "prod", account: "123456789012" }));
  assert.ok(
    policy.Statement.every((s: { Resource: string[] }) =>
      s.Resource.every((arn) =>
        /^arn:aws:dynamodb:\*:123456789012:table\/(prod_\w+|harel_state)$/.test(arn)
      )
    ),
  );
});
