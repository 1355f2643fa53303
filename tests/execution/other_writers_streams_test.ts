// The streams a store built with `otherWriters: true` reads: the feeds read the new and old images
// of each change, so a stream of another view (or none) is a difference checkTables() reports,
// ensureTables() replaces, and create({ ensureTables: false }) refuses. Streamed tables slow
// DynamoDB Local down: a database of this file's own.
import assert from "node:assert/strict";
import {
  DescribeTableCommand,
  type DynamoDBClient,
  type StreamViewType,
  UpdateTableCommand,
} from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, relayOutbox, relaySpawns, TableDrift } from "../../mod.ts";
import { endpoint, ownRegion, pause, testClient, uniqueName } from "../_support/env.ts";
import { seedWrite } from "../_support/seed_writer.ts";

const REGION = ownRegion("ows");

/** Turns the stream of `table` on with `view` (null: leaves it off), as another tool might. */
async function stream(client: DynamoDBClient, table: string, view: StreamViewType | null) {
  if (view === null) return;
  await client.send(
    new UpdateTableCommand({
      TableName: table,
      StreamSpecification: { StreamEnabled: true, StreamViewType: view },
    }),
  );
  for (;;) {
    const described = await client.send(new DescribeTableCommand({ TableName: table }));
    if (described.Table?.TableStatus === "ACTIVE") return;
    await pause(100);
  }
}

/** The tables of a fresh prefix (no stream), then the streams another tool turned on. */
async function tablesWithStreams(
  client: DynamoDBClient,
  views: Partial<Record<"executions" | "outbox" | "spawns" | "timers", StreamViewType>>,
): Promise<string> {
  const prefix = uniqueName("ows");
  const plain = new DynamoDBStore(client, { prefix });
  await plain.ensureTables();
  await Promise.all(
    Object.entries(views).map(([role, view]) => stream(client, `${prefix}_${role}`, view)),
  );
  return prefix;
}

const kinds = (differences: { table: string; kind: string }[], prefix: string) =>
  differences.map(({ table, kind }) => `${table.slice(prefix.length + 1)}: ${kind}`).sort();

Deno.test("checkTables() reports each stream a store with other writers cannot read, and ensureTables() replaces it", async () => {
  using client = testClient(REGION);
  const prefix = await tablesWithStreams(client, {
    outbox: "KEYS_ONLY",
    spawns: "OLD_IMAGE",
    timers: "NEW_IMAGE",
  });
  const store = new DynamoDBStore(client, { prefix, otherWriters: true });
  const differences = await store.checkTables();
  assert.deepEqual(kinds(differences, prefix), [
    "executions: missing stream",
    "outbox: wrong stream view",
    "spawns: wrong stream view",
    "timers: wrong stream view",
  ]);
  const outbox = differences.find((d) => d.table === `${prefix}_outbox`)!;
  assert.match(outbox.problem, /KEYS_ONLY/);
  assert.match(outbox.problem, /NEW_AND_OLD_IMAGES/);
  assert.match(outbox.fix, /ensureTables\(\)/);
  assert.match(outbox.fix, /StreamEnabled=false/);
  // A default store reads no stream: nothing differs for it.
  assert.deepEqual(await new DynamoDBStore(client, { prefix }).checkTables(), []);

  await store.ensureTables();
  assert.deepEqual(await store.checkTables(), []);
  for (const role of ["executions", "outbox", "spawns", "timers"]) {
    const { Table } = await client.send(
      new DescribeTableCommand({ TableName: `${prefix}_${role}` }),
    );
    assert.equal(Table?.StreamSpecification?.StreamViewType, "NEW_AND_OLD_IMAGES", role);
  }
});

Deno.test("the Python store's entries and spawns are delivered on tables whose streams had the wrong view, once create() ensured them", async () => {
  using client = testClient(REGION);
  const prefix = await tablesWithStreams(client, {
    executions: "NEW_IMAGE",
    outbox: "KEYS_ONLY",
    spawns: "OLD_IMAGE",
    timers: "KEYS_ONLY",
  });
  const open = () =>
    DynamoDBStore.create({ endpoint: endpoint(), region: REGION, prefix, otherWriters: true });
  const delivered = new Set<string>();
  const started = new Set<string>();
  const pass = async () => {
    await using store = await open();
    await relayOutbox(store, (entry) => void delivered.add(entry.event.id));
    await relaySpawns(store, (spawn) => void started.add(spawn.childId));
  };
  // The feeds' first rounds: the one-off scan of rows older than their streams is done.
  await pass();
  const entries = await seedWrite({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    executions: 1,
    commits: 5,
    emits: 2,
  });
  const spawns = await seedWrite({
    endpoint: endpoint(),
    region: REGION,
    prefix,
    executions: 3,
    spawns: 1,
  });
  for (let passes = 0; passes < 5; passes++) await pass();
  assert.equal(delivered.size, 10);
  assert.deepEqual(
    [...delivered].sort(),
    entries.outbox.map((entry) => entry.eventId).sort(),
  );
  assert.deepEqual([...started].sort(), spawns.spawns.map((spawn) => spawn.childId).sort());
});

Deno.test("create({ otherWriters: true, ensureTables: false }) refuses tables whose streams it cannot read, saying why and what to run", async (t) => {
  using client = testClient(REGION);
  const open = (prefix: string) =>
    DynamoDBStore.create({
      endpoint: endpoint(),
      region: REGION,
      prefix,
      otherWriters: true,
      ensureTables: false,
    });
  await t.step("no stream", async () => {
    const prefix = await tablesWithStreams(client, {});
    const error = await open(prefix).then(() => null, (e) => e);
    assert.ok(error instanceof TableDrift, String(error));
    assert.deepEqual(kinds(error.differences, prefix), [
      "executions: missing stream",
      "outbox: missing stream",
      "spawns: missing stream",
      "timers: missing stream",
    ]);
    assert.match(error.message, /other writers/);
    assert.match(error.message, /ensureTables\(\)/);
    // A default store on the same tables opens.
    await (await DynamoDBStore.create({
      endpoint: endpoint(),
      region: REGION,
      prefix,
      ensureTables: false,
    })).close();
  });
  await t.step("a keys-only stream", async () => {
    const prefix = await tablesWithStreams(client, {
      executions: "NEW_AND_OLD_IMAGES",
      outbox: "KEYS_ONLY",
      spawns: "NEW_AND_OLD_IMAGES",
      timers: "NEW_AND_OLD_IMAGES",
    });
    const error = await open(prefix).then(() => null, (e) => e);
    assert.ok(error instanceof TableDrift, String(error));
    assert.deepEqual(kinds(error.differences, prefix), ["outbox: wrong stream view"]);
  });
  await t.step("the streams it reads", async () => {
    const prefix = uniqueName("ows");
    await new DynamoDBStore(client, { prefix, otherWriters: true }).ensureTables();
    await (await open(prefix)).close();
  });
});

Deno.test("a store with other writers built on a stream of the wrong view says so when its feed reads it", async () => {
  using client = testClient(REGION);
  const prefix = await tablesWithStreams(client, {
    executions: "KEYS_ONLY",
    outbox: "NEW_AND_OLD_IMAGES",
    spawns: "NEW_AND_OLD_IMAGES",
    timers: "NEW_AND_OLD_IMAGES",
  });
  await using store = new DynamoDBStore(client, { prefix, otherWriters: true });
  const error = await store.catchUpStatusIndex().then(() => null, (e) => e);
  assert.ok(error instanceof TableDrift, String(error));
  assert.match(error.message, new RegExp(`${prefix}_executions has a KEYS_ONLY stream`));
});
