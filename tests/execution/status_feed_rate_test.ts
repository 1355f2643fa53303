// The status feed at 100 of the Python store's commits a second (seed_commits.py, boto3,
// the seed's whole-item Put): a round or a few catch up, the feed's own write-backs and this
// store's commits are no work, a cron pass that closes its store lets its round end, and a round
// stops at its signal. Streamed tables slow DynamoDB Local down: databases of their own.
import assert from "node:assert/strict";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, type Execution, relayOutbox, sweepTimers } from "../../mod.ts";
import { endpoint, ownRegion, testClient, uniqueName } from "../_support/env.ts";
import { seedWrite } from "../_support/seed_writer.ts";
import { countingProxy } from "../_support/counting_proxy.ts";
import { concurrentTest } from "../_support/concurrent_steps.ts";
import { fillExecutions } from "../_support/executions.ts";

const REGION = ownRegion("feed");

/**
 * The cases after the first, run as steps of one test at once, each in a database of its own
 * (tests/_support/concurrent_steps.ts). The first times its writer, and runs alone.
 */
const test = concurrentTest(
  "the status feed behind other work: our own commits, the README's cron pattern, a signal",
);

/** An item's size as DynamoDB counts it (names and values, near enough for maps and strings). */
function itemBytes(item: Record<string, unknown>): number {
  return new TextEncoder().encode(JSON.stringify(item)).length;
}

/** Rounds until one is not behind (at most `most`); their reports. */
async function catchUp(store: DynamoDBStore, most: number) {
  const rounds = [];
  do rounds.push(await store.catchUpStatusIndex()); while (
    rounds.at(-1)!.behind && rounds.length < most
  );
  return rounds;
}

Deno.test("the status feed at 100 of the Python store's commits a second: caught up in a few rounds, its own write-backs no work, every execution listed with when it was committed", async () => {
  const prefix = uniqueName("tf");
  using client = testClient(REGION);
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    otherWriters: true,
  });
  await store.catchUpStatusIndex(); // the one-off scan of an empty table
  const before = Math.floor(Date.now() / 1000);
  const out = await new Deno.Command("python3", {
    args: [
      new URL("../_support/seed_commits.py", import.meta.url).pathname,
      ...["--endpoint", endpoint(), "--prefix", prefix],
      ...["--executions", "100", "--rate", "100", "--seconds", "10", "--threads", "4"],
    ],
    env: { AWS_REGION: REGION },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const wrote = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    executions: { id: string; version: number }[];
    commits: number;
    seconds: number;
  };
  const after = Math.ceil(Date.now() / 1000);
  assert.equal(wrote.commits, 1000);
  // The writer kept up (DynamoDB Local on a shared machine): at least 50 commits a second.
  assert.ok(wrote.seconds < 20, `the writer took ${wrote.seconds} s`);
  const started = performance.now();
  const rounds = await catchUp(store, 4);
  const ms = performance.now() - started;
  const summary = JSON.stringify(rounds);
  assert.ok(!rounds.at(-1)!.behind, `still behind after ${rounds.length} rounds: ${summary}`);
  // Each commit is one record of work; the write-backs the rounds made are not counted.
  assert.equal(rounds.reduce((sum, r) => sum + r.records, 0), wrote.commits, summary);
  assert.equal(rounds.reduce((sum, r) => sum + r.indexed, 0), 100, summary);
  // The round after reads only the write-backs: no work, no write.
  const echo = await store.catchUpStatusIndex();
  assert.deepEqual([echo.records, echo.indexed, echo.behind], [0, 0, false], JSON.stringify(echo));
  console.log(
    `1,000 commits at ${Math.round(wrote.commits / wrote.seconds)}/s: ${rounds.length} ` +
      `round(s) in ${Math.round(ms)} ms: ${summary}`,
  );
  // Every execution listed under its status at its last version, with when it was committed
  // (the record's creation time, which DynamoDB Local rounds down to the minute).
  const page = await store.listExecutions({ status: "RUNNING", limit: 1000 });
  const listed = new Map(page.items.map((s) => [s.id, s]));
  assert.equal(listed.size, 100);
  for (const { id, version } of wrote.executions) {
    const summary = listed.get(id);
    assert.equal(summary?.version, version, id);
    assert.ok(
      summary!.updated_at !== null && summary!.updated_at >= before - 60 &&
        summary!.updated_at <= after + 2,
      `${id}: updated_at ${summary!.updated_at}`,
    );
  }
  const seen = (await store.inspectExecution(wrote.executions[0]!.id))!;
  assert.ok(seen.updatedAt !== null && seen.updatedAt >= before - 60, `${seen.updatedAt}`);
  // The feed's item stays small after real rounds.
  const item = (await client.send(
    new GetItemCommand({
      TableName: store.tables.counters.name,
      Key: { id: { S: "status_feed" } },
      ConsistentRead: true,
    }),
  )).Item!;
  assert.ok(itemBytes(item) < 4096, `${itemBytes(item)} bytes`);
});

/** The ids a default store (which runs no round of its own) lists in `status`, every page. */
async function listedIds(
  region: string,
  prefix: string,
  status: Execution["status"],
): Promise<Set<string>> {
  await using reader = new DynamoDBStore(testClient(region), { prefix });
  const ids = new Set<string>();
  let cursor: string | null = null;
  do {
    const page: Awaited<ReturnType<DynamoDBStore["listExecutions"]>> = await reader
      .listExecutions({ status, limit: 1000, cursor });
    for (const summary of page.items) ids.add(summary.id);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return ids;
}

/** The Python store's inserts of `n` RUNNING executions (seed_writer.py): their ids. */
async function pythonCommits(region: string, prefix: string, n: number): Promise<string[]> {
  const wrote = await seedWrite({
    endpoint: endpoint(),
    region,
    prefix,
    executions: n,
    commits: 0,
  });
  return wrote.executions.map((exe) => exe.id);
}

test("a round does not count this store's own commits: 300 Python commits, 6,000 of ours, 300 more, all 600 listed after one round", async () => {
  const region = ownRegion("sfo");
  const prefix = uniqueName("sfo");
  using client = testClient(region);
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    region,
    prefix,
    otherWriters: true,
  });
  await store.catchUpStatusIndex(); // the one-off scan of an empty table
  const python = await pythonCommits(region, prefix, 300);
  // Items exactly as this module's commits leave them (in the index), written in batches.
  await fillExecutions(client, store.tables.executions.name, 6000, {
    status: "SUSPENDED",
    from: Math.floor(Date.now() / 1000),
  });
  python.push(...await pythonCommits(region, prefix, 300));
  const round = await store.catchUpStatusIndex();
  assert.deepEqual(
    [round.records, round.indexed, round.behind],
    [600, 600, false],
    JSON.stringify(round),
  );
  const listed = await listedIds(region, prefix, "RUNNING");
  assert.deepEqual([...listed].sort(), [...python].sort());
});

test("2,000 of the Python store's commits are listed after the first pass of the README's cron pattern", async () => {
  const region = ownRegion("sfc");
  const prefix = uniqueName("sfc");
  const open = () =>
    DynamoDBStore.create({ endpoint: endpoint(), region, prefix, otherWriters: true });
  // The tables, as the first deploy makes them (with their streams); the Python fleet commits.
  await (await open()).close();
  const python = await pythonCommits(region, prefix, 2000);
  const started = performance.now();
  {
    // The README's cron pattern (FleetClient.relay() does the same): a fresh store, relay, sweep.
    await using store = await open();
    await relayOutbox(store, () => {});
    await sweepTimers(store, () => {});
  }
  const ms = performance.now() - started;
  const listed = await listedIds(region, prefix, "RUNNING");
  console.log(`a cron pass with 2,000 commits to put back: ${Math.round(ms)} ms`);
  assert.equal(listed.size, python.length);
  assert.deepEqual([...listed].sort(), [...python].sort());
});

test("a round stops when its signal aborts, and the next goes on from where it stopped", async () => {
  const region = ownRegion("sfs");
  const prefix = uniqueName("sfs");
  // The signal aborts when the round asks for its third page of records (100 a page): whatever
  // the machine's speed, it has written back two pages and has most of the 1,000 still to read.
  const stop = new AbortController();
  let pages = 0;
  const proxy = countingProxy(0, (call) => {
    if (call.endsWith("GetRecords") && ++pages === 3) stop.abort(new Error("the test's signal"));
    return Promise.resolve();
  });
  await using _proxy = proxy.server;
  await using store = await DynamoDBStore.create({
    endpoint: proxy.url,
    region,
    prefix,
    otherWriters: true,
  });
  await store.catchUpStatusIndex(); // the one-off scan of an empty table
  await pythonCommits(region, prefix, 1000);
  pages = 0;
  const first = await store.catchUpStatusIndex({ signal: stop.signal });
  assert.ok(first.behind && first.indexed > 0 && first.records < 1000, JSON.stringify(first));
  // What it wrote back was saved: the next round reads on from there. Its records that write
  // nothing are at most the page the signal stopped, read again, and the page its own stops.
  pages = -Infinity;
  const next = await store.catchUpStatusIndex({ signal: AbortSignal.timeout(5000) });
  assert.ok(next.records > 0, JSON.stringify(next));
  assert.ok(next.records - next.indexed <= 200, JSON.stringify({ first, next }));
});
