// An execution's page shows its outbox: what it emitted that is not delivered yet, what to
// it failed (a Python worker's entries too, which say no source), its dead letters with Retry
// and Drop, and the entries held behind it or behind its targets with what holds each.
import assert from "node:assert/strict";
import { DynamoDBStore, newEvent, newExecution, relayOutbox } from "../../mod.ts";
import { dashboard } from "../../src/dashboard.ts";
import { executionPage } from "../../src/dashboard/_execution_page.ts";
import { endpoint, uniqueName } from "../_support/env.ts";
import { seedWrite } from "../_support/seed_writer.ts";
import { openSession, ORIGIN, post } from "../_support/dashboard.ts";

/** The rows of a page's section, each cell as text (links as `[text](href)`, forms as `{label}`). */
function section(page: string, id: string): string[][] {
  const body = page.match(new RegExp(`<h2 id="${id}">.*?</section>`, "s"))?.[0] ?? "";
  return [...body.matchAll(/<tr><td(.*?)<\/tr>/gs)].map(([row]) =>
    [...row!.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map(([, cell]) =>
      cell!.replace(/<a [^>]*href="([^"]*)"[^>]*>([^<]*)<\/a>/g, "[$2]($1)")
        .replace(/<button[^>]*>([^<]*)<\/button>/g, "{$1}").replace(/<[^>]*>/g, "")
        .replace(/\s+/g, " ").trim()
    )
  );
}

Deno.test("an execution's page lists its pending entries, its dead letters with Retry and Drop, and what is held behind it or its target, a Python worker's entry to it from unknown", async () => {
  const prefix = uniqueName("eopage");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
    otherWriters: true, // a Python worker's entry too
  });
  const target = newExecution({ id: "target-0", definition_id: "target" }); // the seed's target
  await store.save(target);
  const source = newExecution({ definition_id: "source" });
  const { outbox: [a, b] } = await store.commit(source, {
    emits: [
      { target: target.id, event: newEvent("invoice.requested") },
      { target: target.id, event: newEvent("invoice.reminded") },
    ],
  });
  const python = await seedWrite({ endpoint: endpoint(), prefix, emits: 1 }); // to target-0
  const theirs = python.outbox[0]!.seq;
  for (let pass = 0; pass < 2; pass++) { // a dies; the second pass sets b and theirs apart
    await relayOutbox(store, () => Promise.reject(new Error("HTTP 503")), { maxAttempts: 1 });
  }
  const { outbox: [c] } = await store.commit(source, {
    emits: [{ target: "svc", event: newEvent("order.shipped") }],
  });

  const handler = dashboard(store, { authorize: () => true, actions: true, hosts: ["ops.test"] });
  const { cookie, csrf } = await openSession(handler, `/executions/${source.id}`);
  const get = async (id: string) => {
    const response = await handler(
      new Request(`${ORIGIN}/executions/${id}`, { headers: { cookie } }),
    );
    assert.equal(response.status, 200);
    return await response.text();
  };
  const emitted = await get(source.id);
  const [pending, ...others] = section(emitted, "outbox");
  assert.deepEqual(others, []);
  assert.deepEqual([pending![0], pending![1], pending![3]], [`seq ${c}`, "to svc", "pending"]);
  assert.match(pending![2]!, /^order\.shipped event [0-9a-f]{32}$/);
  assert.deepEqual(
    section(emitted, "outbox-dead").map((row) => [row[0], row[1], row[3], row.at(-1)]),
    [[`seq ${a}`, "to target-0", "1", "{Retry}{Drop}"]],
  );
  assert.deepEqual(
    section(emitted, "outbox-held").map((row) => [row[0], row[1], ...row.slice(3)]),
    [
      [`seq ${b}`, "to target-0", `dead letter seq ${a}`, `{Retry seq ${a}}`],
    ],
  );

  const to = await get(target.id);
  assert.deepEqual(section(to, "outbox"), []);
  assert.deepEqual(section(to, "outbox-dead").map((row) => row.slice(0, 2)), [
    [`seq ${a}`, `from [${source.id}](/executions/${source.id})`],
  ]);
  assert.deepEqual(section(to, "outbox-held").map((row) => row.slice(0, 2).concat(row[3]!)), [
    [`seq ${b}`, `from [${source.id}](/executions/${source.id})`, `dead letter seq ${a}`],
    [`seq ${theirs}`, "from unknown", `dead letter seq ${a}`],
  ]);

  // Its Retry is the dead letter's own action: the entry is due again, and what it held goes on.
  const retried = await post(handler, "/dead-letters/outbox/retry", { csrf, seq: String(a) }, {
    cookie,
  });
  assert.equal(retried.status, 303);
  const delivered: number[] = [];
  await relayOutbox(store, (entry) => void delivered.push(entry.seq));
  const bySeq = (x: number, y: number) => x - y;
  assert.deepEqual(delivered.filter((seq) => seq !== c), [a, b, theirs], "in order");
  assert.deepEqual(delivered.sort(bySeq), [a!, b!, theirs, c!].sort(bySeq));
  assert.match(await get(source.id), /No dead entries it emitted, nor to it\./);
});

Deno.test("an execution's page says when what it emitted may be missing, and escapes what another writer stored", () => {
  const script = `<script>alert(1)</script>`;
  const page = executionPage({
    basePath: "",
    execution: newExecution({ id: "e1", definition_id: "d" }),
    updatedAt: null,
    expiresAt: null,
    timers: [],
    now: 0,
    trace: [],
    csrf: null,
    outbox: {
      emitted: [],
      emittedPartial: true,
      targeting: [{
        seq: 7,
        sourceId: script,
        targetId: "e1",
        event: { ...newEvent(script), id: script },
        state: "dead",
        attempts: 10,
        retryAt: null,
        deadAt: 0,
        lastError: script,
        heldBehind: null,
      }],
      targetingPartial: false,
    },
  }).toString();
  assert.match(page, /entries it emitted may be missing here/);
  assert.ok(!page.includes(script), "escaped");
  assert.deepEqual(section(page, "outbox-dead")[0]!.slice(0, 2), [
    "seq 7",
    `from [${
      script.replace(/</g, "&lt;").replace(/>/g, "&gt;")
    }](/executions/%3Cscript%3Ealert(1)%3C%2Fscript%3E)`,
  ]);
});
