// The operator CLI end to end: `deno run src/cli.ts ...` against the test DynamoDB.
import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStore,
  newEvent,
  newExecution,
  type OutboxEntry,
  relayOutbox,
  sweepTimers,
} from "../../mod.ts";
import { markHeld, type OutboxRow } from "../../src/cli/_cli_reads.ts";
import { leastPrivilegePolicy, main } from "../../src/cli.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";
import { cli, cliWith, ok } from "../_support/cli.ts";
import { seedOutbox } from "../_support/heap.ts";
import { putAll } from "../_support/put_all.ts";

Deno.test("the CLI shows what the stores hold, for people and as JSON", async (t) => {
  const prefix = uniqueName("cli");
  assert.match(ok(await cli("ensure-tables", "--prefix", prefix)), new RegExp(`${prefix}_trace`));
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
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
    assert.match(table, /^ID\s+DEFINITION\s+STATUS\s+UPDATED\s+ACTIVE PATH\s+VERSION\s+PARENT$/m);
    assert.match(table, new RegExp(`^${order.id}\\s+order\\s+RUNNING\\s+\\S+Z\\s+1`, "m"));
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
    assert.match(text, /trace \(1 step, oldest first\)/);
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
    assert.match(ok(await cli("timers", "--due", "--prefix", prefix)), /^1 due timer\n/);
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
        /^arn:aws:dynamodb:\*:123456789012:table\/prod_\w+(\/index\/[\w-]+|\/stream\/\*)?$/.test(
          arn,
        )
      )
    ),
  );
});

Deno.test("outbox shows a row whose event is not JSON, flagged with its raw text, and exits 0", async () => {
  const prefix = uniqueName("cli_odd");
  ok(await cli("ensure-tables", "--prefix", prefix));
  using client = testClient();
  const rows: [string, string | undefined][] = [
    ["1", JSON.stringify(newEvent("fine"))],
    ["2", "{not json"],
    ["3", undefined],
    ["4", "[1, 2]"],
    // More digits than a double holds: shown by its stored key.
    ["12345678901234567890123", JSON.stringify(newEvent("huge"))],
  ];
  for (const [seq, event] of rows) {
    await client.send(
      new PutItemCommand({
        TableName: `${prefix}_outbox`,
        Item: { seq: { N: seq }, target_id: { S: "t" }, ...(event ? { event: { S: event } } : {}) },
      }),
    );
  }
  const listed = JSON.parse(ok(await cli("outbox", "--prefix", prefix, "--json")));
  assert.equal(listed.outbox, 5);
  const [fine, notJson, missing, notObject, huge] = listed.oldest;
  assert.equal(huge.seqText, "12345678901234567890123");
  assert.equal(huge.event.kind, "huge");
  assert.equal(fine.event.kind, "fine");
  assert.equal(fine.unreadable, undefined);
  assert.equal(notJson.seq, 2);
  assert.equal(notJson.event, null);
  assert.match(notJson.unreadable, /not JSON/);
  assert.equal(notJson.raw, "{not json");
  assert.match(missing.unreadable, /no event/);
  assert.match(notObject.unreadable, /not a JSON object/);
  assert.equal(notObject.raw, "[1, 2]");
  const text = ok(await cli("outbox", "--prefix", prefix));
  assert.match(text, /^\s+2\s+t\s+\(unreadable\)\s+"\{not json"\s+pending$/m);
  assert.match(text, /3 of them unreadable/);
  assert.match(text, /^\s+12345678901234567890123\s+t\s+huge\s/m);
});

/** Writes `count` timers with long ids (~800 bytes each), due from 1_700_000_000 on, shuffled. */
async function seedTimers(table: string, count: number): Promise<void> {
  using client = testClient();
  await putAll(
    client,
    table,
    Array.from({ length: count }, (_, i) => ({
      execution_id: { S: `exe-${i}-${"x".repeat(500)}` },
      path: { S: `path.${"p".repeat(300)}` },
      fire_at: { N: String(1_700_000_000 + (i * 7919) % count) },
    })),
  );
}

Deno.test("outbox and timers read backlogs of 20,000 and 12,000 rows with a 20 MB heap: memory in --limit, not in the table", async () => {
  // The outbox holds ~8 MB of rows, the timers ~10 MB, more as JS objects: read whole (as
  // before), either dies with a 20 MB heap (the outbox with 24 MB too). Bounded, both run in 16.
  const prefix = uniqueName("cli_big");
  ok(await cli("ensure-tables", "--prefix", prefix));
  using client = testClient();
  // The two fills at once, then the three runs at once: each reads its own table.
  await Promise.all([
    seedOutbox(client, `${prefix}_outbox`, 20_000),
    seedTimers(`${prefix}_timers`, 12_000),
  ]);
  const [outbox, timers, due] = (await Promise.all([
    cliWith({ heapMb: 20 }, "outbox", "--prefix", prefix, "--limit", "5", "--json"),
    cliWith({ heapMb: 20 }, "timers", "--prefix", prefix, "--limit", "3", "--json"),
    cliWith({ heapMb: 20 }, "timers", "--due", "--prefix", prefix, "--json"),
  ])).map((run) => JSON.parse(ok(run)));
  assert.equal(outbox.outbox, 20_000);
  assert.deepEqual(outbox.oldest.map((e: { seq: number }) => e.seq), [1, 2, 3, 4, 5]);
  assert.equal(timers.total, 12_000);
  assert.deepEqual(
    timers.timers.map((t: { fireAt: number }) => t.fireAt),
    [1_700_000_000, 1_700_000_001, 1_700_000_002],
  );
  assert.equal(due.total, 12_000);
  assert.equal(due.timers.length, 100, "--limit defaults to 100");
});

Deno.test("an empty or blank --endpoint is a usage error (exit 2), never AWS", async (t) => {
  // Were it taken as AWS, any request would go to this dead port, not to an AWS account.
  const env = {
    AWS_ENDPOINT_URL_DYNAMODB: "http://127.0.0.1:9",
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
  };
  for (const args of [["ensure-tables", "--endpoint", ""], ["outbox", "--endpoint", "  "]]) {
    await t.step(args.join(" "), async () => {
      const run = await cliWith({ env }, ...args);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /--endpoint is empty/);
    });
  }
  await t.step("a blank DYNAMODB_ENDPOINT is a usage error too", async () => {
    const run = await cliWith({ env: { ...env, DYNAMODB_ENDPOINT: " " } }, "ensure-tables");
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /DYNAMODB_ENDPOINT is blank/);
  });
  await t.step(
    "an empty DYNAMODB_ENDPOINT counts as unset: AWS, and the error says so",
    async () => {
      const run = await cliWith({ env: { ...env, DYNAMODB_ENDPOINT: "" } }, "outbox");
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /cannot reach DynamoDB at AWS/);
    },
  );
});

Deno.test("the CLI lists, retries and drops dead letters", async () => {
  const prefix = uniqueName("clidead");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
  const exe = newExecution({ definition_id: "d" });
  const { outbox } = await store.commit(exe, {
    emits: [
      { target: "down", event: newEvent("first") },
      { target: "down", event: newEvent("second") },
    ],
    timers: [{ action: "schedule", path: "wait", fireAt: 1_000 }],
  });
  const fail = () => Promise.reject(new Error("HTTP 503"));
  await relayOutbox(store, fail, { maxAttempts: 1 });
  await sweepTimers(store, fail, { maxAttempts: 1 });
  const listed = ok(await cli("dead-letters", "outbox", "--prefix", prefix));
  assert.match(listed, /^1 dead outbox entry\n/);
  assert.match(listed, new RegExp(`${outbox[0]}\\s+1\\s+.*HTTP 503.*first to down`));
  const timers = JSON.parse(ok(await cli("dead-letters", "timers", "--json", "--prefix", prefix)));
  assert.deepEqual(timers.map((l: { key: unknown }) => l.key), [
    { executionId: exe.id, path: "wait", fireAt: 1_000 },
  ]);

  const pending = await cli("drop", "outbox", String(outbox[1]), "--yes", "--prefix", prefix);
  assert.equal(pending.code, 1, "a pending entry is not dropped");
  assert.match(pending.stderr, /no dead outbox item .* or it is pending/);
  assert.equal((await cli("drop", "outbox", String(outbox[0]), "--prefix", prefix)).code, 2);
  assert.match(
    ok(await cli("retry", "timers", exe.id, "wait", "1000", "--prefix", prefix)),
    /due again/,
  );
  assert.match(
    ok(await cli("drop", "outbox", String(outbox[0]), "--yes", "--prefix", prefix)),
    /gone/,
  );
  assert.deepEqual(await store.deadLetters("outbox"), []);
  assert.deepEqual((await store.dueTimers(2_000)).map((t) => t.path), ["wait"]);
  const delivered: string[] = [];
  await relayOutbox(store, (entry) => Promise.resolve(void delivered.push(entry.event.kind)));
  assert.deepEqual(delivered, ["second"], "the target goes on once its dead letter is dropped");
  const bad = await cli("retry", "sideways", "1", "--prefix", prefix);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /outbox, spawns or timers/);
});

Deno.test("cli outbox shows an entry behind its target's dead or waiting entry as held, and behind which seq", async () => {
  const prefix = uniqueName("cliheld");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
  const exe = newExecution({ definition_id: "d" });
  const emit = (target: string, kind: string) => ({ target, event: newEvent(kind) });
  const { outbox: [dead, behindDead, alsoBehind, waiting, behindWaiting, due, afterDue] } =
    await store.commit(exe, {
      emits: [
        emit("down", "d1"),
        emit("down", "d2"),
        emit("down", "d3"),
        emit("slow", "s1"),
        emit("slow", "s2"),
        emit("soon", "n1"),
        emit("soon", "n2"),
      ],
    });
  const fail = new Set(["d1", "s1", "n1"]);
  const deliver = (entry: OutboxEntry) => {
    if (fail.has(entry.event.kind)) throw new Error(`${entry.targetId} is down`);
  };
  // d1 is dead-lettered, s1 waits an hour for its retry, n1's retry is due at once.
  await relayOutbox(store, (entry) => entry.event.kind === "d1" ? deliver(entry) : undefined, {
    maxAttempts: 1,
    limit: 1,
  });
  await relayOutbox(store, deliver, { backoff: { minSeconds: 3600 }, seqs: [waiting!] });
  await relayOutbox(store, deliver, { backoff: { minSeconds: 0 }, seqs: [due!] });

  const listed = JSON.parse(ok(await cli("outbox", "--prefix", prefix, "--json")));
  const states = Object.fromEntries(
    listed.oldest.map((row: { seq: number; state?: string; heldBehind?: number }) => [
      row.seq,
      [row.state ?? "pending", row.heldBehind],
    ]),
  );
  assert.deepEqual(states, {
    [dead!]: ["dead", undefined],
    [behindDead!]: ["held", dead],
    [alsoBehind!]: ["held", dead],
    [waiting!]: ["waiting", undefined],
    [behindWaiting!]: ["held", waiting],
    [due!]: ["waiting", undefined], // its retry is due: it holds nothing back
    [afterDue!]: ["pending", undefined],
  });
  const text = ok(await cli("outbox", "--prefix", prefix));
  assert.match(
    text,
    new RegExp(`^\\s+${behindDead}\\s+down\\s+d2\\s+\\S+\\s+held behind ${dead}$`, "m"),
  );
  assert.match(
    text,
    new RegExp(`^\\s+${waiting}\\s+slow\\s+s1\\s+\\S+\\s+waiting \\(1 attempt\\)$`, "m"),
  );
  assert.match(text, /^3 of them held behind an earlier dead or waiting entry of their target$/m);
});

Deno.test("markHeld holds a target from its lowest dead or still waiting entry, and nothing behind one set aside as unreadable", () => {
  const row = (seq: number, targetId: string | null, more: Partial<OutboxRow> = {}) => ({
    seq,
    targetId,
    event: { kind: `e${seq}` },
    ...more,
  });
  const now = 1_000;
  const shown = markHeld([
    row(1, null, { state: "waiting", attempts: 1, retryAt: now + 1 }),
    row(2, "a", { state: "dead", attempts: 3, setAside: true }),
    row(3, null),
    row(4, "a"),
    row(5, "b", { state: "waiting", attempts: 2, retryAt: now }),
    row(6, "b"),
    row(7, "a", { state: "dead", attempts: 10 }),
    row(8, "a", { state: "dead", attempts: 10 }),
    row(9, "a", { state: "waiting", attempts: 1, retryAt: now + 60 }),
  ], now);
  assert.deepEqual(
    shown.map((r) => [r.seq, r.state ?? "pending", "heldBehind" in r ? r.heldBehind : null]),
    [
      [1, "waiting", null],
      [2, "dead", null],
      [3, "held", 1],
      [4, "pending", null],
      [5, "waiting", null],
      [6, "pending", null],
      [7, "dead", null],
      [8, "dead", null],
      [9, "held", 7],
    ],
  );
});

Deno.test("the CLI refuses a dead-letter key that is no key, with exit code 2 and what a key looks like", async (t) => {
  const prefix = uniqueName("clikey");
  const cases: [string[], RegExp][] = [
    [["retry", "outbox", "1e300"], /a seq is written in decimal digits.*e\.g\. 42.*"1e300"/],
    [["retry", "outbox", "0x10"], /a seq is written in decimal digits.*"0x10"/],
    [["drop", "spawns", "Infinity", "--yes"], /a seq is written in decimal digits/],
    [["retry", "outbox", "1".repeat(300)], /at most 9007199254740991/],
    [["retry", "timers", "exe", "p", "0x10"], /FIRE_AT is epoch seconds in decimal.*"0x10"/],
    [["retry", "timers", "exe", "p", "1e300"], /fireAt.*seconds/],
    [["drop", "timers", "exe", "p", "1700000000000", "--yes"], /fireAt.*seconds/],
  ];
  for (const [args, message] of cases) {
    await t.step(args.join(" ").slice(0, 60), async () => {
      const run = await cli(...args, "--prefix", prefix);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
      assert.doesNotMatch(run.stderr, /Number overflow/);
    });
  }
});

// Odd arguments get the documented exit codes.
// Fails on the code it was written against; names the behaviour a fix must give.
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
