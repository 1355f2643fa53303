// The operator's tools say what really happened: `ensure-tables` says each step, fails at once on
// a change DynamoDB refuses for good and gives up at its deadline; `relay` names SQS when SQS
// fails; `show` gives an execution the updated time the listing gives it.
import assert from "node:assert/strict";
import { CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, TableNotReady, type TableProgress } from "../../mod.ts";
import { cli, ok } from "../_support/cli.ts";
import { endpoint, ownRegion, testClient, uniqueName } from "../_support/env.ts";
import { buildClient } from "../../src/dynamo/connect.ts";
import { FaultProxy } from "../_support/fault_proxy.ts";
import { sqsEndpoint } from "../_support/sqs.ts";
import { seedWrite } from "../_support/seed_writer.ts";

/** A database of this file's own, for the tables with a stream. */
const REGION = ownRegion("clitools");

Deno.test("cli ensure-tables --other-writers fails at once, naming the table and the change, when DynamoDB refuses a stream (moto)", async () => {
  // moto's DynamoDB (the server that serves the tests' SQS) never turns a table's stream on
  // again once it was on: "Cannot enable stream". A stream of another view must be replaced.
  const moto = sqsEndpoint();
  const prefix = uniqueName("moto");
  const client = new DynamoDBClient({
    endpoint: moto,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  try {
    await client.send(
      new CreateTableCommand({
        TableName: `${prefix}_outbox`,
        KeySchema: [{ AttributeName: "seq", KeyType: "HASH" }],
        AttributeDefinitions: [{ AttributeName: "seq", AttributeType: "N" }],
        BillingMode: "PAY_PER_REQUEST",
        StreamSpecification: { StreamEnabled: true, StreamViewType: "KEYS_ONLY" },
      }),
    );
  } finally {
    client.destroy();
  }
  const run = await cli("ensure-tables", "--other-writers", "--prefix", prefix, "--endpoint", moto);
  assert.equal(run.code, 1, run.stdout);
  // Each step on stderr, then what was refused, by whom, and why.
  assert.match(run.stderr, new RegExp(`${prefix}_executions: ready`));
  assert.match(run.stderr, new RegExp(`${prefix}_outbox: turning off its KEYS_ONLY stream`));
  assert.match(
    run.stderr,
    new RegExp(
      `error: table ${prefix}_outbox: turning on its stream \\(NEW_AND_OLD_IMAGES\\): ` +
        "DynamoDB refused it \\(ResourceInUseException: Cannot enable stream\\)",
    ),
  );
});

Deno.test("ensureTables() says each step, and gives up at its deadline naming the table and step", async (t) => {
  await t.step("a step per change, and each table ready", async () => {
    using client = testClient();
    const prefix = uniqueName("steps");
    const steps: TableProgress[] = [];
    await new DynamoDBStore(client, { prefix }).ensureTables({
      onProgress: (p) => void steps.push(p),
    });
    const said = (step: string) => steps.filter((p) => p.step === step).map((p) => p.table).sort();
    const names = Object.values(new DynamoDBStore(client, { prefix }).tables).map((s) => s.name);
    assert.deepEqual(said("creating the table"), names.toSorted());
    assert.deepEqual(said("ready"), names.toSorted());
    assert.ok(steps.every((p) => p.elapsedMs >= 0));
  });

  await t.step("the deadline passes while DynamoDB has not answered", async () => {
    // Every request answered after 2 s: none within the 200 ms deadline.
    await using proxy = new FaultProxy(endpoint(), {
      request: () => ({ kind: "delay", ms: 2_000 }),
    });
    const client = buildClient({ endpoint: proxy.endpoint, clientConfig: { maxAttempts: 1 } });
    try {
      const prefix = uniqueName("deadline");
      const error = await new DynamoDBStore(client, { prefix }).ensureTables({ deadlineMs: 200 })
        .then(() => null, (e) => e);
      assert.ok(error instanceof TableNotReady, String(error));
      assert.match(error.table, new RegExp(`^${prefix}_`));
      assert.equal(error.step, "reading its description");
      assert.match(error.message, /not done after 0.2 s \(deadlineMs\); ensuring the tables again/);
    } finally {
      client.destroy();
    }
  });

  await t.step("its options are checked before anything is sent", async () => {
    const store = new DynamoDBStore(
      { send: () => Promise.reject(new Error("sent")) },
      { prefix: "p" },
    );
    await assert.rejects(
      store.ensureTables({ deadlinMs: 5 } as never),
      /did you mean "deadlineMs"/,
    );
    await assert.rejects(store.ensureTables({ deadlineMs: 0 }), RangeError);
    await assert.rejects(store.ensureTables({ onProgress: "yes" } as never), TypeError);
  });
});

Deno.test("cli relay names the service that failed: SQS, not DynamoDB, when SQS fails", async (t) => {
  const prefix = uniqueName("relay_sqs");
  ok(await cli("ensure-tables", "--prefix", prefix, "--other-writers", "--region", REGION));
  const relay = (sqs: string) =>
    cli("relay", "--prefix", prefix, "--region", REGION, "--sqs-endpoint", sqs);
  await t.step("SQS does not answer", async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const closed = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
    listener.close();
    const down = await relay(closed);
    assert.equal(down.code, 1, down.stdout);
    assert.match(down.stderr, new RegExp(`error: SQS at ${closed} did not answer`));
    assert.doesNotMatch(down.stderr, /DynamoDB/);
  });
  await t.step("DynamoDB lacks the tables: it says DynamoDB, and which", async () => {
    const missing = uniqueName("no_tables");
    const run = await cli("relay", "--prefix", missing, "--sqs-endpoint", sqsEndpoint());
    assert.equal(run.code, 1, run.stdout);
    assert.match(
      run.stderr,
      new RegExp(
        `error: DynamoDB: a table the relay reads does not exist \\(${missing}_executions`,
      ),
    );
  });
  await t.step("something else answers where SQS should be", async () => {
    const wrong = await relay(endpoint());
    assert.equal(wrong.code, 1, wrong.stdout);
    assert.match(wrong.stderr, new RegExp(`error: SQS at ${endpoint()} failed: `));
  });
});

Deno.test("cli show gives an execution another writer committed the updated time the listing gives it", async () => {
  const prefix = uniqueName("show_time");
  {
    // The mixed fleet's tables (streams on); closed before the Python store commits, so that no
    // feed round of ours writes its time back.
    await using _mixed = await DynamoDBStore.create({
      endpoint: endpoint(),
      prefix,
      region: REGION,
      otherWriters: true,
    });
  }
  const wrote = await seedWrite({ endpoint: endpoint(), prefix, region: REGION });
  const id = wrote.executions[0]!.id;
  const run = (...args: string[]) => cli(...args, "--prefix", prefix, "--region", REGION, "--json");
  const listed = JSON.parse(
    ok(await run("executions", "--status", "RUNNING", "--other-writers")),
  );
  const listedAt = listed.items.find((s: { id: string }) => s.id === id)?.updated_at;
  assert.equal(typeof listedAt, "number");
  assert.equal(JSON.parse(ok(await run("show", id))).updatedAt, listedAt);
  const text = ok(await cli("show", id, "--prefix", prefix, "--region", REGION));
  assert.match(
    text,
    new RegExp(`updated: ${new Date(listedAt * 1000).toISOString().slice(0, 19)}Z`),
  );
});
