// The README's IAM policy is derived from the calls the code makes: this test records every
// DynamoDB action (per table) while both stores run every method, and compares it with the
// policy, both ways: nothing used is missing, nothing granted is unused. Until the README's
// policy is regenerated, what retention (#21) added is documented in docs/retention.md: the
// documented policy is the README's and that one's statements together.
import assert from "node:assert/strict";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStateStore, DynamoDBStore, newEvent, newExecution } from "../mod.ts";
import { testClient, uniqueName } from "./_env.ts";

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
  return [[name, input.TableName!]];
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

type Statements = { Effect: string; Action: string[]; Resource: string[] }[];

/** The first JSON block under `heading` of a document of this repository. */
async function jsonBlock(file: string, heading: string): Promise<{ Statement: Statements }> {
  const text = await Deno.readTextFile(new URL(`../${file}`, import.meta.url));
  const at = text.indexOf(heading);
  assert.ok(at >= 0, `${file} has ${heading}`);
  const json = text.slice(at).match(/```json\n([\s\S]*?)\n```/)?.[1];
  assert.ok(json, `${file} has a JSON IAM policy under ${heading}`);
  return JSON.parse(json);
}

/** The documented policies' statements: the README's, and what docs/retention.md adds to it. */
async function documentedStatements(): Promise<Statements> {
  return [
    ...(await jsonBlock("README.md", "## Least-privilege IAM policy")).Statement,
    ...(await jsonBlock("docs/retention.md", "## IAM")).Statement,
  ];
}

/** Statements as "action table" pairs for the given table names. */
function policyGrants(statements: Statements, prefix: string, stateTable: string): Set<string> {
  const grants = new Set<string>();
  for (const statement of statements) {
    assert.equal(statement.Effect, "Allow");
    for (const resource of statement.Resource) {
      const table = resource.match(/^arn:aws:dynamodb:\*:\*:table\/(.+)$/)?.[1];
      assert.ok(table, `resource ${resource} names one table`);
      const actual = table === "harel_state" ? stateTable : table.replace(/^harel_/, `${prefix}_`);
      for (const action of statement.Action) grants.add(`${action} ${actual}`);
    }
  }
  return grants;
}

Deno.test("the documented least-privilege IAM policy (README and docs/retention.md) grants exactly the actions the stores use", async () => {
  using client = testClient();
  const used = new Set<string>();
  recording(client, used);
  const prefix = uniqueName("iam");
  const stateTable = `${prefix}_state`;
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
  await store.readTrace(exe.id);
  await store.ackOutbox((await store.pendingOutbox()).map((e) => e.seq));
  await store.ackSpawn((await store.pendingSpawns()).map((s) => s.seq));
  for (const timer of await store.dueTimers(10)) {
    await store.deleteTimer(timer.executionId, timer.path, timer.fireAt);
  }
  await store.commit(exe, { timers: [{ action: "schedule", path: "c", fireAt: 1 }] });
  await store.deleteExecution(exe.id);

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
  const granted = policyGrants(await documentedStatements(), prefix, stateTable);
  const missing = [...used].filter((pair) => !granted.has(pair)).sort();
  const unused = [...granted].filter((pair) => !used.has(pair)).sort();
  assert.deepEqual(missing, [], "actions the code uses that the README's policy lacks");
  assert.deepEqual(unused, [], "actions the README's policy grants that the code never uses");
});

Deno.test("the documented IAM policy is the one the CLI's `policy` command prints", async () => {
  const { leastPrivilegePolicy } = await import("../src/cli.ts");
  const documented = policyGrants(await documentedStatements(), "harel", "harel_state");
  const printed = policyGrants(leastPrivilegePolicy().Statement, "harel", "harel_state");
  assert.deepEqual([...documented].sort(), [...printed].sort());
});
