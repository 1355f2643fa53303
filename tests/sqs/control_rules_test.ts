// harel's control-plane status rules (engine/aio/control.py), as pure rules and on the memory
// twin: no database, no queue.
import assert from "node:assert/strict";
import { newExecution, type Status, STATUSES } from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { nextStatus } from "../../src/sqs/_control.ts";
import { FleetClient, SqsQueue } from "../../src/sqs.ts";
import { SQSClient } from "@aws-sdk/client-sqs";

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
