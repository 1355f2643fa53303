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
  UnreadableEntry,
} from "../../mod.ts";
import { plainValue } from "../core/_json.ts";
import { checkKnownOptions, checkOptions, describe } from "../core/_validate.ts";
import * as control from "./_control.ts";
import { checkGroupId, messageBody } from "./_wire.ts";
import {
  CancelNotPublished,
  ExecutionExists,
  ExecutionNotFound,
  PublishOutcomeUnknown,
  StartNotPublished,
} from "./sqs_errors.ts";
import { type EventQueue, permanentRefusal } from "./sqs_queue.ts";
import type {
  CancelOptions,
  ControlResult,
  CreateOptions,
  FleetClientOptions,
  FleetRelayOptions,
  FleetRelayReport,
} from "./fleet_types.ts";

/** A JSON object option (context, reason), checked: a TypeError naming the field otherwise. */
function jsonObject(field: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`${field} must be a JSON object, got ${describe(value)}`);
  }
  return plainValue(field, value, false, "", true) as Record<string, unknown>;
}

/** How long the relay waits between attempts of a publish SQS refused: 10 s doubling to 5 min. */
const FLEET_BACKOFF = { minSeconds: 10, maxSeconds: 300 } as const;

/** `hasCancelHandler` as a function of the definition id and the active state, checked. */
function cancelHandlers(
  value: FleetClientOptions["hasCancelHandler"],
): control.HasCancelHandler {
  if (value === undefined) return () => true;
  if (typeof value === "function") return (id, path, root) => value(id, path, root) === true;
  if (value instanceof Set) return (id) => value.has(id);
  throw new TypeError(
    `hasCancelHandler must be a function of the definition id and the active state, or a Set of definition ids, got ${
      describe(value)
    }`,
  );
}

/** Publishes a relayed entry; one that can never be carried is an {@linkcode UnreadableEntry}. */
async function publishEntry(
  queue: EventQueue,
  groupId: string,
  event: Event,
  unreadable: (why: string) => UnreadableEntry,
): Promise<void> {
  try {
    checkGroupId("target_id", groupId);
    messageBody(event, queue.maxMessageBytes);
  } catch (error) {
    throw unreadable(`harel's SQS transport cannot carry it: ${(error as Error).message}`);
  }
  try {
    await queue.publish(groupId, event);
  } catch (error) {
    const refusal = permanentRefusal(error);
    throw refusal === null ? error : unreadable(refusal);
  }
}

/**
 * Drives a harel fleet's executions from outside its workers, as harel's `DistributedRunner`:
 * `create`, `send`, the control plane (`cancel`, `terminate`, `suspend`, `resume`), and `relay`,
 * one cron pass publishing the outbox and due timers on harel's wire ({@linkcode SqsQueue}).
 *
 * @example A Deno Deploy app's cron pass and an order's life
 * ```ts
 * import { DynamoDBStore, newEvent } from "@harel/dynamodb";
 * import { FleetClient, SqsQueue } from "@harel/dynamodb/sqs";
 *
 * await using store = await DynamoDBStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *   otherWriters: true, // the fleet's Python workers share the tables
 * });
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
  readonly #hasCancelHandler: control.HasCancelHandler;

  /** A fleet client on a store and a queue (no network here). */
  constructor(options: FleetClientOptions) {
    const given = checkOptions(options);
    checkKnownOptions("new FleetClient()", given, ["store", "queue", "hasCancelHandler"]);
    if (typeof given.store?.commit !== "function") {
      throw new TypeError(`store must be an ExecutionStore, got ${describe(given.store)}`);
    }
    if (given.store.otherWriters === false) {
      throw new TypeError(
        "store must be built with otherWriters: true (DynamoDBStore.create({ otherWriters: true })): " +
          "a fleet's Python workers commit to the same tables, and a store without it never finds " +
          "their outbox entries, timers and executions",
      );
    }
    if (typeof given.queue?.publish !== "function") {
      throw new TypeError(
        `queue must be an SqsQueue (or an EventQueue), got ${describe(given.queue)}`,
      );
    }
    this.store = given.store;
    this.queue = given.queue;
    this.#hasCancelHandler = cancelHandlers(given.hasCancelHandler);
  }

  /**
   * Commits a new PENDING execution with harel's `Start` (the context as its data) in its outbox,
   * and resolves once the Start is published. When that fails the execution exists all the same,
   * its Start waits for {@linkcode FleetClient.relay}, and `create()` rejects with a
   * {@linkcode StartNotPublished} (refused) or {@linkcode PublishOutcomeUnknown} (it may have
   * gone out). A taken id is an {@linkcode ExecutionExists}.
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
    if (!definitionId.isWellFormed()) {
      throw new TypeError(
        "definitionId holds a lone UTF-16 surrogate, which harel's models refuse",
      );
    }
    const context = jsonObject("context", given.context);
    const id = given.id === undefined ? undefined : checkGroupId("id", given.id);
    const exe = newExecution({ definition_id: definitionId, context, ...(id ? { id } : {}) });
    const start = newEvent("Start", structuredClone(context));
    messageBody(start, this.queue.maxMessageBytes); // before the commit: nothing to undo
    let seqs: number[];
    try {
      ({ outbox: seqs } = await this.store.commit(exe, {
        emits: [{ target: exe.id, event: start }],
      }));
    } catch (error) {
      if (error instanceof StoreConflict) throw new ExecutionExists(exe.id, { cause: error });
      throw error;
    }
    const also = `create(): execution ${JSON.stringify(exe.id)} was committed (PENDING); ` +
      "its Start stays in the outbox for relay(), and a send() to it publishes it first";
    const refused = (cause: unknown) => new StartNotPublished(exe.id, start.id, { cause });
    await this.#publishCommitted(exe.id, start, seqs, refused, also);
    return exe;
  }

  /**
   * Publishes `event` to the execution's group, as harel's `DistributedRunner.send`; a missing
   * execution is an {@linkcode ExecutionNotFound}. A Start still in its outbox is published
   * first, so that no event overtakes it; when that fails, nothing is sent.
   *
   * @param event The event (its id is the workers' dedupe key).
   */
  async send(executionId: string, event: Event): Promise<void> {
    checkGroupId("executionId", executionId);
    messageBody(event, this.queue.maxMessageBytes);
    const exe = await this.store.load(executionId);
    if (exe === null) throw new ExecutionNotFound("send", executionId);
    if (exe.status === "PENDING") await this.#startFirst(executionId);
    await this.queue.publish(executionId, event, { priority: exe.priority ?? 0 });
  }

  /** Publishes and acknowledges an event just committed in the outbox; a failure says it stays. */
  async #publishCommitted(
    id: string,
    event: Event,
    seqs: number[],
    notPublished: (cause: unknown) => Error,
    also: string,
  ): Promise<void> {
    try {
      await this.queue.publish(id, event);
    } catch (error) {
      if (!(error instanceof PublishOutcomeUnknown)) throw notPublished(error);
      throw new PublishOutcomeUnknown(error.groupId, error.eventId, error.deduplicationId, {
        cause: error.cause,
        also,
      });
    }
    await this.store.ackOutbox(seqs).catch(() => {});
  }

  /** Publishes (and acknowledges) the Start a PENDING execution still has in its outbox. */
  async #startFirst(id: string): Promise<void> {
    const { emitted } = await this.store.executionOutbox(id);
    const starts = emitted.filter((e) => e.targetId === id && e.event?.kind === "Start");
    for (const entry of starts) {
      try {
        if (entry.state === "dead") throw new Error(`it is dead-lettered: ${entry.lastError}`);
        await this.queue.publish(id, entry.event!);
      } catch (error) {
        throw new StartNotPublished(id, entry.event!.id, { cause: error, sendingSeq: entry.seq });
      }
      await this.store.ackOutbox(entry.seq).catch(() => {}); // a relay re-publishes; deduped
    }
  }

  /**
   * harel's cancel: with a cancel handler on the active state (`hasCancelHandler`), CANCELLING
   * and a `Cancel` event (the reason as its data) committed in its outbox and published; else
   * (also when it never started or is DONE) CANCELLED at once, no event. Its children become
   * CANCELLED. When the publish fails it is CANCELLING all the same, and `cancel()` rejects with
   * a {@linkcode CancelNotPublished} or {@linkcode PublishOutcomeUnknown}.
   *
   * @param options The reason, as the Cancel event's data.
   */
  async cancel(executionId: string, options?: CancelOptions): Promise<ControlResult> {
    const given = checkOptions(options);
    checkKnownOptions("cancel()", given, ["reason"]);
    const reason = jsonObject("reason", given.reason);
    const id = checkGroupId("executionId", executionId);
    const { result, cancel } = await control.cancel(
      this.store,
      id,
      reason,
      this.#hasCancelHandler,
      this.queue.maxMessageBytes,
    );
    if (cancel !== null) {
      const also = `cancel(): execution ${JSON.stringify(id)} is CANCELLING (committed); ` +
        "its Cancel stays in the outbox for relay()";
      const refused = (cause: unknown) => new CancelNotPublished(id, cancel.event.id, { cause });
      await this.#publishCommitted(id, cancel.event, cancel.outbox, refused, also);
    }
    return result;
  }

  /** harel's terminate: it and its children CANCELLED at once, no hooks run (a DONE one too). */
  async terminate(executionId: string): Promise<ControlResult> {
    return await control.terminate(this.store, checkGroupId("executionId", executionId));
  }

  /** harel's suspend: a RUNNING execution and its children become SUSPENDED; else nothing. */
  async suspend(executionId: string): Promise<ControlResult> {
    return await control.suspend(this.store, checkGroupId("executionId", executionId));
  }

  /** harel's resume: a SUSPENDED execution and its children become RUNNING again. */
  async resume(executionId: string): Promise<ControlResult> {
    return await control.resume(this.store, checkGroupId("executionId", executionId));
  }

  /**
   * One cron pass: publishes each outbox entry to its target's group (one with no target is
   * acknowledged, as harel's relay does) and harel's `Timeout` for each due timer, each
   * acknowledged once published (at least once; workers dedupe). A failed publish is retried
   * with backoff (10 s doubling to 5 min) for ever unless `maxAttempts` is set; an entry that can
   * never be carried (bad model, group id, size, any 4xx refusal of the message) is set aside at
   * once as an {@linkcode UnreadableEntry}, visible in `deadLetters`.
   */
  async relay(options?: FleetRelayOptions): Promise<FleetRelayReport> {
    const given = checkOptions(options);
    checkKnownOptions("relay()", given, ["outbox", "timers"]);
    const queue = this.queue;
    const retry = { maxAttempts: Infinity, backoff: FLEET_BACKOFF };
    const [outbox, timers] = await Promise.all([
      relayOutbox(this.store, async (entry) => {
        if (entry.targetId === null) return;
        await publishEntry(
          queue,
          entry.targetId,
          entry.event,
          (why) => new UnreadableEntry("outbox", entry.seq, why),
        );
      }, { ...retry, ...given.outbox }),
      sweepTimers(this.store, async (timer, event) => {
        await publishEntry(
          queue,
          timer.executionId,
          event,
          (why) => new UnreadableEntry("timers", timer, why),
        );
      }, { ...retry, ...given.timers }),
    ]);
    return { outbox, timers };
  }
}
