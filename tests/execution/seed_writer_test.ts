// tests/_support/seed_writer.py writes the rows the Python store writes, with exactly the seed's
// attributes, and our store reads them.
import assert from "node:assert/strict";
import { sweepTimers } from "../../mod.ts";
import { type AttributeValue, ScanCommand } from "@aws-sdk/client-dynamodb";
import { endpoint, freshStore, testClient, uniqueName } from "../_support/env.ts";
import { seedWrite } from "../_support/seed_writer.ts";

type Item = Record<string, AttributeValue>;

async function scanAll(client: ReturnType<typeof testClient>, table: string): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    items.push(...page.Items ?? []);
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

const names = (item: Item) => Object.keys(item).sort();

Deno.test("seed_writer.py commits rows with exactly the seed's attributes", async () => {
  using client = testClient();
  const prefix = uniqueName("sw");
  const wrote = await seedWrite({
    endpoint: endpoint(),
    prefix,
    ensureTables: true,
    executions: 2,
    commits: 2,
    emits: 2,
    spawns: 1,
    timers: 1,
  });
  const table = (name: string) => scanAll(client, `${prefix}_${name}`);

  const executions = await table("executions");
  assert.equal(executions.length, 2);
  for (const item of executions) {
    assert.deepEqual(names(item), ["data", "definition_id", "id", "version"]);
    assert.equal(item.version!.N, "3"); // the insert and two commits
    assert.equal(JSON.parse(item.data!.S!).version, 3);
  }
  assert.deepEqual(
    executions.map((i) => i.id!.S).sort(),
    wrote.executions.map((e) => e.id).sort(),
  );

  const outbox = await table("outbox");
  assert.equal(outbox.length, 8);
  for (const item of outbox) assert.deepEqual(names(item), ["event", "seq", "target_id"]);
  const bySeq = new Map(outbox.map((i) => [Number(i.seq!.N), i]));
  for (const entry of wrote.outbox) {
    const item = bySeq.get(entry.seq)!;
    assert.equal(JSON.parse(item.event!.S!).id, entry.eventId);
    assert.deepEqual(
      item.target_id,
      entry.targetId === null ? { NULL: true } : { S: entry.targetId },
    );
  }

  const spawns = await table("spawns");
  assert.equal(spawns.length, 4);
  for (const item of spawns) {
    assert.deepEqual(names(item), ["child_id", "context", "parent_id", "root_path", "seq"]);
  }
  assert.deepEqual(
    spawns.map((i) => Number(i.seq!.N)).sort((a, b) => a - b),
    wrote.spawns.map((s) => s.seq).sort((a, b) => a - b),
  );

  const timers = await table("timers"); // the second commit re-scheduled each execution's path
  assert.equal(timers.length, 2);
  for (const item of timers) assert.deepEqual(names(item), ["execution_id", "fire_at", "path"]);
  assert.deepEqual(
    timers.map((i) => [i.execution_id!.S, i.path!.S, Number(i.fire_at!.N)]).sort(),
    wrote.timers.map((t) => [t.executionId, t.path, t.fireAt]).sort(),
  );

  const processed = await table("processed");
  assert.equal(processed.length, 4);
  for (const item of processed) assert.deepEqual(names(item), ["event_id", "execution_id"]);

  const counters = await table("counters"); // one ADD per kind per commit
  assert.deepEqual(
    counters.map((i) => [names(i), i.id!.S, i.n!.N]).sort(),
    [[["id", "n"], "outbox", "8"], [["id", "n"], "spawn", "4"]],
  );
});

Deno.test("our store reads what seed_writer.py commits into its tables", async () => {
  // The seed's rows carry no index keys: the reads of a store of a mixed fleet find them by the
  // seqs it took (outbox, spawns) and by the timers table's scan.
  await using store = await freshStore({ otherWriters: true });
  const wrote = await seedWrite({
    endpoint: endpoint(),
    prefix: store.tables.executions.name.replace(/_executions$/, ""),
    emits: 3,
    timers: 1,
  });
  const [exe] = wrote.executions;
  assert.equal((await store.load(exe!.id))?.version, 2);
  assert.deepEqual(
    (await store.pendingOutbox()).map((e) => [e.seq, e.targetId, e.event.id]),
    wrote.outbox.map((e) => [e.seq, e.targetId, e.eventId]),
  );
  assert.ok(await store.isProcessed(exe!.id, wrote.processed[0]!.eventId));
  // Timers have no seq: a plain dueTimers reads the index, { scan: true } the table, and a
  // sweep's scan of the timers table fires them within one sweep.
  const later = Date.now() / 1000 + 7200;
  const expected = wrote.timers.map((t) => [t.executionId, t.path, t.fireAt]);
  const due = await store.dueTimers(later, { scan: true });
  assert.deepEqual(due.map((t) => [t.executionId, t.path, t.fireAt]), expected);
  const fired: unknown[] = [];
  await sweepTimers(
    store,
    (t) => Promise.resolve(void fired.push([t.executionId, t.path, t.fireAt])),
    {
      now: later,
    },
  );
  assert.deepEqual(fired, expected);
});
