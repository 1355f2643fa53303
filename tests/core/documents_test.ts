// The documents a Deno worker creates carry the Python engine's defaults, field for field: a
// Python worker reads every field of an execution (its workers route on `priority`), so a
// default that differs changes what it does. What is known of the engine's defaults here (no
// Python harel package on the build machines): DESIGN.md's fields and which may be null, and
// the engine's `Execution.priority`, which defaults to 0, normal (1 to 4 are more urgent; its
// workers route 1 and up to the high-priority lane). Events: a fresh id, `created_time` now,
// `received_time` null, as `timeoutEvent` builds harel's Timeout event.
import assert from "node:assert/strict";
import { newEvent, newExecution } from "../../src/testing.ts";

const HEX_ID = /^[0-9a-f]{32}$/;

Deno.test("newExecution() builds an execution with the engine's defaults, field for field: priority 0 (normal)", () => {
  const { id, ...fields } = newExecution({ definition_id: "order" });
  assert.match(id, HEX_ID);
  assert.deepEqual(fields, {
    definition_id: "order",
    definition_fqn: null,
    root_path: "",
    status: "PENDING",
    outcome: null,
    error: null,
    active_path: null,
    history: {},
    context: {},
    processed_events: 0,
    version: 0,
    priority: 0,
    parent_id: null,
    child_id: null,
    deferred: [],
    children: {},
    invoke_seq: {},
  });
  assert.equal(newExecution({ definition_id: "order", priority: 4 }).priority, 4, "4 = highest");
});

Deno.test("newEvent() builds an event with the engine's defaults: a fresh id, created now, not yet received", () => {
  const before = Date.now();
  const { id, created_time, ...fields } = newEvent("order.paid");
  assert.match(id, HEX_ID);
  assert.deepEqual(fields, { kind: "order.paid", data: {}, received_time: null });
  const created = Date.parse(created_time!);
  assert.ok(created >= before - 1 && created <= Date.now(), created_time!);
  assert.notEqual(newEvent("x").id, newEvent("x").id);
});
