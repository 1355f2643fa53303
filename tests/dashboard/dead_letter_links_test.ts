// Dead letters say where they came from: the dashboard's dead-letters page and the CLI's
// `dead-letters` link each one to the execution that emitted it ("unknown" for the Python store's
// rows, which carry no source), and show its target as a target — not as a link to an execution
// page that may not exist ("There is no execution payments").
import assert from "node:assert/strict";
import { DynamoDBStore, newEvent, newExecution, relayOutbox } from "../../mod.ts";
import { dashboard } from "../../src/dashboard.ts";
import { deadLettersPage } from "../../src/dashboard/_dead_letters_page.ts";
import { endpoint, uniqueName } from "../_support/env.ts";
import { seedWrite } from "../_support/seed_writer.ts";
import { cli, ok } from "../_support/cli.ts";

/** The cells of each row of the page's first table, tags stripped but links kept as `[text](href)`. */
function rows(page: string): string[][] {
  const body = page.match(/<tbody>(.*?)<\/tbody>/s)![1]!;
  return [...body.matchAll(/<tr>(.*?)<\/tr>/gs)].map(([, row]) =>
    [...row!.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map(([, cell]) =>
      cell!.replace(/<a [^>]*href="([^"]*)"[^>]*>([^<]*)<\/a>/g, "[$2]($1)")
        .replace(/<details>.*?<\/details>/gs, "").replace(/<[^>]*>/g, "").trim()
    )
  );
}

Deno.test("the dead outbox entries page links each to the execution that emitted it, says unknown for a Python store's row, and shows the target unlinked", async () => {
  const prefix = uniqueName("deadlinks");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
    otherWriters: true, // a Python store's rows too
  });
  const exe = newExecution({ definition_id: "order" });
  const { outbox: [ours] } = await store.commit(exe, {
    emits: [{ target: "payments", event: newEvent("invoice.requested") }],
  });
  const python = await seedWrite({ endpoint: endpoint(), prefix, emits: 1 }); // to target-0
  await relayOutbox(store, () => Promise.reject(new Error("HTTP 503")), { maxAttempts: 1 });
  const theirs = python.outbox[0]!.seq;

  const response = await dashboard(store, { authorize: () => true, hosts: ["ops.test"] })(
    new Request("http://ops.test/dead-letters/outbox"),
  );
  const page = await response.text();
  assert.match(page, /<th>Key<\/th><th>Source<\/th><th>Target<\/th><th>What<\/th>/);
  const cells = new Map(rows(page).map((row) => [row[0], row.slice(1, 3)]));
  assert.deepEqual(cells.get(`seq ${ours}`), [`[${exe.id}](/executions/${exe.id})`, "payments"]);
  assert.deepEqual(cells.get(`seq ${theirs}`), ["unknown", "target-0"]);
  assert.doesNotMatch(page, /href="\/executions\/(payments|target-0)"/);

  const listed = ok(await cli("dead-letters", "outbox", "--prefix", prefix));
  assert.match(listed, /WHAT\s+SOURCE\n/);
  assert.match(
    listed,
    new RegExp(`^${ours}\\s.*invoice\\.requested to payments\\s+${exe.id}$`, "m"),
  );
  assert.match(listed, new RegExp(`^${theirs}\\s.* to target-0\\s+unknown$`, "m"));
  const json = JSON.parse(ok(await cli("dead-letters", "outbox", "--json", "--prefix", prefix)));
  assert.deepEqual(
    json.map((l: { key: number; sourceId: string | null }) => [l.key, l.sourceId]).sort(),
    [[ours, exe.id], [theirs, null]].sort(),
  );
});

Deno.test("a dead spawn's child is shown unlinked (it may never have started), and a dead timer links its execution", () => {
  const spawns = deadLettersPage({
    basePath: "",
    kind: "spawns",
    letters: [{
      key: 4,
      item: { seq: 4, parentId: "p1", childId: "c1", rootPath: "fork", context: {} },
      attempts: 1,
      lastError: null,
      deadAt: 0,
      sourceId: "p1",
      raw: {},
    }],
    more: false,
    csrf: null,
  }).toString();
  assert.match(spawns, /<th>Parent<\/th><th>Child<\/th>/);
  assert.deepEqual(rows(spawns)[0]!.slice(1, 3), ["[p1](/executions/p1)", "c1"]);
  const timer = { executionId: "e1", path: "wait", fireAt: 1_700_000_000 };
  const timers = deadLettersPage({
    basePath: "",
    kind: "timers",
    letters: [{ key: timer, item: timer, attempts: 1, lastError: null, deadAt: 0, raw: {} }],
    more: false,
    csrf: null,
  }).toString();
  assert.match(timers, /<th>Execution<\/th><th>What<\/th>/);
  assert.equal(rows(timers)[0]![1], "[e1](/executions/e1)", "from its stored execution_id");
});
