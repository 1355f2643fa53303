// The doc pages say what a user needs without reading src/ (JSR, where the JSDoc is, may be out
// of reach): the fields of what the relay's callbacks get and of what commit() returns, read here
// from the types themselves, and what a pass reports and the backoff takes, checked against what
// the runners do.
import assert from "node:assert/strict";
import { MemoryStore, newEvent, newExecution, relayOutbox } from "../../src/testing.ts";
import { readDoc, section } from "../_support/markdown.ts";

/** The field names of an exported interface of a source file, as declared. */
function fieldsOf(file: string, name: string): string[] {
  const source = readDoc(file);
  const start = source.indexOf(`export interface ${name} {`);
  assert.ok(start >= 0, `${file} declares ${name}`);
  const body = source.slice(start, source.indexOf("\n}", start));
  return [...body.matchAll(/^ {2}(\w+)\??:/gm)].map((match) => match[1]!);
}

const CALLBACKS = "## What the callbacks get, and what a pass reports";

Deno.test("docs/delivery.md names every field the relay's callbacks get, and of what a pass reports", () => {
  const page = section("docs/delivery.md", CALLBACKS);
  for (const type of ["OutboxEntry", "PendingSpawn", "Timer"]) {
    const fields = fieldsOf("src/core/relay_types.ts", type);
    assert.ok(fields.length >= 3, type);
    const about = page.split("\n- ").find((item) => item.includes(`\`${type}\``));
    assert.ok(about, `docs/delivery.md says what a ${type} is`);
    for (const field of fields) assert.match(about, new RegExp(`\`${field}\``), `${type}.${field}`);
  }
  assert.match(page, /`fire\(timer, event\)`/, "the sweeper's callback gets the Timeout event too");
  for (const field of fieldsOf("src/relay.ts", "RelayReport")) {
    assert.match(page, new RegExp(`^- \`${field}\`: `, "m"), `RelayReport.${field}`);
  }
});

Deno.test("docs/execution_store.md says what commit() returns and what an emit's target means", () => {
  const page = section("docs/execution_store.md", "## Commits");
  const result = fieldsOf("src/core/types.ts", "CommitResult");
  assert.match(page, new RegExp(`\`\\{ ${result.join(", ")} \\}\``), "the result's fields");
  const emit = fieldsOf("src/core/types.ts", "Emit");
  const about = page.split("\n- ").find((item) => item.startsWith("`emits`"));
  assert.ok(about, "it says what an emit is");
  assert.match(about, new RegExp(`\`\\{ ${emit.join(", ")} \\}\\[\\]\``));
  assert.match(about, /`target`\s+is the id of the execution the event is for/);
  assert.match(about, /`null` means no execution in particular/);
});

Deno.test("a pass's setAside counts what it dead-lettered, as docs/delivery.md says: also counted in failed", async () => {
  const store = new MemoryStore();
  await store.commit(newExecution({ definition_id: "d" }), {
    emits: [{ target: "down", event: newEvent("a") }, { target: "up", event: newEvent("b") }],
  });
  const report = await relayOutbox(store, (entry) => {
    if (entry.targetId === "down") throw new Error("down");
  }, { maxAttempts: 1 });
  assert.deepEqual([report.delivered, report.failed, report.setAside], [1, 1, 1]);
  const setAside = section("docs/delivery.md", CALLBACKS).split("\n- ")
    .find((item) => item.startsWith("`setAside`"))!.replace(/\s+/g, " ");
  assert.match(
    setAside,
    /entries whose `maxAttempts`-th attempt failed \(also counted in `failed`\)/,
  );
  assert.match(setAside, /rows no one can read/);
});

Deno.test("the backoff takes what docs/delivery.md says: seconds from 0 to a year, fractions allowed", async () => {
  const page = section("docs/delivery.md", CALLBACKS).replace(/\s+/g, " ");
  const [, low, high] =
    page.match(/both seconds from (\d+) to ([\d,]+) \(a year\), fractions allowed/) ?? [];
  assert.ok(low !== undefined && high !== undefined, "docs/delivery.md gives the range");
  const max = Number(high.replaceAll(",", ""));
  const pass = (backoff: { minSeconds?: number; maxSeconds?: number }) =>
    relayOutbox(new MemoryStore(), () => {}, { backoff });
  for (
    const backoff of [{ minSeconds: Number(low), maxSeconds: 0.5 }, { minSeconds: 0.25 }, {
      minSeconds: max,
      maxSeconds: max,
    }]
  ) {
    await pass(backoff);
  }
  await assert.rejects(pass({ maxSeconds: max + 1 }), RangeError);
  await assert.rejects(pass({ minSeconds: -0.5 }), RangeError);

  // 0 retries on the very next pass.
  const store = new MemoryStore();
  await store.commit(newExecution({ definition_id: "d" }), {
    emits: [{ target: "t", event: newEvent("a") }],
  });
  let calls = 0;
  const failOnce = () => {
    if (calls++ === 0) throw new Error("once");
  };
  await relayOutbox(store, failOnce, { backoff: { minSeconds: 0 } });
  assert.equal((await relayOutbox(store, failOnce, { backoff: { minSeconds: 0 } })).delivered, 1);
});
