import assert from "node:assert/strict";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStateStore, DynamoDBStore, newExecution } from "../../mod.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";

Deno.test("create() passes clientConfig through to the DynamoDB client", async (t) => {
  await t.step("a logger sees the commands", async () => {
    const commands: string[] = [];
    const record = (entry: unknown) => {
      const name = (entry as { commandName?: string })?.commandName;
      if (name) commands.push(name);
    };
    const logger = { debug() {}, info: record, warn() {}, error: record };
    await using store = await DynamoDBStore.create({
      endpoint: endpoint(),
      prefix: uniqueName("cfg"),
      clientConfig: { logger },
    });
    await store.save(newExecution({ definition_id: "cfg" }));
    assert.ok(commands.includes("DescribeTableCommand"), commands.join());
    assert.ok(commands.includes("TransactWriteItemsCommand"), commands.join());
  });

  await t.step("maxAttempts reaches the client", async () => {
    // The SDK announces its retry budget in a header: `amz-sdk-request: attempt=1; max=N`.
    const seen: string[] = [];
    await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
      seen.push(req.headers.get("amz-sdk-request") ?? "");
      return Response.json(
        { __type: "com.amazonaws.dynamodb.v20120810#UnrecognizedClientException", message: "no" },
        { status: 400, headers: { "content-type": "application/x-amz-json-1.0" } },
      );
    });
    await assert.rejects(
      DynamoDBStateStore.create({
        endpoint: `http://127.0.0.1:${server.addr.port}`,
        clientConfig: { maxAttempts: 7 },
      }),
      (error: Error) => error.name === "UnrecognizedClientException",
    );
    assert.match(seen[0] ?? "", /max=7/, seen.join());
  });
});

Deno.test("the constructors take any object with send()", async () => {
  using client = testClient();
  const sent: string[] = [];
  const duck: Pick<DynamoDBClient, "send"> = {
    send: ((command: { constructor: { name: string } }) => {
      sent.push(command.constructor.name);
      return client.send(command as never);
    }) as DynamoDBClient["send"],
  };
  const store = new DynamoDBStore(duck, { prefix: uniqueName("duck") });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "duck" });
  await store.save(exe);
  assert.equal((await store.load(exe.id))?.version, 1);
  const state = new DynamoDBStateStore(duck, { tableName: uniqueName("duck_state") });
  await state.ensureTable();
  await state.hset("h", "f", 1);
  assert.deepEqual({ ...await state.hgetall("h") }, { f: 1 });
  assert.ok(sent.includes("TransactWriteItemsCommand") && sent.includes("UpdateItemCommand"));
});
