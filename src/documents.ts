/**
 * The documents the harel engine stores: executions, events and their summaries.
 * Field names are the engine's own (snake_case), shared with the Python engine.
 *
 * @module
 */

/** Where an execution is in its life. */
export type Status =
  | "PENDING"
  | "RUNNING"
  | "DONE"
  | "CANCELLED"
  | "SUSPENDED"
  | "CANCELLING"
  | "FAILED";

/** Every status, in the engine's order. */
export const STATUSES: readonly Status[] = [
  "PENDING",
  "RUNNING",
  "DONE",
  "CANCELLED",
  "SUSPENDED",
  "CANCELLING",
  "FAILED",
];

/** An event delivered to an execution. Its `id` is the dedupe key. */
export interface Event {
  /** Unique id; the store's dedupe marks are keyed on it. */
  id: string;
  /** What happened, e.g. `"order.paid"`. */
  kind: string;
  /** The event's payload. */
  data: Record<string, unknown>;
  /** When the event was created (ISO 8601), if known. */
  created_time?: string | null;
  /** When the event was received (ISO 8601), if known. */
  received_time?: string | null;
  /** Unknown fields round-trip untouched. */
  [extra: string]: unknown;
}

/** The state of an invoked child machine, as its parent sees it. */
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

/** One running (or finished) statechart instance: the document the store keeps. */
export interface Execution {
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
  /** The execution's extended state. */
  context: Record<string, unknown>;
  /** How many events the execution has handled. */
  processed_events: number;
  /** The optimistic-concurrency token: 0 = never saved; each commit adds 1. */
  version: number;
  /** Scheduling priority, 0 (highest) to 4. */
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

/** What `listExecutions` returns per execution. */
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
}

/** A new id: 32 lowercase hex characters, like a uuid4 without dashes. */
export function newId(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/**
 * A new Execution with the engine's defaults: a fresh id, status `PENDING`,
 * version 0 (never saved), priority 2, empty history, context and children.
 *
 * @example Starting an execution
 * ```ts
 * import { newExecution } from "@harel/dynamodb";
 *
 * const exe = newExecution({ definition_id: "order", context: { total: 42 } });
 * console.log(exe.id.length, exe.version); // 32 0
 * ```
 */
export function newExecution(
  fields: { definition_id: string } & Partial<Execution>,
): Execution {
  return {
    id: newId(),
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
    priority: 2,
    parent_id: null,
    child_id: null,
    deferred: [],
    children: {},
    invoke_seq: {},
    ...fields,
  };
}

/**
 * A new Event with a fresh id and `created_time` set to now.
 *
 * @example Making an event
 * ```ts
 * import { newEvent } from "@harel/dynamodb";
 *
 * const paid = newEvent("order.paid", { amount: 42 });
 * console.log(paid.kind, paid.data.amount); // order.paid 42
 * ```
 */
export function newEvent(kind: string, data: Record<string, unknown> = {}): Event {
  return {
    id: newId(),
    kind,
    data,
    created_time: new Date().toISOString(),
    received_time: null,
  };
}

/** The summary of an execution document. */
export function summarize(exe: Execution): ExecutionSummary {
  return {
    id: exe.id,
    definition_id: exe.definition_id,
    status: exe.status,
    outcome: exe.outcome ?? null,
    active_path: exe.active_path ?? null,
    version: exe.version,
    parent_id: exe.parent_id ?? null,
  };
}
