/**
 * The documents the harel engine stores: executions, events and their summaries.
 * Field names are the engine's own (snake_case), shared with the Python engine.
 *
 * @module
 */

/**
 * Where an execution is in its life.
 *
 * @example Filtering on statuses
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 * import type { Status } from "@harel/dynamodb";
 *
 * const open: Status[] = ["PENDING", "RUNNING", "SUSPENDED"];
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const page = await store.listExecutions({ status: open });
 * ```
 */
export type Status =
  | "PENDING"
  | "RUNNING"
  | "DONE"
  | "CANCELLED"
  | "SUSPENDED"
  | "CANCELLING"
  | "FAILED";

/**
 * Every status, in the engine's order.
 *
 * @example Validating a status from a query string
 * ```ts
 * import { STATUSES, type Status } from "@harel/dynamodb";
 *
 * const given = "RUNNING";
 * const status = STATUSES.includes(given as Status) ? given as Status : undefined;
 * ```
 */
export const STATUSES: readonly Status[] = [
  "PENDING",
  "RUNNING",
  "DONE",
  "CANCELLED",
  "SUSPENDED",
  "CANCELLING",
  "FAILED",
];

/**
 * An event delivered to an execution. Its `id` is the dedupe key.
 *
 * @example Writing an event by hand
 * ```ts
 * import type { Event } from "@harel/dynamodb";
 *
 * const event: Event = { id: "order-1-paid", kind: "order.paid", data: { amount: 42 } };
 * ```
 */
export interface Event<D extends Record<string, unknown> = Record<string, unknown>> {
  /** Unique id; the store's dedupe marks are keyed on it. */
  id: string;
  /** What happened, e.g. `"order.paid"`. */
  kind: string;
  /** The event's payload (its type is `D`, e.g. what {@linkcode newEvent} was given). */
  data: D;
  /** When the event was created (ISO 8601), if known. */
  created_time?: string | null;
  /** When the event was received (ISO 8601), if known. */
  received_time?: string | null;
  /** Unknown fields round-trip untouched. */
  [extra: string]: unknown;
}

/**
 * The state of an invoked child machine, as its parent sees it.
 *
 * @example Reading an invoked child's state
 * ```ts
 * import type { ChildState, Execution } from "@harel/dynamodb";
 *
 * function finishedChildren(exe: Execution): ChildState[] {
 *   return Object.values(exe.children).filter((child) => child.finished);
 * }
 * ```
 */
export interface ChildState {
  /** The child's root state path. */
  root_path: string;
  /** Whether the child has finished. */
  finished: boolean;
  /** The child's outcome once finished. */
  outcome?: string | null;
  /** What the child returned. */
  result: Record<string, unknown>;
  /** Whether the child runs as a submachine of its parent. */
  submachine: boolean;
  /** The key the parent knows the child by. */
  key: string;
  /** Unknown fields round-trip untouched. */
  [extra: string]: unknown;
}

/**
 * One running (or finished) statechart instance: the document the store keeps.
 *
 * @example Moving an execution to its next state
 * ```ts
 * import { type Execution, newExecution } from "@harel/dynamodb";
 *
 * const exe: Execution = newExecution({ definition_id: "order" });
 * exe.status = "RUNNING";
 * exe.active_path = "order.awaiting_payment";
 * ```
 */
export interface Execution<C extends Record<string, unknown> = Record<string, unknown>> {
  /** Unique id (32 lowercase hex characters when made by {@linkcode newExecution}). */
  id: string;
  /** The statechart definition this execution runs. */
  definition_id: string;
  /** The definition's fully qualified name, if known. */
  definition_fqn?: string | null;
  /** The state path the execution started from. */
  root_path: string;
  /** Where the execution is in its life. */
  status: Status;
  /** The final outcome, once done. */
  outcome?: string | null;
  /** The error, once failed. */
  error?: string | null;
  /** The innermost active state path. */
  active_path?: string | null;
  /** History states: compound state path → last active child. */
  history: Record<string, string>;
  /** The execution's extended state (its type is `C`, e.g. what {@linkcode newExecution} was given). */
  context: C;
  /** How many events the execution has handled. */
  processed_events: number;
  /** The optimistic-concurrency token: 0 = never saved; each commit adds 1. */
  version: number;
  /**
   * Scheduling priority, as the Python engine reads it: 0 (normal, the default) to 4 (highest).
   * Its workers route an execution of priority 1 or more to their high-priority lane.
   */
  priority: number;
  /** The parent execution, for children. */
  parent_id?: string | null;
  /** The child execution this one waits on, if any. */
  child_id?: string | null;
  /** Events deferred for later states. */
  deferred: Event[];
  /** Invoked children by key. */
  children: Record<string, ChildState>;
  /** Per-state invocation counters. */
  invoke_seq: Record<string, number>;
  /** Unknown fields round-trip untouched. */
  [extra: string]: unknown;
}

/**
 * What `listExecutions` returns per execution.
 *
 * @example Printing a page of summaries
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 * import type { ExecutionSummary } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const { items }: { items: ExecutionSummary[] } = await store.listExecutions({ limit: 10 });
 * for (const s of items) console.log(s.id, s.status, s.version);
 * ```
 */
export interface ExecutionSummary {
  /** The execution's id. */
  id: string;
  /** Its definition. */
  definition_id: string;
  /** Its status. */
  status: Status;
  /** Its outcome, or null. */
  outcome: string | null;
  /** Its active path, or null. */
  active_path: string | null;
  /** Its stored version. */
  version: number;
  /** Its parent, or null for a root execution. */
  parent_id: string | null;
  /** When this module last committed it, epoch seconds; `null` where unknown (Python's). */
  updated_at: number | null;
}

/**
 * A new id: 32 lowercase hex characters, like a uuid4 without dashes.
 *
 * @example A fresh id for an execution or event
 * ```ts
 * import { newId } from "@harel/dynamodb";
 *
 * console.log(newId()); // e.g. "3f2b9c0e8d7a4b1c9e6f5a4b3c2d1e0f"
 * ```
 */
export function newId(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/**
 * A new Execution with the engine's defaults: a fresh id, status `PENDING`, version 0 (never
 * saved), priority 0, empty history, context and children. `C` flows from `fields.context`.
 *
 * @example Starting an execution
 * ```ts
 * import assert from "node:assert/strict";
 * import { newExecution } from "@harel/dynamodb";
 *
 * const exe = newExecution({ definition_id: "order", context: { total: 42 } });
 * assert.equal(exe.id.length, 32);
 * assert.equal(exe.version, 0);
 * const total: number = exe.context.total;
 * ```
 */
export function newExecution<C extends Record<string, unknown> = Record<string, unknown>>(
  fields: { definition_id: string } & Partial<Execution<C>>,
): Execution<C> {
  return {
    id: newId(),
    definition_fqn: null,
    root_path: "",
    status: "PENDING",
    outcome: null,
    error: null,
    active_path: null,
    history: {},
    context: {} as C, // replaced by fields.context when given
    processed_events: 0,
    version: 0,
    priority: 0,
    parent_id: null,
    child_id: null,
    deferred: [],
    children: {},
    invoke_seq: {},
    ...fields,
  };
}

/**
 * A new Event with a fresh id and `created_time` set to now; `D` flows from `data`.
 *
 * @example Making an event
 * ```ts
 * import assert from "node:assert/strict";
 * import { newEvent } from "@harel/dynamodb";
 *
 * const paid = newEvent("order.paid", { amount: 42 });
 * assert.equal(paid.kind, "order.paid");
 * const amount: number = paid.data.amount;
 * ```
 */
export function newEvent<D extends Record<string, unknown> = Record<string, unknown>>(
  kind: string,
  data: D = {} as D,
): Event<D> {
  return {
    id: newId(),
    kind,
    data,
    created_time: new Date().toISOString(),
    received_time: null,
  };
}

/**
 * The summary of an execution document; `updatedAt` is when it was last committed, if known
 * (a document does not say).
 *
 * @example The summary of a loaded execution
 * ```ts
 * import assert from "node:assert/strict";
 * import { newExecution, summarize } from "@harel/dynamodb";
 *
 * assert.equal(summarize(newExecution({ definition_id: "order" })).status, "PENDING");
 * ```
 */
export function summarize(exe: Execution, updatedAt: number | null = null): ExecutionSummary {
  return {
    id: exe.id,
    definition_id: exe.definition_id,
    status: exe.status,
    outcome: exe.outcome ?? null,
    active_path: exe.active_path ?? null,
    version: exe.version,
    parent_id: exe.parent_id ?? null,
    updated_at: updatedAt,
  };
}
