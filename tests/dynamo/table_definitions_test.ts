// The tables as code: tableDefinitions() is what ensureTables() creates, and the drift check
// (checkTables(), create({ checkTables })) finds every way a table made otherwise differs.
import assert from "node:assert/strict";
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStateStore,
  DynamoDBStore,
  type TableDefinition,
  tableDefinitions,
  TableDrift,
} from "../../mod.ts";
import { tableDifferences } from "../../src/dynamo/table_check.ts";
import { RELAY_INDEX, STATUS_INDEX } from "../../src/core/table_specs.ts";
import { main } from "../../src/cli.ts";
import {
  bareTables,
  countingClient,
  endpoint,
  ownRegion,
  testClient,
  uniqueName,
} from "../_support/env.ts";
import { countingProxy } from "../_support/counting_proxy.ts";

/** A database of its own for the tables with a stream (DynamoDB Local slows streamed writes). */
const STREAM_REGION = ownRegion("defs-streams");
/**
 * A database of its own for these tests: on DynamoDB Local adding an index to a table takes time
 * that grows with the whole database, and at most 5 tables may be adding one at a time.
 */
const REGION = ownRegion("defs");

/** A table as DescribeTable and DescribeTimeToLive show it, in CreateTable's shape, sorted. */
export async function described(
  client: DynamoDBClient,
  name: string,
): Promise<{ create: CreateTableCommandInput; ttlAttribute: string | null }> {
  const { Table: table } = await client.send(new DescribeTableCommand({ TableName: name }));
  const { TimeToLiveDescription: ttl } = await client.send(
    new DescribeTimeToLiveCommand({ TableName: name }),
  );
  const create: CreateTableCommandInput = {
    TableName: table!.TableName,
    BillingMode: table!.BillingModeSummary?.BillingMode,
    AttributeDefinitions: table!.AttributeDefinitions,
    KeySchema: table!.KeySchema,
  };
  if (table!.GlobalSecondaryIndexes?.length) {
    create.GlobalSecondaryIndexes = table!.GlobalSecondaryIndexes.map((index) => ({
      IndexName: index.IndexName,
      KeySchema: index.KeySchema,
      Projection: index.Projection,
    }));
  }
  if (table!.StreamSpecification?.StreamEnabled) {
    create.StreamSpecification = table!.StreamSpecification;
  }
  const on = ttl?.TimeToLiveStatus === "ENABLED" || ttl?.TimeToLiveStatus === "ENABLING";
  return { create: sorted(create), ttlAttribute: on ? ttl!.AttributeName! : null };
}

/** The input with its attribute definitions and projected attributes in name order. */
export function sorted(input: CreateTableCommandInput): CreateTableCommandInput {
  const copy = structuredClone(input);
  copy.AttributeDefinitions?.sort((a, b) => a.AttributeName!.localeCompare(b.AttributeName!));
  for (const index of copy.GlobalSecondaryIndexes ?? []) index.Projection?.NonKeyAttributes?.sort();
  return copy;
}

const expected = (definition: TableDefinition) => ({
  create: sorted(definition.create),
  ttlAttribute: definition.ttlAttribute,
});

Deno.test("tableDefinitions() defines the seven tables and the state table with their keys, indexes, TTL and stream", () => {
  const { tables, policy } = tableDefinitions({ prefix: "prod" });
  assert.deepEqual(
    Object.values(tables).map((t) => t.create.TableName),
    ["executions", "outbox", "spawns", "timers", "processed", "counters", "trace", "state"]
      .map((name) => `prod_${name}`),
  );
  for (const table of Object.values(tables)) {
    assert.equal(table.create.BillingMode, "PAY_PER_REQUEST", table.role);
    assert.equal(table.create.StreamSpecification, undefined, "no stream without other writers");
    assert.deepEqual(JSON.parse(JSON.stringify(table)), table, "the input is its own JSON");
  }
  const indexes = (role: keyof typeof tables) =>
    tables[role].create.GlobalSecondaryIndexes?.map((i) => [i.IndexName, i.Projection]);
  const relay = [[RELAY_INDEX.name, {
    ProjectionType: "INCLUDE",
    NonKeyAttributes: [...RELAY_INDEX.include],
  }]];
  assert.deepEqual(indexes("outbox"), relay);
  assert.deepEqual(indexes("spawns"), relay);
  assert.deepEqual(indexes("timers"), relay);
  assert.deepEqual(indexes("executions"), [[STATUS_INDEX.name, {
    ProjectionType: "INCLUDE",
    NonKeyAttributes: ["definition_id"],
  }]]);
  for (const role of ["processed", "counters", "trace", "state"] as const) {
    assert.equal(indexes(role), undefined, role);
  }
  assert.deepEqual(
    Object.values(tables).filter((t) => t.ttlAttribute === "ttl").map((t) => t.role),
    ["executions", "processed", "state"],
  );
  assert.ok(!JSON.stringify(policy).includes("stream"), "no Streams actions without other writers");

  const shared = tableDefinitions({ prefix: "prod", otherWriters: true, stateTable: "sessions" });
  for (const role of ["executions", "outbox", "spawns", "timers"] as const) {
    assert.deepEqual(shared.tables[role].create.StreamSpecification, {
      StreamEnabled: true,
      StreamViewType: "NEW_AND_OLD_IMAGES",
    }, `${role}: its feed reads the stream`);
  }
  for (const role of ["processed", "counters", "trace", "state"] as const) {
    assert.equal(shared.tables[role].create.StreamSpecification, undefined, role);
  }
  assert.equal(shared.tables.state.create.TableName, "sessions");
  const streams = shared.policy.Statement.find((s) => s.Sid === "HarelExecutionsStream");
  assert.deepEqual(
    streams?.Resource,
    ["executions", "outbox", "spawns", "timers"].map((t) =>
      `arn:aws:dynamodb:*:*:table/prod_${t}/stream/*`
    ),
  );
});

Deno.test("tableDefinitions() refuses a bad prefix, table name or option, naming it", () => {
  assert.throws(() => tableDefinitions({ prefix: "no spaces" }), /prefix must be/);
  assert.throws(() => tableDefinitions({ stateTable: "x" }), /stateTable must be 3 to 255/);
  assert.throws(
    () => tableDefinitions({ otherWriters: "yes" as unknown as boolean }),
    /otherWriters must be true or false, got "yes"/,
  );
  assert.throws(
    () => tableDefinitions({ otherwriters: true } as never),
    /otherwriters.*otherWriters/,
  );
  assert.throws(() => tableDefinitions({ account: "a:b" }), /account must be/);
});

for (const otherWriters of [false, true]) {
  Deno.test(
    `ensureTables() creates exactly what tableDefinitions() defines${
      otherWriters ? " (with other writers: the stream)" : ""
    }`,
    async () => {
      const region = otherWriters ? STREAM_REGION : REGION;
      using client = testClient(region);
      const prefix = uniqueName("defs");
      await new DynamoDBStore(client, { prefix, otherWriters }).ensureTables();
      await new DynamoDBStateStore(client, { tableName: `${prefix}_state` }).ensureTable();
      for (const definition of Object.values(tableDefinitions({ prefix, otherWriters }).tables)) {
        assert.deepEqual(
          await described(client, definition.create.TableName!),
          expected(definition),
          definition.role,
        );
      }
    },
  );
}

Deno.test("tables created from `cli tables --format json` describe as those ensureTables() made", async () => {
  using client = testClient(REGION);
  const made = uniqueName("made");
  const coded = uniqueName("coded");
  await new DynamoDBStore(client, { prefix: made }).ensureTables();
  await new DynamoDBStateStore(client, { tableName: `${made}_state` }).ensureTable();
  const printed: string[] = [];
  assert.equal(
    await main(["tables", "--format", "json", "--prefix", coded], { out: (l) => printed.push(l) }),
    0,
  );
  const json = JSON.parse(printed.join("\n"));
  assert.deepEqual(json.parameters, {
    prefix: coded,
    stateTable: `${coded}_state`,
    region: "*",
    account: "*",
    otherWriters: false,
  });
  const tables = Object.values(json.tables) as TableDefinition[];
  await Promise.all(tables.map(async ({ create, ttlAttribute }) => {
    await client.send(new CreateTableCommand(create));
    if (ttlAttribute) {
      await client.send(
        new UpdateTimeToLiveCommand({
          TableName: create.TableName,
          TimeToLiveSpecification: { AttributeName: ttlAttribute, Enabled: true },
        }),
      );
    }
  }));
  for (const { create } of tables) {
    const fromJson = await described(client, create.TableName!);
    const byStore = await described(client, create.TableName!.replace(coded, made));
    byStore.create.TableName = create.TableName;
    assert.deepEqual(fromJson, byStore, create.TableName);
  }
  // The check agrees: nothing differs.
  const store = new DynamoDBStore(client, { prefix: coded });
  assert.deepEqual(await store.checkTables(), []);
});

const kinds = (differences: { table: string; kind: string }[], prefix: string) =>
  differences.map(({ table, kind }) => `${table.slice(prefix.length + 1)}: ${kind}`).sort();

Deno.test("checkTables() lists the missing indexes and TTL of tables another writer made, each with its fix", async () => {
  using client = testClient(REGION);
  const prefix = uniqueName("bare");
  await bareTables(client, prefix);
  const store = new DynamoDBStore(client, { prefix });
  const differences = await store.checkTables();
  assert.deepEqual(kinds(differences, prefix), [
    "executions: missing index",
    "executions: ttl off",
    "outbox: missing index",
    "processed: ttl off",
    "spawns: missing index",
    "timers: missing index",
  ]);
  for (const difference of differences) {
    assert.ok(difference.fix.length > 20, difference.kind);
    assert.match(difference.problem, new RegExp(difference.table));
  }
  assert.match(
    differences.find((d) => d.kind === "ttl off")!.fix,
    /update-time-to-live --table-name \S+ --time-to-live-specification Enabled=true,AttributeName=ttl/,
  );
  assert.equal(differences.find((d) => d.table.endsWith("_timers"))!.index, RELAY_INDEX.name);
  await store.ensureTables();
  assert.deepEqual(await store.checkTables(), [], "ensureTables() fixes them all");
});

Deno.test("checkTables() finds TTL off on tables created from the definitions without it", async () => {
  using client = testClient(REGION);
  const prefix = uniqueName("nottl");
  const { tables } = tableDefinitions({ prefix });
  await Promise.all(
    Object.values(tables).map(({ create }) => client.send(new CreateTableCommand(create))),
  );
  const store = new DynamoDBStore(client, { prefix });
  assert.deepEqual(kinds(await store.checkTables(), prefix), [
    "executions: ttl off",
    "processed: ttl off",
  ]);
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: `${prefix}_processed`,
      TimeToLiveSpecification: { AttributeName: "expires", Enabled: true },
    }),
  );
  const [other] = (await store.checkTables()).filter((d) => d.table.endsWith("_processed"));
  assert.match(other!.problem, /it is on for the attribute expires/);
  assert.match(other!.fix, /^turn the other TTL off, then turn TTL on for "ttl"/);
});

Deno.test("checkTables() finds the stream missing only where the store needs one", async () => {
  using client = testClient(REGION);
  const prefix = uniqueName("nostream");
  await new DynamoDBStore(client, { prefix }).ensureTables();
  const shared = new DynamoDBStore(client, { prefix, otherWriters: true });
  const differences = await shared.checkTables();
  assert.deepEqual(kinds(differences, prefix), [
    "executions: missing stream",
    "outbox: missing stream",
    "spawns: missing stream",
    "timers: missing stream",
  ]);
  assert.match(differences[0]!.fix, /--stream-specification StreamEnabled=true,/);
  const alone = new DynamoDBStore(client, { prefix });
  assert.deepEqual(await alone.checkTables(), []);
});

Deno.test("create({ ensureTables: false, checkTables: true }) fails with every difference before the first call, or opens in 9 calls", async (t) => {
  using client = testClient(REGION);
  const prefix = uniqueName("drift");
  await bareTables(client, prefix);
  await t.step("tables that differ", async () => {
    const error = await DynamoDBStore.create({
      endpoint: endpoint(),
      region: REGION,
      prefix,
      ensureTables: false,
      checkTables: true,
    }).then(() => null, (e) => e);
    assert.ok(error instanceof TableDrift, String(error));
    assert.equal(error.differences.length, 6);
    assert.match(error.message, /differ from their definitions in 6 ways/);
    assert.match(error.message, /has no index relay_part-relay_order .*; fix: add it/);
  });
  await t.step("missing tables", async () => {
    const error = await DynamoDBStore.create({
      endpoint: endpoint(),
      region: REGION,
      prefix: uniqueName("none"),
      ensureTables: false,
      checkTables: true,
    }).then(() => null, (e) => e);
    assert.ok(error instanceof TableDrift, String(error));
    assert.deepEqual(error.differences.map((d) => d.kind), Array(7).fill("missing table"));
  });
  await t.step("tables that match", async () => {
    const prefix = uniqueName("match");
    await new DynamoDBStore(client, { prefix }).ensureTables();
    const proxy = countingProxy();
    try {
      await using _store = await DynamoDBStore.create({
        endpoint: proxy.url,
        region: REGION,
        prefix,
        ensureTables: false,
        checkTables: true,
      });
      assert.equal(proxy.calls.length, 9, proxy.calls.join(", "));
      assert.deepEqual(
        proxy.calls.filter((call) => call === "DescribeTimeToLive").length,
        2,
      );
    } finally {
      await proxy.server.shutdown();
    }
  });
  await t.step("a bad checkTables is refused before anything is sent", async () => {
    await assert.rejects(
      DynamoDBStore.create({ endpoint: endpoint(), checkTables: 1 as unknown as boolean }),
      /checkTables must be true or false, got 1/,
    );
  });
});

Deno.test("the drift check reports a wrong key and a narrower projection, and takes a wider one", () => {
  const { tables } = tableDefinitions({ prefix: "p" });
  const timers = tables.timers;
  const relay = timers.create.GlobalSecondaryIndexes![0]!;
  const table = {
    TableName: "p_timers",
    AttributeDefinitions: [
      { AttributeName: "execution_id", AttributeType: "S" as const },
      { AttributeName: "path", AttributeType: "N" as const },
      { AttributeName: "relay_part", AttributeType: "S" as const },
      { AttributeName: "relay_order", AttributeType: "N" as const },
    ],
    KeySchema: timers.create.KeySchema,
    GlobalSecondaryIndexes: [{
      ...relay,
      Projection: { ProjectionType: "INCLUDE" as const, NonKeyAttributes: ["fire_at"] },
    }],
  };
  const differences = tableDifferences(timers, table, undefined);
  assert.deepEqual(differences.map((d) => d.kind), ["wrong key", "missing projection"]);
  assert.match(differences[0]!.problem, /path \(N RANGE\); the stores need .*path \(S RANGE\)/);
  assert.match(differences[1]!.problem, /lacks target_id, prev_seq/);
  assert.match(differences[1]!.fix, /cannot change an index in place/);
  const wide = { ...table, AttributeDefinitions: timers.create.AttributeDefinitions };
  wide.GlobalSecondaryIndexes = [{ ...relay, Projection: { ProjectionType: "ALL" } }] as never;
  assert.deepEqual(tableDifferences(timers, wide, undefined), []);
});

Deno.test("ensureTables() on existing tables makes 13 calls: 11 DescribeTable and 2 DescribeTimeToLive", async () => {
  using client = testClient(REGION);
  const prefix = uniqueName("again");
  await new DynamoDBStore(client, { prefix }).ensureTables();
  using counting = countingClient(REGION);
  await new DynamoDBStore(counting.client, { prefix }).ensureTables();
  const tally: Record<string, number> = {};
  for (const call of counting.calls) tally[call] = (tally[call] ?? 0) + 1;
  assert.deepEqual(tally, { DescribeTableCommand: 11, DescribeTimeToLiveCommand: 2 });
});

Deno.test("the drift check never prints undefined, and each fix gives the CLI command that makes it", () => {
  const { tables } = tableDefinitions({ prefix: "p", otherWriters: true });
  const { outbox, executions } = tables;
  const relay = outbox.create.GlobalSecondaryIndexes![0]!;
  const all = [
    ...tableDifferences(outbox, null, undefined),
    // A description without the attributes' types (moto's, a hand-made table's): no type shown.
    ...tableDifferences(outbox, {
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
      GlobalSecondaryIndexes: [{
        IndexName: relay.IndexName,
        KeySchema: [{ AttributeName: "seq", KeyType: "HASH" }],
        Projection: { ProjectionType: "KEYS_ONLY" },
      }],
      StreamSpecification: { StreamEnabled: true, StreamViewType: "KEYS_ONLY" },
    }, undefined),
    ...tableDifferences(executions, { KeySchema: executions.create.KeySchema }, {
      TimeToLiveStatus: "DISABLED",
    }),
    ...tableDifferences(tables.state, { KeySchema: tables.state.create.KeySchema }, undefined),
  ];
  assert.deepEqual(new Set(all.map((d) => d.kind)).size, 8, all.map((d) => d.kind).join());
  for (const d of all) {
    assert.doesNotMatch(`${d.problem} ${d.fix}`, /undefined/, d.problem);
    assert.match(d.fix, /`cli (ensure-tables|tables) /, d.fix);
  }
  const wrongKey = all.find((d) => d.kind === "wrong key")!;
  assert.match(wrongKey.problem, /has the key id \(HASH\); the stores need seq \(N HASH\)/);
  const missing = all.find((d) => d.kind === "missing index")!;
  assert.match(missing.fix, /`cli ensure-tables --prefix p --other-writers`/);
  for (const kind of ["missing stream", "wrong stream view"]) {
    assert.match(all.find((d) => d.kind === kind)!.fix, /--prefix p --other-writers/);
  }
  // The state table of the prefix is the CLI's default for it; another is named.
  assert.match(
    all.find((d) => d.kind === "ttl off" && d.table === "p_state")!.fix,
    /`cli ensure-tables --prefix p`/,
  );
  const sessions = tableDefinitions({ stateTable: "sessions" }).tables.state;
  assert.match(
    tableDifferences(sessions, null, undefined)[0]!.fix,
    /`cli ensure-tables --state-table sessions`/,
  );
});
