/**
 * Test helpers for code built on `@harel/dynamodb`: in-memory twins of both stores and the
 * conformance suites both pass, with the documents, errors, types and runners. It loads no AWS
 * SDK: a unit test that imports only this module runs with no permissions.
 *
 * @example Unit-testing a worker without DynamoDB
 * ```ts
 * import { MemoryStateStore, MemoryStore, newExecution } from "@harel/dynamodb/testing";
 *
 * const store = new MemoryStore();
 * const state = new MemoryStateStore();
 * await store.save(newExecution({ definition_id: "order" }));
 * await state.hset("session:1", "step", 1);
 * ```
 *
 * @example Testing a relay callback on the twin
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryStore, newEvent, newExecution, relayOutbox } from "@harel/dynamodb/testing";
 *
 * const store = new MemoryStore();
 * await store.commit(newExecution({ definition_id: "order" }), {
 *   emits: [{ target: null, event: newEvent("order.created") }],
 * });
 * const seen: string[] = [];
 * const report = await relayOutbox(store, async (entry) => {
 *   seen.push(entry.event.kind);
 * });
 * assert.deepEqual(seen, ["order.created"]);
 * assert.deepEqual([report.delivered, report.failed, report.setAside], [1, 0, 0]);
 * assert.deepEqual(await store.pendingOutbox(), []);
 * ```
 *
 * @module
 */
export * from "./execution/memory/memory_store.ts";
export * from "./state/memory_state_store.ts";
export * from "./conformance/execution.ts";
export * from "./conformance/snapshot.ts";
export * from "./conformance/state.ts";
export * from "./core/documents.ts";
export * from "./core/errors.ts";
export type * from "./core/types.ts";
export type * from "./core/operator_types.ts";
export * from "./relay.ts";
