// harel's control-plane status rules (engine/aio/control.py), as pure rules and on the memory
// twin, and cancel() against a Python mirror of control.cancel on the same rows.
import assert from "node:assert/strict";
import { type Execution, newExecution, type Status, STATUSES } from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { nextStatus } from "../../src/sqs/_control.ts";
import { FleetClient, SqsQueue } from "../../src/sqs.ts";
import { SQSClient } from "@aws-sdk/client-sqs";
import { freshQueue, readQueue } from "../_support/sqs.ts";

Deno.test("a CANCELLED or DONE execution takes only CANCELLED; any other takes any status", () => {
  for (const current of STATUSES) {
    for (const wanted of ["CANCELLED", "SUSPENDED", "RUNNING", "CANCELLING"] as Status[]) {
      const terminal = current === "CANCELLED" || current === "DONE";
      const expected = terminal && wanted !== "CANCELLED" ? null : wanted;
      assert.equal(nextStatus(current, wanted), expected, `${current} -> ${wanted}`);
    }
  }
});

Deno.test("terminate() makes even a DONE execution CANCELLED, as harel's rule has it", async () => {
  const store = new MemoryStore();
  const client = new SQSClient({ region: "us-east-1" }); // never used: terminate only commits
  try {
    const fleet = new FleetClient({
      store,
      queue: new SqsQueue(client, "http://127.0.0.1:1/123456789012/never.fifo"),
    });
    const done = newExecution({ definition_id: "d", status: "DONE", active_path: "end" });
    await store.save(done);
    assert.deepEqual(await fleet.terminate(done.id), { changed: true, status: "CANCELLED" });
    assert.deepEqual(await fleet.suspend(done.id), { changed: false, status: "CANCELLED" });
    assert.deepEqual(await fleet.cancel(done.id), { changed: false, status: "CANCELLED" });
    assert.deepEqual(await store.pendingOutbox(), [], "no Cancel for a cancelled execution");
  } finally {
    client.destroy();
  }
});

const HAREL_CONTROL = new URL("../_support/harel_control.py", import.meta.url).pathname;

/** What a Python mirror of harel's control.cancel makes of each case's rows. */
async function harelCancels(cases: unknown[]): Promise<HarelOutcome[]> {
  const child = new Deno.Command("python3", {
    args: [HAREL_CONTROL],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify(cases)));
  await writer.close();
  const { code, stdout, stderr } = await child.output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  return new TextDecoder().decode(stdout).split("\n").filter((l) => l).map((l) => JSON.parse(l));
}

interface HarelOutcome {
  rows: Record<string, [string, number]>;
  emits: [string, string, Record<string, unknown>][];
}

Deno.test("cancel() gives what harel's control.cancel gives on the same rows, finished executions included", async () => {
  // "order": main has an `on Cancel` (so main.pay has one, from its parent); idle has none; end
  // is a sink. "plain" has no Cancel transition at all.
  const cancelSources: Record<string, string[]> = { order: ["main"], plain: [] };
  const hasCancelHandler = (definitionId: string, activePath = "", rootPath = "") => {
    const below = activePath.slice(rootPath ? rootPath.length + 1 : 0).split(".")
      .map((_, i, parts) => (rootPath ? `${rootPath}.` : "") + parts.slice(0, i + 1).join("."));
    return below.some((path) => cancelSources[definitionId]?.includes(path));
  };
  const exe = (status: Status, active_path: string | null, definition_id = "order") =>
    newExecution({ definition_id, status, active_path });
  const parent = exe("RUNNING", "main");
  const region = { ...exe("RUNNING", "fork.A.work"), root_path: "fork.A", parent_id: parent.id };
  const finished = { ...exe("DONE", "fork.B.end"), root_path: "fork.B", parent_id: parent.id };
  parent.children = {
    [region.id]: { root_path: "fork.A", finished: false, outcome: null, result: {} },
    [finished.id]: { root_path: "fork.B", finished: true, outcome: null, result: {} },
  } as Execution["children"];
  const cases: [string, Execution[]][] = [
    ["never started", [exe("PENDING", null)]],
    ["RUNNING, a handler on its state", [exe("RUNNING", "main")]],
    ["RUNNING, a handler on an ancestor", [exe("RUNNING", "main.pay")]],
    ["RUNNING, no handler on its state", [exe("RUNNING", "idle")]],
    ["SUSPENDED, a handler", [exe("SUSPENDED", "main")]],
    ["FAILED, a handler", [exe("FAILED", "main")]],
    ["CANCELLING, a handler", [exe("CANCELLING", "main")]],
    ["CANCELLED, a handler", [exe("CANCELLED", "main")]],
    ["CANCELLED, no handler", [exe("CANCELLED", "idle")]],
    ["DONE, its definition has a handler", [exe("DONE", "end")]],
    ["DONE, its definition has none", [exe("DONE", "end", "plain")]],
    ["RUNNING, its definition has none", [exe("RUNNING", "main", "plain")]],
    ["a parent with a running and a finished region", [parent, region, finished]],
  ];
  await using queue = await freshQueue();
  const runs: { name: string; rows: Execution[]; deno: HarelOutcome }[] = [];
  for (const [name, rows] of cases) {
    const store = new MemoryStore();
    for (const row of rows) await store.save(row);
    const stored = await Promise.all(rows.map(async (r) => (await store.load(r.id))!));
    const fleet = new FleetClient({ store, queue, hasCancelHandler });
    await fleet.cancel(rows[0]!.id, { reason: { case: name } });
    const after = await Promise.all(rows.map(async (r) => (await store.load(r.id))!));
    runs.push({
      name,
      rows: stored,
      deno: {
        rows: Object.fromEntries(after.map((r) => [r.id, [r.status, r.version]])),
        emits: [],
      },
    });
  }
  for (const message of await readQueue(queue)) {
    const run = runs.find((r) => r.rows[0]!.id === message.group)!;
    run.deno.emits.push([message.group, message.event.kind, message.event.data]);
  }
  const harel = await harelCancels(runs.map((r) => ({
    cancel_sources: cancelSources,
    rows: r.rows,
    id: r.rows[0]!.id,
    reason: { case: r.name },
  })));
  const same = runs.filter((run, i) => {
    try {
      assert.deepEqual(run.deno, harel[i]);
      return true;
    } catch {
      return false;
    }
  });
  assert.deepEqual(
    runs.filter((r) => !same.includes(r)).map((
      r,
      i,
    ) => [r.name, r.deno, harel[runs.indexOf(r)], i]),
    [],
  );
  assert.equal(`${same.length} of ${cases.length}`, "13 of 13");
});
