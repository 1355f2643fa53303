// The least-privilege IAM policy (what the CLI's `policy` command prints, and docs/operations.md
// tells operators to run) is derived from the calls the code makes: this test records every
// DynamoDB action (per table) while both stores run every method, and compares it with the
// policy, both ways: nothing used is missing, nothing granted is unused. Until the README's
// policy is regenerated, what retention added is documented in docs/retention.md: the
// documented policy is the README's and that one's statements together.
import assert from "node:assert/strict";
import { CreateTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBStateStore,
  DynamoDBStore,
  newEvent,
  newExecution,
  relayOutbox,
  relaySpawns,
  sweepTimers,
} from "../../mod.ts";
import { leastPrivilegePolicy, main } from "../../src/cli.ts";
import { bareTables, endpoint, testClient, uniqueName } from "../_support/env.ts";
import { buildClient } from "../../src/dynamo/connect.ts";
import { executionTables } from "../../src/core/table_specs.ts";
import { blocks, blockUnder, docFiles, section } from "../_support/markdown.ts";
import { seedPutExecution } from "../_support/seed.ts";

type Input = Record<string, unknown> & { TableName?: string };

/** IAM actions a command needs, per table: a transaction needs each item's own action. */
function actionsOf(command: string, input: Input): [string, string][] {
  const name = command.replace(/Command$/, "");
  if (name === "TransactWriteItems") {
    const actions: Record<string, string> = {
      Put: "PutItem",
      Update: "UpdateItem",
      Delete: "DeleteItem",
      ConditionCheck: "ConditionCheckItem",
    };
    return (input.TransactItems as Record<string, { TableName: string }>[]).flatMap((item) =>
      Object.entries(item).map(([kind, op]) => [actions[kind]!, op.TableName] as [string, string])
    );
  }
  if (name === "BatchWriteItem" || name === "BatchGetItem") {
    return Object.keys(input.RequestItems as object).map((table) => [name, table]);
  }
  // A Query or Scan of an index is granted on the index's own ARN (table/T/index/I).
  const index = typeof input.IndexName === "string" ? `/index/${input.IndexName}` : "";
  return [[name, `${input.TableName!}${index}`]];
}

function recording(client: DynamoDBClient, used: Set<string>): void {
  client.middlewareStack.add(
    (next, context) => (args) => {
      for (const [action, table] of actionsOf(context.commandName as string, args.input as Input)) {
        used.add(`dynamodb:${action} ${table}`);
      }
      return next(args);
    },
    { step: "initialize", name: "recordIamActions" },
  );
}

/**
 * An HTTP proxy to the test DynamoDB that records the DynamoDB Streams actions sent through it
 * (the status feed's own client, built from the store's, sends them) with the stream's table.
 */
function streamsRecorder(used: Set<string>): { url: string } & AsyncDisposable {
  let table = "?";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.arrayBuffer();
    const target = request.headers.get("x-amz-target") ?? "";
    if (target.startsWith("DynamoDBStreams_")) {
      // A GetRecords names only its iterator: it reads the stream the last iterator was of.
      const arn = JSON.parse(new TextDecoder().decode(body)).StreamArn as string | undefined;
      if (arn) table = arn.match(/:table\/([^/]+)\/stream\//)![1]!;
      used.add(`dynamodb:${target.split(".")[1]} ${table}/stream/*`);
    }
    const url = new URL(request.url);
    const upstream = await fetch(new URL(url.pathname + url.search, endpoint()), {
      method: request.method,
      headers: request.headers,
      body,
    });
    return new Response(await upstream.arrayBuffer(), {
      status: upstream.status,
      headers: upstream.headers,
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** What `cli policy --prefix P` grants (and `--other-writers`), as "action table" pairs. */
function policyGrants(prefix: string, otherWriters = false): Set<string> {
  const grants = new Set<string>();
  for (const statement of leastPrivilegePolicy({ prefix, otherWriters }).Statement) {
    assert.equal(statement.Effect, "Allow");
    for (const resource of statement.Resource) {
      // A table (`table/T`), one of its indexes (`table/T/index/I`), or its stream.
      const table = resource.match(
        /^arn:aws:dynamodb:\*:\*:table\/([^/]+(\/index\/[\w.-]+|\/stream\/\*)?)$/,
      )?.[1];
      assert.ok(table, `resource ${resource} names one table or index`);
      for (const action of statement.Action) grants.add(`${action} ${table}`);
    }
  }
  return grants;
}

Deno.test("the least-privilege IAM policy of a prefix grants exactly the actions the stores of that prefix use, its state table included", async () => {
  // A database of its own (a region of DynamoDB Local): adding an index to a table there is fast.
  const used = new Set<string>();
  await using streams = streamsRecorder(used);
  const client = buildClient({ endpoint: streams.url, region: "ap-south-1" });
  recording(client, used);
  const prefix = uniqueName("iam");
  const stateTable = `${prefix}_state`; // as the docs name it: prefix "prod", table "prod_state"
  // Tables the Python store made: ensureTables() adds the relay index to them (UpdateTable).
  await bareTables(client, prefix);
  const store = new DynamoDBStore(client, {
    prefix,
    traceMax: 1,
    processedTtlSeconds: 3600,
    finishedTtlSeconds: 3600,
  });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "iam" });
  await store.commit(exe, {
    emits: [{ target: null, event: newEvent("e") }],
    spawns: [{ childId: "c", rootPath: "r", context: {} }],
    processedEventId: "e1",
    timers: [{ action: "schedule", path: "a", fireAt: 1 }, { action: "cancel", path: "b" }],
    trace: { n: 1 },
  });
  await store.commit(exe, { trace: { n: 2 } }); // drops a step out of the ring
  const other = newExecution({ definition_id: "iam" });
  const wide = new DynamoDBStore(client, { prefix, traceMax: 5 });
  await wide.commit(other, { trace: { n: 1 } });
  await wide.appendTrace(other.id, { n: 2 }); // a ring not yet full: guards on the previous step
  await store.load(exe.id);
  await store.loadForEvent(exe.id, "e1");
  await store.isProcessed(exe.id, "e1");
  await store.listExecutions({ definitionId: "iam" });
  await store.listExecutions({ status: "PENDING", definitionId: "iam" });
  await store.catchUpStatusIndex();
  await store.inspectExecution(exe.id);
  await store.executionOutbox(exe.id);
  await store.readTrace(exe.id);
  await store.ackOutbox((await store.pendingOutbox()).map((e) => e.seq));
  await store.ackSpawn((await store.pendingSpawns()).map((s) => s.seq));
  for (const timer of await store.dueTimers(10)) {
    await store.deleteTimer(timer.executionId, timer.path, timer.fireAt);
  }
  // The relay's bookkeeping: failures recorded (with the held targets), dead letters listed,
  // retried and dropped.
  await store.commit(exe, {
    // The second entry to "t" is held behind the first once it fails (a transaction with a
    // ConditionCheck of its head moves it to its target's partition).
    emits: [{ target: "t", event: newEvent("f") }, { target: "t", event: newEvent("g") }],
    spawns: [{ childId: "c2", rootPath: "r", context: {} }],
    timers: [{ action: "schedule", path: "d", fireAt: 2 }],
  });
  // Delivery within the request.
  const { outbox: inline } = await store.commit(exe, {
    emits: [{ target: "u", event: newEvent("u") }],
  });
  await relayOutbox(store, () => Promise.resolve(), { seqs: inline });
  const fail = () => Promise.reject(new Error("down"));
  const failAll = async () => {
    await relayOutbox(store, fail, { maxAttempts: 1 });
    await relaySpawns(store, fail, { maxAttempts: 1 });
    await sweepTimers(store, fail, { maxAttempts: 1, now: 10 });
  };
  await failAll();
  await relayOutbox(store, fail); // holds "g" behind "f", now dead
  for (const kind of ["outbox", "spawns", "timers"] as const) {
    for (const letter of await store.deadLetters(kind)) {
      await store.retryDeadLetter(kind, letter.key as never);
    }
  }
  await failAll();
  for (const kind of ["outbox", "spawns", "timers"] as const) {
    for (const letter of await store.deadLetters(kind)) {
      await store.dropDeadLetter(kind, letter.key as never);
    }
  }
  await store.commit(exe, { timers: [{ action: "schedule", path: "c", fireAt: 1 }] });
  await store.deleteExecution(exe.id);
  const finished = newExecution({ definition_id: "iam", status: "DONE" });
  await store.commit(finished, { trace: { n: 1 }, processedEventId: "e" });
  await store.deleteExecutions({ status: "DONE", updatedBefore: Date.now() / 1000 + 60 });
  await store.deleteExecutions({
    status: "DONE",
    updatedBefore: Date.now() / 1000,
    scan: true,
  });
  // ensureTables() adds the status index to an executions table made without it (UpdateTable):
  // in a database of its own, where adding an index does not wait on the rest of the suite.
  using upgrade = testClient("eu-south-1");
  recording(upgrade, used);
  await upgrade.send(
    new CreateTableCommand({
      TableName: store.tables.executions.name,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
    }),
  );
  await new DynamoDBStore(upgrade, { prefix, finishedTtlSeconds: 3600 }).ensureTables();

  const state = new DynamoDBStateStore(client, { tableName: stateTable });
  await state.ensureTable();
  await state.set("k", 1, { ttl: 60 });
  await state.get("k");
  await state.exists("k");
  await state.ttl("k");
  await state.expire("k", 30);
  await state.keys("*");
  await state.hset("h", "f", 1);
  await state.hset("h", "g", 2);
  await state.hget("h", "f");
  await state.hgetall("h");
  await state.hdel("h", "f");
  await state.expire("h", 0);
  await state.delete("k");
  client.destroy();
  const granted = policyGrants(prefix);
  const missing = [...used].filter((pair) => !granted.has(pair)).sort();
  const unused = [...granted].filter((pair) => !used.has(pair)).sort();
  assert.deepEqual(missing, [], "actions the code uses that the policy lacks");
  assert.deepEqual(unused, [], "actions the policy grants that the code never uses");
});

Deno.test("with otherWriters: true the policy adds exactly the stream reads the feeds make", async () => {
  const used = new Set<string>();
  await using streams = streamsRecorder(used);
  const client = buildClient({ endpoint: streams.url, region: "ap-south-1" });
  recording(client, used);
  const prefix = uniqueName("iamow");
  const store = new DynamoDBStore(client, { prefix, otherWriters: true });
  await store.ensureTables();
  const exe = newExecution({ definition_id: "iam", status: "RUNNING" });
  await store.commit(exe, {
    emits: [{ target: null, event: newEvent("e") }],
    spawns: [{ childId: "c", rootPath: "r", context: {} }],
    timers: [{ action: "schedule", path: "a", fireAt: 1 }],
  });
  // The Python store's commit (its own client): the feed puts it back into the status index.
  using python = testClient("ap-south-1");
  await seedPutExecution(python, store.tables.executions.name, { ...exe, version: 2 });
  await store.catchUpStatusIndex();
  await store.listExecutions({ status: "RUNNING" });
  await relayOutbox(store, () => {});
  await relaySpawns(store, () => {});
  await sweepTimers(store, () => {}, { now: 10 });
  await store.close();
  client.destroy();
  const granted = policyGrants(prefix, true);
  assert.deepEqual([...used].filter((pair) => !granted.has(pair)).sort(), [], "missing");
  const plain = policyGrants(prefix);
  const added = [...granted].filter((pair) => !plain.has(pair)).sort();
  assert.deepEqual(added, [...used].filter((pair) => pair.includes("/stream/")).sort());
  assert.equal(added.length, 12); // 3 actions on the streams of executions, outbox, spawns, timers
  // The CLI prints it with --other-writers.
  const printed: string[] = [];
  assert.equal(await main(["policy", "--other-writers"], { out: (l) => printed.push(l) }), 0);
  assert.deepEqual(JSON.parse(printed.join("\n")), leastPrivilegePolicy({ otherWriters: true }));
});

Deno.test("docs/operations.md sends operators to the CLI's `policy` command, which prints that policy", async () => {
  const iam = section("docs/operations.md", "## Least-privilege IAM policy");
  const command = blockUnder("docs/operations.md", "## Least-privilege IAM policy", "sh");
  const args = command.split("\n")[0]!.split(/\s+/);
  assert.deepEqual(args.slice(0, 4), ["deno", "run", "-A", "jsr:@harel/dynamodb/cli"]);
  assert.equal(args[4], "policy");
  assert.doesNotMatch(iam, /"Statement"/, "the policy is printed by the CLI, not pasted");
  const printed: string[] = [];
  assert.equal(await main(args.slice(4), { out: (line) => printed.push(line) }), 0);
  assert.deepEqual(
    JSON.parse(printed.join("\n")),
    leastPrivilegePolicy({ prefix: "prod", region: "eu-west-1", account: "123456789012" }),
  );
  // Every action the page names is one the policy grants, or one it says the policy lacks.
  const granted = new Set(
    leastPrivilegePolicy({ otherWriters: true }).Statement.flatMap((s) => s.Action),
  );
  const extra = ["dynamodb:UpdateTable", "dynamodb:Query"];
  for (const action of iam.match(/dynamodb:\w+/g) ?? []) {
    assert.ok(granted.has(action) || extra.includes(action), `${action} in docs/operations.md`);
  }
});

Deno.test("`policy --prefix P` covers every table the docs' examples use next to prefix P", async () => {
  let examples = 0;
  for (const file of docFiles()) {
    for (const block of blocks(file).filter((b) => b.lang === "ts")) {
      const prefix = block.code.match(/\bprefix: "([^"]+)"/)?.[1];
      if (prefix === undefined) continue;
      examples++;
      const printed: string[] = [];
      assert.equal(await main(["policy", "--prefix", prefix], { out: (l) => printed.push(l) }), 0);
      const policy = JSON.parse(printed.join("\n")) as ReturnType<typeof leastPrivilegePolicy>;
      const granted = new Set(
        policy.Statement.flatMap((s) => s.Resource).map((arn) => arn.split(":table/")[1]),
      );
      const used = [
        ...Object.values(executionTables(prefix)).map((table) => table.name),
        ...[...block.code.matchAll(/\btableName: "([^"]+)"/g)].map((match) => match[1]!),
      ];
      for (const table of used) {
        assert.ok(
          granted.has(table),
          `${file}:${block.line} uses ${table}; policy --prefix ${prefix}`,
        );
      }
    }
  }
  assert.ok(examples >= 2, "the Deploy examples of docs/operations.md name a prefix");
});
