/**
 * Durable state for harel, a statechart engine, in AWS DynamoDB: the executions, and everything
 * a step of one produces, in tables that Deno and Python workers share.
 *
 * - {@linkcode DynamoDBStore}, the execution store: `commit()` writes an execution with its
 *   outbox events, spawn intents, dedupe mark, timer changes and a trace step in one
 *   `TransactWriteItems`, guarded by optimistic concurrency ({@linkcode StoreConflict}).
 * - The runners, one bounded pass each, ready for `Deno.cron`: {@linkcode relayOutbox},
 *   {@linkcode relaySpawns}, {@linkcode sweepTimers} (harel's `Timeout`: {@linkcode timeoutEvent}).
 * - {@linkcode DynamoDBStateStore}, a small Redis-like store: JSON values with TTL, and hashes.
 * - Documents ({@linkcode newExecution}, {@linkcode newEvent}), named errors, and the interfaces
 *   ({@linkcode ExecutionStore}, {@linkcode StateStore}) a backend implements.
 *
 * `@harel/dynamodb/testing` has in-memory twins of both stores and the conformance suites;
 * `@harel/dynamodb/cli` is the operator CLI. Permissions: `--allow-net --allow-env --allow-read
 * --allow-sys=osRelease`.
 *
 * @example A worker's step: load with the dedupe mark, commit, relay
 * ```ts
 * import assert from "node:assert/strict";
 * import { DynamoDBStore, newEvent, newExecution, relayOutbox } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const order = newExecution({ definition_id: "order", status: "RUNNING" });
 * await store.save(order); // version 0 means insert
 * assert.equal(order.version, 1);
 *
 * const paid = newEvent("order.paid", { amount: 42 });
 * const { execution, processed } = await store.loadForEvent(order.id, paid.id);
 * assert.ok(execution && !processed);
 * execution.active_path = "order.shipping";
 * await store.commit(execution, {
 *   processedEventId: paid.id, // a redelivery of `paid` is now seen as processed
 *   emits: [{ target: null, event: newEvent("order.ship", { id: order.id }) }],
 * });
 * assert.equal(await store.isProcessed(order.id, paid.id), true);
 *
 * const shipped: string[] = [];
 * await relayOutbox(store, async (entry) => {
 *   if (entry.event.data.id === order.id) shipped.push(entry.event.kind);
 * });
 * assert.deepEqual(shipped, ["order.ship"]);
 * ```
 *
 * @example A lost race writes nothing
 * ```ts
 * import assert from "node:assert/strict";
 * import { DynamoDBStore, newEvent, newExecution, StoreConflict } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const exe = newExecution({ definition_id: "race" });
 * await store.save(exe);
 * const mine = structuredClone(exe);
 * const theirs = structuredClone(exe);
 * await store.commit(theirs); // another worker wins: version 2
 * await assert.rejects(
 *   store.commit(mine, { emits: [{ target: null, event: newEvent("lost") }] }),
 *   StoreConflict,
 * );
 * assert.equal(mine.version, 1, "unchanged: reload and apply the event again");
 * assert.equal((await store.load(exe.id))?.version, 2);
 * ```
 *
 * @example Timers fire as harel's Timeout event
 * ```ts
 * import assert from "node:assert/strict";
 * import { DynamoDBStore, newExecution, sweepTimers, timeoutEvent } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const exe = newExecution({ definition_id: "reminder" });
 * const fireAt = Date.now() / 1000 - 1; // epoch seconds, due a second ago
 * await store.commit(exe, { timers: [{ action: "schedule", path: "reminder.wait", fireAt }] });
 *
 * const fired: string[] = [];
 * await sweepTimers(store, async (timer, event) => {
 *   if (timer.executionId === exe.id) fired.push(event.id);
 * });
 * assert.deepEqual(fired, [timeoutEvent(exe.id, "reminder.wait", fireAt).id]);
 * ```
 *
 * @example The hash-state store
 * ```ts
 * import assert from "node:assert/strict";
 * import { DynamoDBStateStore } from "@harel/dynamodb";
 *
 * await using state = await DynamoDBStateStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 * });
 * await state.set("greeting", { text: "hi" }, { ttl: 60 }); // seconds from now
 * assert.deepEqual(await state.get("greeting"), { text: "hi" });
 * assert.equal(await state.hset("session:mod", "step", 1), 1); // a new field
 * assert.equal(await state.hget("session:mod", "step"), 1);
 * assert.equal(await state.hdel("session:mod", "step"), 1); // and the emptied key is gone
 * assert.equal(await state.exists("session:mod"), false);
 * ```
 *
 * @example Unit tests without DynamoDB (no permissions needed)
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryStore, newExecution } from "@harel/dynamodb/testing";
 *
 * const store = new MemoryStore();
 * const exe = newExecution({ definition_id: "order" });
 * await store.save(exe);
 * assert.equal((await store.load(exe.id))?.version, 1);
 * ```
 *
 * @module
 */
export * from "./src/core/documents.ts";
export * from "./src/core/errors.ts";
export * from "./src/execution/execution_store.ts";
export * from "./src/core/types.ts";
export type * from "./src/core/operator_types.ts";
export * from "./src/relay.ts";
export type {
  BackoffOptions,
  ClientConfig,
  ConnectOptions,
  ConnectRetry,
} from "./src/dynamo/connect.ts";
export * from "./src/state/state_store.ts";
export { globMatch } from "./src/core/glob.ts";
export type { ExecutionTables, TableSpec } from "./src/dynamo/tables.ts";
export {
  type EnsureTablesOptions,
  IndexNotFound,
  TableNotFound,
  TableNotReady,
  type TableProgress,
} from "./src/dynamo/tables.ts";
export {
  type CreateTableInput,
  type TableDefinition,
  type TableDefinitions,
  tableDefinitions,
  type TableDefinitionsOptions,
  type TableRole,
} from "./src/dynamo/table_definitions.ts";
export { type TableDifference, TableDrift } from "./src/dynamo/table_check.ts";
export type { PolicyDocument, PolicyOptions } from "./src/dynamo/iam_policy.ts";
