/**
 * Test helpers for code built on `@harel/dynamodb`: in-memory twins of both stores, with
 * the same semantics as the DynamoDB ones, and the conformance suites both pass.
 *
 * @example Unit-testing a worker without DynamoDB
 * ```ts
 * import { newExecution } from "@harel/dynamodb";
 * import { MemoryStateStore, MemoryStore } from "@harel/dynamodb/testing";
 *
 * const store = new MemoryStore();
 * const state = new MemoryStateStore();
 * await store.save(newExecution({ definition_id: "order" }));
 * await state.hset("session:1", "step", 1);
 * ```
 *
 * @module
 */
export * from "./memory_store.ts";
export * from "./memory_state_store.ts";
export * from "./conformance.ts";
