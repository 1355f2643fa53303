// What a new user needs from the docs to run a harel fleet (issue #40), checked against the pages:
// a Python worker that runs with plain boto3 and harel's worker variables, one queue name, child
// group ids and spawns, listExecutions' result, and one story about other writers' executions.
import assert from "node:assert/strict";
import { blocks, readDoc, section } from "../_support/markdown.ts";

Deno.test("docs/fleet.md has a Python worker on harel's synchronous classes and python -m harel.worker's variables", () => {
  const workers = section("docs/fleet.md", "## The workers on ECS or Lambda");
  const python = blocks("docs/fleet.md", workers).find((b) => b.lang === "python");
  assert.ok(python, "a Python block");
  for (const name of ["DistributedRunner", "DynamoDBStore.create", "SqsTransport"]) {
    assert.match(python.code, new RegExp(name.replace(".", "\\.")));
  }
  assert.doesNotMatch(python.code, /Async|aioboto3/, "plain boto3: no async classes");
  for (
    const variable of [
      "STM_STORE_BACKEND",
      "STM_TRANSPORT_BACKEND",
      "STM_DYNAMODB_ENDPOINT",
      "STM_SQS_ENDPOINT",
      "STM_SQS_QUEUE",
      "STM_DEFINITIONS_DIR",
    ]
  ) assert.match(workers, new RegExp(`\`${variable}\``), variable);
  assert.match(workers, /aioboto3/, "says what the async path needs");
});

Deno.test("one queue name throughout: stm.fifo, the workers' default", () => {
  for (const file of ["docs/fleet.md", "README.md", "src/sqs/sqs_queue.ts", "src/sqs.ts"]) {
    assert.doesNotMatch(readDoc(file), /orders\.fifo/, file);
  }
  assert.match(readDoc("docs/fleet.md"), /queueName: "stm\.fifo"/);
});

Deno.test("docs/fleet.md says who starts spawns and how long a root id may be", () => {
  const fleet = readDoc("docs/fleet.md");
  assert.match(fleet, /Python workers start every child/);
  assert.match(fleet, /\{parent id\}:\{state path\}:\{seq\}/);
  assert.match(fleet, /a root id may be at most 128 −/);
});

Deno.test("docs/execution_store.md names listExecutions' result fields", () => {
  const row = readDoc("docs/execution_store.md").split("\n").find((l) =>
    l.startsWith("| `listExecutions(")
  );
  assert.ok(row);
  assert.match(row, /`\{ items, nextCursor, unreadable\? \}`/);
});

Deno.test("python.md, dashboard.md and the dashboard's text tell operations.md's story of other writers' executions", () => {
  assert.match(
    readDoc("docs/operations.md").replace(/\s+/g, " "),
    /the status feed puts them back within seconds/,
  );
  const python = section(
    "docs/python.md",
    "## What this module adds, and how it copes when Python drops it",
  );
  // The status feed runs in a store built with otherWriters: true (#38), as operations.md says.
  assert.match(
    python.replace(/\s+/g, " "),
    /\(`otherWriters: true`\) the status feed puts it back/,
  );
  assert.doesNotMatch(readDoc("docs/dashboard.md"), /the one listing that also shows executions/);
  assert.match(readDoc("src/dashboard/_executions_page.ts"), /status feed has put it back/);
});
