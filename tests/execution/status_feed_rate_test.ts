// The status feed (#39) at 100 of the Python store's commits a second (seed_commits.py, boto3,
// the seed's whole-item Put): a round or a few catch up, the feed's own write-backs are no work,
// and listings show each execution under its status with when it was last committed. Streamed
// tables slow DynamoDB Local down: a database of its own (another region).
import assert from "node:assert/strict";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore } from "../../mod.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";

const REGION = "eu-feed-2";

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
