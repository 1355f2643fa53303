// The index lag proxy (tests/_support/index_lag_proxy.ts) against DynamoDB Local: an index read
// through it misses what was written within the lag and still sees what was there before.
import assert from "node:assert/strict";
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteItemCommand,
  DeleteTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  type QueryCommandInput,
  ScanCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { buildClient } from "../../src/dynamo/connect.ts";
import { IndexLagProxy } from "../_support/index_lag_proxy.ts";
import { directEndpoint, uniqueName } from "../_support/env.ts";

// The proxy runs on a clock the test moves (`t.wait`): a case's reads all fall within the lag
// however long a busy DynamoDB Local takes to answer them, and the lag passes without a sleep.
const LAG = 1000;
const INDEX = "gp-go";

/** A proxy with a lag of LAG, a client through it, and a table with an INCLUDE index. */
async function lagging(): Promise<
  {
    proxy: IndexLagProxy;
    client: DynamoDBClient;
    table: string;
    /** Moves the proxy's clock on by `ms`. */
    wait(ms: number): void;
  } & AsyncDisposable
> {
  let now = Date.now();
  const proxy = new IndexLagProxy(directEndpoint(), { lagMs: LAG, now: () => now });
  const client = buildClient({ endpoint: proxy.endpoint });
  const table = uniqueName("lag");
  await client.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [
        { AttributeName: "pk", AttributeType: "S" },
        { AttributeName: "gp", AttributeType: "S" },
        { AttributeName: "go", AttributeType: "N" },
      ],
      KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      GlobalSecondaryIndexes: [{
        IndexName: INDEX,
        KeySchema: [
          { AttributeName: "gp", KeyType: "HASH" },
          { AttributeName: "go", KeyType: "RANGE" },
        ],
        Projection: { ProjectionType: "INCLUDE", NonKeyAttributes: ["x"] },
      }],
    }),
  );
  return {
    proxy,
    client,
    table,
    wait: (ms) => void (now += ms),
    async [Symbol.asyncDispose]() {
      await client.send(new DeleteTableCommand({ TableName: table }));
      client.destroy();
      await proxy.close();
    },
  };
}

function put(table: string, pk: string, gp: string, go: number, x = "x", body = "b") {
  return new PutItemCommand({
    TableName: table,
    Item: { pk: { S: pk }, gp: { S: gp }, go: { N: String(go) }, x: { S: x }, body: { S: body } },
  });
}

/** The pks an index query answers, in its order, every page read. */
async function pks(
  client: DynamoDBClient,
  input: Omit<QueryCommandInput, "IndexName">,
): Promise<string[]> {
  const out: string[] = [];
  let start: QueryCommandInput["ExclusiveStartKey"];
  for (let page = 0; page < 100; page++) {
    const answer = await client.send(
      new QueryCommand({ ...input, IndexName: INDEX, ExclusiveStartKey: start }),
    );
    out.push(...(answer.Items ?? []).map((item) => item.pk!.S!));
    start = answer.LastEvaluatedKey;
    if (!start) return out;
  }
  throw new Error("more than 100 pages");
}

function partition(table: string, gp: string, extra: Partial<QueryCommandInput> = {}) {
  return {
    TableName: table,
    KeyConditionExpression: "#p = :p",
    ExpressionAttributeNames: { "#p": "gp" },
    ExpressionAttributeValues: { ":p": { S: gp } },
    ...extra,
  };
}

Deno.test("the index lag proxy hides a fresh index entry until the lag has passed", async () => {
  await using t = await lagging();
  await t.client.send(put(t.table, "a", "g", 1));
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), []);
  const got = await t.client.send(
    new GetItemCommand({ TableName: t.table, Key: { pk: { S: "a" } } }),
  );
  assert.equal(got.Item?.body?.S, "b", "the table itself is read exactly");
  const count = await t.client.send(
    new QueryCommand({ ...partition(t.table, "g"), IndexName: INDEX, Select: "COUNT" }),
  );
  assert.equal(count.Count, 0);
  t.wait(LAG + 100);
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), ["a"]);
  assert.ok(t.proxy.stats.hidden >= 2);
});

Deno.test("the index lag proxy answers with a ghost of a moved entry, projected as the index projects", async () => {
  await using t = await lagging();
  await t.client.send(put(t.table, "a", "old", 1, "before"));
  t.wait(LAG + 100);
  await t.client.send(
    new UpdateItemCommand({
      TableName: t.table,
      Key: { pk: { S: "a" } },
      UpdateExpression: "SET gp = :n, x = :x",
      ExpressionAttributeValues: { ":n": { S: "new" }, ":x": { S: "after" } },
    }),
  );
  const ghost = await t.client.send(
    new QueryCommand({ ...partition(t.table, "old"), IndexName: INDEX }),
  );
  assert.deepEqual(ghost.Items, [{
    pk: { S: "a" },
    gp: { S: "old" },
    go: { N: "1" },
    x: { S: "before" },
  }]);
  assert.deepEqual(await pks(t.client, partition(t.table, "new")), []);
  t.wait(LAG + 100);
  assert.deepEqual(await pks(t.client, partition(t.table, "old")), []);
  assert.deepEqual(await pks(t.client, partition(t.table, "new")), ["a"]);
});

Deno.test("the index lag proxy answers with a ghost of a deleted entry, counted too, then forgets it", async () => {
  await using t = await lagging();
  await t.client.send(put(t.table, "a", "g", 1));
  await t.client.send(put(t.table, "b", "g", 2));
  t.wait(LAG + 100);
  await t.client.send(new DeleteItemCommand({ TableName: t.table, Key: { pk: { S: "a" } } }));
  await t.client.send(
    new BatchWriteItemCommand({
      RequestItems: { [t.table]: [{ DeleteRequest: { Key: { pk: { S: "b" } } } }] },
    }),
  );
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), ["a", "b"]);
  const count = await t.client.send(
    new QueryCommand({ ...partition(t.table, "g"), IndexName: INDEX, Select: "COUNT" }),
  );
  assert.equal(count.Count, 2);
  const scan = await t.client.send(new ScanCommand({ TableName: t.table, IndexName: INDEX }));
  assert.equal(scan.Count, 2, "a scan of the index sees the ghosts too");
  const table = await t.client.send(new ScanCommand({ TableName: t.table }));
  assert.equal(table.Count, 0, "a scan of the table is exact");
  t.wait(LAG + 100);
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), []);
});

Deno.test("the index lag proxy places ghosts by sort key condition, order and Limit", async () => {
  await using t = await lagging();
  for (let go = 1; go <= 6; go++) {
    await t.client.send(put(t.table, `i${go}`, "g", go, go === 2 ? "skip" : "x"));
  }
  t.wait(LAG + 100);
  // i3 moves to the end of the partition, i5 out of it, i7 arrives: the index still has the old.
  await t.client.send(
    new TransactWriteItemsCommand({
      TransactItems: [
        { Put: put(t.table, "i3", "g", 30, "skip").input as never },
        { Put: put(t.table, "i5", "elsewhere", 5).input as never },
        { Put: put(t.table, "i7", "g", 0).input as never },
      ],
    }),
  );
  const range = (condition: string, values: Record<string, number>, extra = {}) =>
    pks(t.client, {
      TableName: t.table,
      KeyConditionExpression: `#p = :p AND ${condition}`,
      ExpressionAttributeNames: { "#p": "gp", "#o": "go" },
      ExpressionAttributeValues: {
        ":p": { S: "g" },
        ...Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { N: String(v) }])),
      },
      ...extra,
    });
  const all = ["i1", "i2", "i3", "i4", "i5", "i6"];
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), all);
  for (const limit of [1, 2, 3, 5]) {
    assert.deepEqual(await pks(t.client, partition(t.table, "g", { Limit: limit })), all);
    assert.deepEqual(
      await pks(t.client, partition(t.table, "g", { Limit: limit, ScanIndexForward: false })),
      [...all].reverse(),
    );
  }
  assert.deepEqual(await range("#o < :o", { ":o": 4 }), ["i1", "i2", "i3"]);
  assert.deepEqual(await range("#o <= :o", { ":o": 3 }, { Limit: 2 }), ["i1", "i2", "i3"]);
  assert.deepEqual(await range("#o > :o", { ":o": 4 }), ["i5", "i6"]);
  assert.deepEqual(await range("#o >= :o", { ":o": 5 }), ["i5", "i6"]);
  assert.deepEqual(await range("#o = :o", { ":o": 3 }), ["i3"]);
  assert.deepEqual(await range("#o BETWEEN :a AND :b", { ":a": 3, ":b": 5 }), ["i3", "i4", "i5"]);
  assert.deepEqual(await pks(t.client, partition(t.table, "elsewhere")), []);
  const filtered = () =>
    pks(
      t.client,
      partition(t.table, "g", {
        FilterExpression: "#x <> :skip AND attribute_exists(#x)",
        ExpressionAttributeNames: { "#p": "gp", "#x": "x" },
        ExpressionAttributeValues: { ":p": { S: "g" }, ":skip": { S: "skip" } },
      }),
    );
  assert.deepEqual(await filtered(), ["i1", "i3", "i4", "i5", "i6"], "the filter sees ghosts");
  t.wait(LAG + 100);
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), [
    "i7",
    "i1",
    "i2",
    "i4",
    "i6",
    "i3",
  ]);
  assert.deepEqual(await pks(t.client, partition(t.table, "elsewhere")), ["i5"]);
  assert.deepEqual(await filtered(), ["i7", "i1", "i4", "i6"]);
});

Deno.test("the index lag proxy passes a write that fails through and notes nothing", async () => {
  await using t = await lagging();
  await t.client.send(put(t.table, "a", "g", 1));
  t.wait(LAG + 100);
  await assert.rejects(
    t.client.send(
      new UpdateItemCommand({
        TableName: t.table,
        Key: { pk: { S: "a" } },
        UpdateExpression: "SET gp = :n",
        ConditionExpression: "attribute_not_exists(pk)",
        ExpressionAttributeValues: { ":n": { S: "moved" } },
      }),
    ),
    (error: Error) => error.name === "ConditionalCheckFailedException",
  );
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), ["a"]);
  assert.equal(t.proxy.stats.hidden, 0);
});

Deno.test("the index lag proxy only forwards to loopback and refuses a negative lag", () => {
  assert.throws(() => new IndexLagProxy("http://example.com:8000", { lagMs: 1 }), /loopback/);
  assert.throws(() => new IndexLagProxy(directEndpoint(), { lagMs: -1 }), RangeError);
});

Deno.test("the index lag proxy's lag can be changed at any time: 0 makes the index exact at once", async () => {
  await using t = await lagging();
  await t.client.send(put(t.table, "a", "g", 1));
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), []);
  t.proxy.lagMs = 0;
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), ["a"]);
  t.proxy.lagMs = 60_000;
  await t.client.send(new DeleteItemCommand({ TableName: t.table, Key: { pk: { S: "a" } } }));
  assert.deepEqual(await pks(t.client, partition(t.table, "g")), ["a"], "a ghost for a minute");
});
