// The operator CLI's executions at scale, end to end (`deno run src/cli.ts ...` against
// the test DynamoDB): executions by status newest first with their last commit time, the stuck
// ones (--before), a year of finished executions deleted with one command, and when a finished
// execution expires.
import assert from "node:assert/strict";
import { DynamoDBStore, newExecution } from "../../mod.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";
import { fillExecutions } from "../_support/executions.ts";
import { cli, ok } from "../_support/cli.ts";

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

Deno.test("executions --status lists latest to enter their status first with the time of each one's last commit; --before finds the stuck ones", async () => {
  const prefix = uniqueName("cli_six");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
  const saved = [];
  for (let i = 0; i < 3; i++) {
    const exe = newExecution({ definition_id: "order", status: "RUNNING" });
    await store.save(exe);
    saved.push(exe);
    await tick();
  }
  await store.save(newExecution({ definition_id: "order", status: "DONE" }));
  const page = JSON.parse(
    ok(await cli("executions", "--prefix", prefix, "--status", "RUNNING", "--json")),
  );
  assert.deepEqual(page.items.map((s: { id: string }) => s.id), saved.map((e) => e.id).reverse());
  const times: number[] = page.items.map((s: { updated_at: number }) => s.updated_at);

  const text = ok(await cli("executions", "--prefix", prefix, "--status", "RUNNING"));
  const lines = text.trim().split("\n");
  assert.match(lines[0]!, /^ID\s+DEFINITION\s+STATUS\s+UPDATED\s+ACTIVE PATH/);
  assert.deepEqual(
    lines.slice(1, 4).map((line) => line.split(/\s+/)[0]),
    page.items.map((s: { id: string }) => s.id),
  );
  const updated = new Date(Math.floor(times[0]!) * 1000).toISOString().replace(".000Z", "Z");
  assert.ok(lines[1]!.includes(updated), `${lines[1]} shows ${updated}`);

  const stuck = JSON.parse(ok(
    await cli(
      "executions",
      "--prefix",
      prefix,
      "--status",
      "RUNNING",
      "--before",
      String(times[1]),
      "--json",
    ),
  ));
  assert.deepEqual(stuck.items.map((s: { id: string }) => s.id), [saved[0]!.id]);
  const none = JSON.parse(ok(
    await cli(
      "executions",
      "--prefix",
      prefix,
      "--status",
      "RUNNING",
      "--before",
      "2000-01-01",
      "--json",
    ),
  ));
  assert.deepEqual(none.items, []);
});

Deno.test("--before refuses milliseconds and what is not a date with exit code 2, saying what it expects", async (t) => {
  const cases: [string, RegExp][] = [
    [String(Date.now()), /--before \d+ is epoch milliseconds .*give epoch seconds \(\d+\)/],
    ["2026-02-30", /--before needs a date \(2026-11-01 or 2026-11-01T12:00:00Z\) or epoch seconds/],
    ["2026-11-01T12:00:00", /a time needs its offset: Z or \+02:00/],
    ["yesterday", /--before needs a date/],
  ];
  for (const [before, message] of cases) {
    await t.step(before, async () => {
      const run = await cli("executions", "--status", "RUNNING", "--before", before);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
    });
  }
});

Deno.test("delete --status --before deletes a year of finished executions with one command, with progress on stderr", async (t) => {
  const prefix = uniqueName("cli_bulk");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
  using client = testClient();
  const table = store.tables.executions.name;
  const yearAgo = Date.now() / 1000 - 400 * 86_400;
  const old = await fillExecutions(client, table, 60, { status: "DONE", from: yearAgo });
  await fillExecutions(client, table, 3, { status: "FAILED", from: yearAgo });
  await fillExecutions(client, table, 2, { status: "RUNNING", from: yearAgo });
  const recent = newExecution({ definition_id: "filled", status: "DONE" });
  await store.save(recent);
  const before = new Date(Date.now() - 200 * 86_400_000).toISOString().slice(0, 10);

  await t.step("without --yes it changes nothing and says what it would delete", async () => {
    const run = await cli(
      "delete",
      "--prefix",
      prefix,
      "--status",
      "DONE,FAILED",
      "--before",
      before,
    );
    assert.equal(run.code, 2);
    assert.match(
      run.stderr,
      /delete removes every one of the DONE, FAILED executions last committed before .*: run it again with --yes/,
    );
    assert.equal((await store.listExecutions({ status: "DONE", limit: 1000 })).items.length, 61);
  });
  await t.step("open statuses, half a filter or an id with a filter are usage errors", async () => {
    const runs: [string[], RegExp][] = [
      [
        ["--status", "RUNNING", "--before", before, "--yes"],
        /RUNNING is open: add --allow-open to delete open ones too/,
      ],
      [["--status", "DONE", "--yes"], /delete takes an execution id, or --status S and --before/],
      [["some-id", "--status", "DONE", "--yes"], /not both/],
    ];
    for (const [args, message] of runs) {
      const run = await cli("delete", "--prefix", prefix, ...args);
      assert.equal(run.code, 2, `${args}: ${run.stderr}`);
      assert.match(run.stderr, message);
    }
  });
  await t.step("with --yes it deletes them all and reports progress and the total", async () => {
    const run = await cli(
      "delete",
      "--prefix",
      prefix,
      "--status",
      "DONE,FAILED",
      "--before",
      before,
      "--yes",
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /deleting: \d+ deleted, \d+ examined, [\d.]+\/s/);
    assert.match(run.stdout, /deleted 63 executions \(63 examined\) in [\d.]+ s/);
    for (const exe of old.slice(0, 5)) assert.equal(await store.load(exe.id), null);
    assert.deepEqual(
      (await store.listExecutions({ status: ["DONE", "FAILED", "RUNNING"] })).items.map((s) =>
        s.status
      ),
      ["DONE", "RUNNING", "RUNNING"],
    );
  });
  await t.step("--json says how many, and a second run finds none", async () => {
    const run = await cli(
      "delete",
      "--prefix",
      prefix,
      "--status",
      "DONE",
      "--before",
      before,
      "--yes",
      "--json",
    );
    const result = JSON.parse(ok(run));
    assert.equal(result.deleted, 0);
    assert.equal(typeof result.seconds, "number");
  });
});

Deno.test("show prints when an execution was last committed and when a finished one expires", async () => {
  const prefix = uniqueName("cli_show");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
    finishedTtlSeconds: 30 * 86_400,
  });
  const done = newExecution({ definition_id: "order", status: "DONE" });
  const open = newExecution({ definition_id: "order", status: "RUNNING" });
  await store.save(done);
  await store.commit(open, { timers: [{ action: "schedule", path: "wait", fireAt: 2e9 }] });
  const shown = JSON.parse(ok(await cli("show", done.id, "--prefix", prefix, "--json")));
  const expiresAt = Math.floor(Date.now() / 1000) + 30 * 86_400;
  assert.ok(Math.abs(shown.expiresAt - expiresAt) <= 5, `${shown.expiresAt}`);
  assert.equal(typeof shown.updatedAt, "number");
  const text = ok(await cli("show", done.id, "--prefix", prefix));
  assert.match(text, /^expires: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(30 d\)$/m);
  assert.match(text, /^updated: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(\d+ s ago\)$/m);
  const running = ok(await cli("show", open.id, "--prefix", prefix));
  assert.match(running, /^expires: never \(kept until deleted\)$/m);
  assert.match(running, /armed timers \(1\):\n.*\n.*wait/);
  const json = JSON.parse(ok(await cli("show", open.id, "--prefix", prefix, "--json")));
  assert.deepEqual(json.timers, [{
    executionId: open.id,
    path: "wait",
    fireAt: 2e9,
    attempts: 0,
    retryAt: null,
    deadAt: null,
    lastError: null,
  }]);
});
