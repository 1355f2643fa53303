/**
 * `FleetClient`: what harel's `DistributedRunner` offers outside a worker.
 *
 * @module
 */
import {
  type Event,
  type Execution,
  type ExecutionStore,
  newEvent,
  newExecution,
  relayOutbox,
  StoreConflict,
  sweepTimers,
} from "../../mod.ts";
import { plainValue } from "../core/_json.ts";
import { checkKnownOptions, checkOptions, describe } from "../core/_validate.ts";
import * as control from "./_control.ts";
import { checkGroupId, messageBody } from "./_wire.ts";
import { ExecutionExists, ExecutionNotFound } from "./sqs_errors.ts";
import type { EventQueue } from "./sqs_queue.ts";
import type {
  CancelOptions,
  ControlResult,
  CreateOptions,
  FleetClientOptions,
  FleetRelayOptions,
  FleetRelayReport,
} from "./fleet_types.ts";

export type {
  CancelOptions,
  ControlResult,
  CreateOptions,
  FleetClientOptions,
  FleetRelayOptions,
  FleetRelayReport,
};

/** A JSON object option (context, reason), checked: a TypeError naming the field otherwise. */
function jsonObject(field: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`${field} must be a JSON object, got ${describe(value)}`);
  }
  return plainValue(field, value) as Record<string, unknown>;
}

/**
 * Drives the executions of a harel fleet from outside its workers, as harel's
 * `DistributedRunner` does: `create` commits a PENDING execution and publishes its `Start`,
 * `send` publishes an event to its group, `cancel` / `terminate` / `suspend` / `resume` are
 * harel's control plane, and `relay` is one cron pass that publishes the outbox and the due
 * timers. Every event goes to the queue on harel's wire ({@linkcode SqsQueue}).
 *
 * @example A Deno Deploy app's cron pass and an order's life
 * ```ts
 * import { DynamoDBStore, newEvent } from "@harel/dynamodb";
 * import { FleetClient, SqsQueue } from "@harel/dynamodb/sqs";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * await using queue = await SqsQueue.create({ endpoint: Deno.env.get("SQS_ENDPOINT") });
 * const fleet = new FleetClient({ store, queue });
 *
 * const order = await fleet.create("order", { context: { total: 42 } });
 * await fleet.send(order.id, newEvent("order.paid", { amount: 42 }));
 * await fleet.suspend(order.id); // a no-op until a worker has made it RUNNING
 * const { outbox, timers } = await fleet.relay(); // what Deno.cron runs each minute
 * console.log(outbox.delivered, timers.delivered);
 * ```
 */
export class FleetClient {
  /** The execution store. */
  readonly store: ExecutionStore;
  /** The queue events are published to. */
  readonly queue: EventQueue;

  /**
   * A fleet client on a store and a queue (no network here).
   *
   * @param options The store and the queue.
   */
  constructor(options: FleetClientOptions) {
    const given = checkOptions(options);
    checkKnownOptions("new FleetClient()", given, ["store", "queue"]);
    if (typeof given.store?.commit !== "function") {
      throw new TypeError(`store must be an ExecutionStore, got ${describe(given.store)}`);
    }
    if (typeof given.queue?.publish !== "function") {
      throw new TypeError(
        `queue must be an SqsQueue (or an EventQueue), got ${describe(given.queue)}`,
      );
    }
    this.store = given.store;
    this.queue = given.queue;
  }

  /**
   * Commits a new PENDING execution of `definitionId` and publishes harel's `Start` with the
   * initial context as its data, so a worker starts it. The Start is in the same commit's
   * outbox: published here and acknowledged, or — when the publish fails — left for the next
   * {@linkcode FleetClient.relay}. It is one event (one id): a worker runs it once, a copy
   * is deduped. A taken id is an {@linkcode ExecutionExists}.
   *
   * @param definitionId The definition the workers run (harel's `definition_id`).
   * @param options The initial context and, optionally, the id.
   * @returns The execution as committed (version 1, PENDING).
   */
  async create(definitionId: string, options?: CreateOptions): Promise<Execution> {
    const given = checkOptions(options);
    checkKnownOptions("create()", given, ["context", "id"]);
    if (typeof definitionId !== "string" || definitionId.length === 0) {
      throw new TypeError(`definitionId must be a non-empty string, got ${describe(definitionId)}`);
    }
    const context = jsonObject("context", given.context);
    const id = given.id === undefined ? undefined : checkGroupId("id", given.id);
    const exe = newExecution({ definition_id: definitionId, context, ...(id ? { id } : {}) });
    const start = newEvent("Start", structuredClone(context));
    messageBody(start); // too large a context fails here, before the commit
    let seqs: number[];
    try {
      ({ outbox: seqs } = await this.store.commit(exe, {
        emits: [{ target: exe.id, event: start }],
      }));
    } catch (error) {
      if (error instanceof StoreConflict) throw new ExecutionExists(exe.id, { cause: error });
      throw error;
    }
    try {
      await this.queue.publish(exe.id, start);
    } catch {
      return exe; // committed: the relay publishes the Start from the outbox
    }
    await this.store.ackOutbox(seqs).catch(() => {}); // a later relay re-publishes; deduped
    return exe;
  }

  /**
   * Publishes `event` to the execution's group, as harel's `DistributedRunner.send`. The
   * event is checked first (harel's model must read it), then the execution is looked up: a
   * missing one is an {@linkcode ExecutionNotFound} and nothing is sent.
   *
   * @param executionId The execution.
   * @param event The event (its id is the workers' dedupe key).
   */
  async send(executionId: string, event: Event): Promise<void> {
    checkGroupId("executionId", executionId);
    messageBody(event);
    const exe = await this.store.load(executionId);
    if (exe === null) throw new ExecutionNotFound("send", executionId);
    await this.queue.publish(executionId, event, { priority: exe.priority ?? 0 });
  }

  /**
   * harel's cooperative cancel: an execution in a state becomes CANCELLING with a `Cancel`
   * event (the reason as its data) in its outbox, which the next relay publishes; the worker
   * runs the machine's Cancel transition, or, without one, makes it CANCELLED. Its children
   * become CANCELLED. An execution that never started is terminated.
   *
   * @param executionId The execution.
   * @param options The reason, as the Cancel event's data.
   * @returns What the call did to the execution.
   */
  async cancel(executionId: string, options?: CancelOptions): Promise<ControlResult> {
    const given = checkOptions(options);
    checkKnownOptions("cancel()", given, ["reason"]);
    const reason = jsonObject("reason", given.reason);
    return await control.cancel(this.store, checkGroupId("executionId", executionId), reason);
  }

  /**
   * harel's terminate: CANCELLED at once, no hooks run, and the same for its children (a DONE
   * execution too, as harel's rule has it).
   *
   * @param executionId The execution.
   * @returns What the call did to the execution.
   */
  async terminate(executionId: string): Promise<ControlResult> {
    return await control.terminate(this.store, checkGroupId("executionId", executionId));
  }

  /**
   * harel's suspend: a RUNNING execution and its children become SUSPENDED (workers put its
   * events back until it resumes); any other status is left as it is.
   *
   * @param executionId The execution.
   * @returns What the call did to the execution.
   */
  async suspend(executionId: string): Promise<ControlResult> {
    return await control.suspend(this.store, checkGroupId("executionId", executionId));
  }

  /**
   * harel's resume: a SUSPENDED execution and its children become RUNNING again.
   *
   * @param executionId The execution.
   * @returns What the call did to the execution.
   */
  async resume(executionId: string): Promise<ControlResult> {
    return await control.resume(this.store, checkGroupId("executionId", executionId));
  }

  /**
   * One cron pass: an outbox pass that publishes each entry to its target's group (an entry
   * with no target is acknowledged without publishing, as harel's relay does) and a sweep that
   * publishes harel's `Timeout` for each due timer to its execution's group. Each entry is
   * acknowledged only after its publish resolved: a lost answer leaves it pending and it is
   * published again (at least once; workers dedupe on the event id).
   *
   * @param options The options of each pass.
   * @returns The two passes' reports.
   */
  async relay(options?: FleetRelayOptions): Promise<FleetRelayReport> {
    const given = checkOptions(options);
    checkKnownOptions("relay()", given, ["outbox", "timers"]);
    const queue = this.queue;
    const [outbox, timers] = await Promise.all([
      relayOutbox(this.store, async (entry) => {
        if (entry.targetId !== null) await queue.publish(entry.targetId, entry.event);
      }, given.outbox),
      sweepTimers(this.store, async (timer, event) => {
        await queue.publish(timer.executionId, event);
      }, given.timers),
    ]);
    return { outbox, timers };
  }
}
