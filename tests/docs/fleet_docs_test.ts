// What a new user needs from the docs to run a harel fleet, checked against the pages:
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
  // harel's fan-out adds the item's index: `{parent id}:{state path}:{seq}:{i}`.
  assert.match(fleet, /a fan-out's `\{parent id\}:\{state path\}:\{seq\}:\{i\}`/);
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
  // The status feed runs in a store built with otherWriters: true, as operations.md says.
  assert.match(
    python.replace(/\s+/g, " "),
    /\(`otherWriters: true`\) the status feed puts it back/,
  );
  assert.doesNotMatch(readDoc("docs/dashboard.md"), /the one listing that also shows executions/);
  assert.match(readDoc("src/dashboard/_executions_page.ts"), /status feed has put it back/);
});

/**
 * The statements of a `.stm` file in the part of harel's grammar (src/harel/dsl/grammar.lark)
 * docs/examples/order.stm uses: event declarations, a machine with `initial`, `state` (with a
 * `timeout`), `final` and `from .. to .. on` transitions; `#` comments. A line of any other form
 * fails the test.
 */
function stmStatements(text: string) {
  const ref = String.raw`([A-Za-z_]\w*|"[^"]*")`;
  const name = (r: string) => r.replace(/^"|"$/g, "");
  const events = new Set<string>(), states = new Set<string>(), machines: string[] = [];
  const initials: string[] = [], transitions: { from: string; to: string; on: string[] }[] = [];
  let depth = 0;
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.replace(/#.*$/, "").trim();
    let m: RegExpExecArray | null;
    if (line === "") continue;
    else if (
      (m = new RegExp(
        `^event ${ref} \\{((?:\\s*${ref}: (?:string|int|float|bool|any)\\??)*)\\s*\\}$`,
      ).exec(line))
    ) {
      events.add(name(m[1]!));
    } else if ((m = new RegExp(`^machine ${ref} \\{$`).exec(line))) {
      machines.push(name(m[1]!));
      depth++;
    } else if ((m = new RegExp(`^initial ${ref}$`).exec(line))) initials.push(name(m[1]!));
    else if ((m = new RegExp(`^state ${ref} \\{(?: timeout \\d+)? ?\\}$`).exec(line))) {
      states.add(name(m[1]!));
    } else if ((m = new RegExp(`^final ${ref} ${ref}$`).exec(line))) states.add(name(m[1]!));
    else if (
      (m = new RegExp(`^from ${ref} to ${ref}(?: on (${ref}(?: \\| ${ref})*))?$`).exec(line))
    ) {
      const on = m[3]?.split(" | ").map(name) ?? [];
      transitions.push({ from: name(m[1]!), to: name(m[2]!), on });
    } else if (line === "}") depth--;
    else assert.fail(`line ${i + 1} is no statement harel's grammar reads here: ${raw}`);
  }
  assert.equal(depth, 0, "every machine is closed");
  return { events, states, machines, initials, transitions };
}

Deno.test("docs/examples/order.stm is the machine the fleet's Deno side drives, in harel's .stm form", () => {
  const stm = stmStatements(readDoc("docs/examples/order.stm"));
  const fleet = readDoc("docs/fleet.md");
  // The definition id FleetClient.create() names, and the events send() sends to it.
  assert.deepEqual(stm.machines, [fleet.match(/fleet\.create\("(\w+)"/)![1]]);
  const sent = [...fleet.matchAll(/fleet\.send\(order\.id, newEvent\("([^"]+)"/g)].map((m) =>
    m[1]!
  );
  assert.ok(sent.length > 0);
  // harel's own events are never declared (RESERVED_EVENTS in harel/definition/events.py).
  const reserved = new Set([
    "Timeout",
    "Finished",
    "Cancel",
    "Reset",
    "SetState",
    "Start",
    "Returned",
  ]);
  for (const kind of sent) {
    assert.ok(stm.events.has(kind), `${kind} is declared`);
    assert.ok(stm.transitions.some((t) => t.on.includes(kind)), `${kind} moves the machine`);
  }
  for (const state of [...stm.initials, ...stm.transitions.flatMap((t) => [t.from, t.to])]) {
    assert.ok(stm.states.has(state), `state ${state} is declared`);
  }
  for (const kind of stm.transitions.flatMap((t) => t.on)) {
    assert.ok(stm.events.has(kind) || reserved.has(kind), `event ${kind} is declared`);
  }
  assert.ok(stm.transitions.some((t) => t.on.includes("Cancel")), "a cancel handler: cooperative");
  assert.match(fleet, /\[`docs\/examples\/order\.stm`\]\(examples\/order\.stm\)/);
});
