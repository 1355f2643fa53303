/**
 * The options and results of {@linkcode FleetClient}'s calls.
 *
 * @module
 */
import type {
  ExecutionStore,
  OutboxRelayOptions,
  RelayReport,
  Status,
  SweepOptions,
} from "../../mod.ts";
import type { EventQueue } from "./sqs_queue.ts";

/**
 * What a {@linkcode FleetClient} drives executions with.
 *
 * @example Only the "order" machine handles Cancel
 * ```ts
 * import type { FleetClientOptions } from "@harel/dynamodb/sqs";
 *
 * const options: Pick<FleetClientOptions, "hasCancelHandler"> = {
 *   hasCancelHandler: new Set(["order"]),
 * };
 * ```
 */
export interface FleetClientOptions {
  /** The execution store the workers share (`DynamoDBStore`; `MemoryStore` in tests). */
  store: ExecutionStore;
  /** The queue the workers read ({@linkcode SqsQueue}). */
  queue: EventQueue;
  /**
   * Whether an execution's active state (or an ancestor below its root) has a `Cancel`
   * transition, as harel's `engine.has_cancel_handler` answers: a function of the definition id,
   * `active_path` and `root_path`, or a Set of definition ids whose every state has one. With
   * one, `cancel()` is cooperative (CANCELLING and a `Cancel` event); else immediate (CANCELLED).
   * @default {every state has one (cooperative)}
   */
  hasCancelHandler?:
    | ((definitionId: string, activePath: string, rootPath: string) => boolean)
    | ReadonlySet<string>;
}

/**
 * Options of {@linkcode FleetClient.create}.
 *
 * @example Starting an execution with a chosen id
 * ```ts
 * import type { CreateOptions } from "@harel/dynamodb/sqs";
 *
 * const options: CreateOptions = { id: "order-42", context: { total: 42 } };
 * ```
 */
export interface CreateOptions {
  /** The initial context, also the `Start` event's data (a JSON object). @default {{}} */
  context?: Record<string, unknown>;
  /**
   * The execution's id: at most 128 characters SQS takes in a group id, leaving room for its
   * spawns' `{id}:{state path}:{seq}` (docs/fleet.md, "Spawns").
   * @default {a fresh 32-hex id}
   */
  id?: string;
}

/**
 * Options of {@linkcode FleetClient.cancel}.
 *
 * @example Cancelling with a reason
 * ```ts
 * import type { CancelOptions } from "@harel/dynamodb/sqs";
 *
 * const options: CancelOptions = { reason: { by: "support", ticket: 1234 } };
 * ```
 */
export interface CancelOptions {
  /** The `Cancel` event's data, for the machine's Cancel transition (a JSON object). @default {{}} */
  reason?: Record<string, unknown>;
}

/**
 * What a control call ({@linkcode FleetClient.suspend} and the others) did to the execution.
 *
 * @example Telling a suspend from a no-op
 * ```ts
 * import type { ControlResult } from "@harel/dynamodb/sqs";
 *
 * const said = (r: ControlResult) => r.changed ? `now ${r.status}` : `left ${r.status}`;
 * ```
 */
export interface ControlResult {
  /** Whether the execution's own status was committed (false: harel's rules left it). */
  changed: boolean;
  /** Its status after the call, as the call saw it. */
  status: Status;
}

/**
 * Options of {@linkcode FleetClient.relay}: those of `relayOutbox()` and `sweepTimers()`, but
 * `maxAttempts` defaults to `Infinity` and `backoff` to `{ minSeconds: 10, maxSeconds: 300 }`.
 *
 * @example A cron pass with smaller reads
 * ```ts
 * import type { FleetRelayOptions } from "@harel/dynamodb/sqs";
 *
 * const options: FleetRelayOptions = { outbox: { limit: 200 }, timers: { limit: 200 } };
 * ```
 */
export interface FleetRelayOptions {
  /** The outbox pass's options. @default {{}} */
  outbox?: OutboxRelayOptions;
  /** The timer sweep's options. @default {{}} */
  timers?: SweepOptions;
}

/**
 * What one {@linkcode FleetClient.relay} pass did.
 *
 * @example Logging a cron pass
 * ```ts
 * import type { FleetRelayReport } from "@harel/dynamodb/sqs";
 *
 * const log = (r: FleetRelayReport) =>
 *   console.log(`published ${r.outbox.delivered} emits, ${r.timers.delivered} timeouts`);
 * ```
 */
export interface FleetRelayReport {
  /** The outbox pass. */
  outbox: RelayReport;
  /** The timer sweep. */
  timers: RelayReport;
}
