/**
 * Durable state for the harel statechart engine in AWS DynamoDB: the execution store
 * (`DynamoDBStore`) and a Redis-like hash-state store (`DynamoDBStateStore`), sharing
 * their tables with the Python engine.
 *
 * @example The happy path
 * ```ts
 * import { DynamoDBStore, newExecution } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: "http://127.0.0.1:8000" });
 * await store.save(newExecution({ definition_id: "order" }));
 * ```
 *
 * @module
 */
export * from "./src/documents.ts";
export * from "./src/errors.ts";
export * from "./src/execution_store.ts";
export * from "./src/types.ts";
export * from "./src/relay.ts";
export type { BackoffOptions, ClientConfig, ConnectOptions, ConnectRetry } from "./src/connect.ts";
export * from "./src/state_store.ts";
export { globMatch } from "./src/glob.ts";
export type { ExecutionTables, TableSpec } from "./src/tables.ts";
export { IndexNotFound, TableNotFound } from "./src/tables.ts";
