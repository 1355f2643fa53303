// The operator CLI on tables shared with the Python store: `executions --status`,
// `outbox` and `timers` show every writer's rows, bounded by --limit, and write nothing (every
// call the CLI sends goes through a counting proxy: no write among them).
import assert from "node:assert/strict";
import { DynamoDBStore, newEvent, newExecution } from "../../mod.ts";
import { endpoint, uniqueName } from "../_support/env.ts";
import { countingProxy } from "../_support/counting_proxy.ts";
import { cli, ok } from "../_support/cli.ts";
import { seedWrite } from "../_support/seed_writer.ts";

/** Calls that write (or change a table). */
const WRITES =
  /^(PutItem|UpdateItem|DeleteItem|BatchWriteItem|TransactWriteItems|CreateTable|UpdateTable|UpdateTimeToLive)$/;

Deno.test("cli executions --status, outbox and timers with --other-writers show the Python store's rows, bounded by --limit, writing nothing", async () => {
  const prefix = uniqueName("cli_mixed");
  {
    // The mixed fleet's tables (streams on); the store closes before anything is committed, so
    // that no feed round of ours puts the Python store's executions into the index.
    await using mixed = await DynamoDBStore.create({
      endpoint: endpoint(),
      prefix,
      otherWriters: true,
    });
    assert.ok(mixed.tables.executions.name);
  }
  const ours = newExecution({ definition_id: "ours", status: "RUNNING" });
  {
    // Ours, committed by a default store (it runs no feed).
    await using store = await DynamoDBStore.create({
      endpoint: endpoint(),
      prefix,
      ensureTables: false,
    });
    await store.save(ours);
    await store.commit(ours, { emits: [{ target: "t-ours", event: newEvent("ours") }] });
  }
  const wrote = await seedWrite({
    endpoint: endpoint(),
    prefix,
    executions: 3,
    emits: 2,
    timers: 1,
  });
  const theirs = wrote.executions.map((e) => e.id);

  const proxy = countingProxy();
  try {
    const run = (...args: string[]) =>
      cli(...args, "--prefix", prefix, "--endpoint", proxy.url, "--json");
    // Without the flag, the status index shows only ours (no feed round put theirs back).
    const indexOnly = JSON.parse(ok(await run("executions", "--status", "RUNNING")));
    assert.deepEqual(indexOnly.items.map((s: { id: string }) => s.id), [ours.id]);

    const all = JSON.parse(ok(await run("executions", "--status", "RUNNING", "--other-writers")));
    const written = () => proxy.calls.filter((call) => WRITES.test(call));
    assert.deepEqual(written(), [], "nothing written by a listing");
    const ids: string[] = all.items.map((s: { id: string }) => s.id);
    assert.deepEqual(ids.toSorted(), [...theirs, ours.id].sort());
    assert.equal(ids.at(-1), ours.id, "the index's entries after the other writers' commits");
    assert.equal(all.otherWriters, 3);
    for (const summary of all.items.slice(0, 3)) {
      assert.equal(summary.definition_id, "seed_writer");
      assert.equal(typeof summary.updated_at, "number", "when the Python store committed it");
    }
    // Bounded by --limit: the 2 most recent of theirs, nothing of the index.
    const two = JSON.parse(
      ok(await run("executions", "--status", "RUNNING", "--other-writers", "--limit", "2")),
    );
    assert.equal(two.items.length, 2);
    assert.ok(two.items.every((s: { id: string }) => theirs.includes(s.id)));
    // Another status selects none of theirs.
    const done = JSON.parse(ok(await run("executions", "--status", "DONE", "--other-writers")));
    assert.deepEqual(done.items, []);
    const text = ok(
      await cli(
        "executions",
        "--prefix",
        prefix,
        "--endpoint",
        proxy.url,
        "--status",
        "RUNNING",
        "--other-writers",
      ),
    );
    assert.match(text, /4 shown \(3 committed by other writers, not in the status index yet\)/);

    // outbox and timers: every writer's rows (the whole table, read), bounded by --limit.
    const outbox = JSON.parse(ok(await run("outbox", "--other-writers")));
    assert.equal(outbox.outbox, wrote.outbox.length + 1);
    const seqs = outbox.oldest.map((row: { seq: number }) => row.seq);
    for (const { seq } of wrote.outbox) assert.ok(seqs.includes(seq), `seq ${seq} shown`);
    const few = JSON.parse(ok(await run("outbox", "--other-writers", "--limit", "2")));
    assert.equal(few.oldest.length, 2);
    const timers = JSON.parse(ok(await run("timers", "--other-writers", "--limit", "2")));
    assert.equal(timers.total, wrote.timers.length);
    assert.equal(timers.timers.length, 2);
    assert.ok(
      timers.timers.every((t: { executionId: string }) => theirs.includes(t.executionId)),
    );

    assert.ok(
      proxy.calls.some((call) => call.endsWith("GetRecords")),
      `the executions stream was read: ${[...new Set(proxy.calls)]}`,
    );
    assert.deepEqual(written(), [], "nothing written");
  } finally {
    await proxy.server.shutdown();
  }
});
