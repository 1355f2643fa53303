import assert from "node:assert/strict";
import {
  CreateTableCommand,
  DeleteTableCommand,
  GetItemCommand,
  PutItemCommand,
} from "@aws-sdk/client-dynamodb";
import { marshall, unmarshall } from "@aws-sdk/util-dynamodb";
import { testClient, uniqueName } from "../_support/env.ts";

Deno.test("the test DynamoDB creates a table, stores and returns an item, and drops the table", async () => {
  const client = testClient();
  const TableName = uniqueName("pipe");
  await client.send(
    new CreateTableCommand({
      TableName,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
    }),
  );
  try {
    const item = { id: "a", n: 42, nested: { list: [1, "two", true] } };
    await client.send(new PutItemCommand({ TableName, Item: marshall(item) }));
    const got = await client.send(
      new GetItemCommand({ TableName, Key: marshall({ id: "a" }), ConsistentRead: true }),
    );
    assert.deepEqual(unmarshall(got.Item!), item);
  } finally {
    await client.send(new DeleteTableCommand({ TableName }));
    client.destroy();
  }
});
