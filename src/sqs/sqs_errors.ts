/**
 * The named errors of `@harel/dynamodb/sqs`.
 *
 * @module
 */
import { OutcomeUnknown } from "../core/errors.ts";

/**
 * SQS did not answer (refused, reset, timed out, or 5xx) within `create()`'s `deadlineMs`.
 *
 * @example Telling a queue that is not up from a refusal
 * ```ts
 * import { QueueUnreachable } from "@harel/dynamodb/sqs";
 *
 * const error: unknown = new QueueUnreachable("http://127.0.0.1:9324", 30_000);
 * if (error instanceof QueueUnreachable) console.log(`${error.endpoint}: ${error.waitedMs} ms`);
 * ```
 */
export class QueueUnreachable extends Error {
  /** Always `"QueueUnreachable"`. */
  override name = "QueueUnreachable";
  /** The endpoint that did not answer (the `endpoint` option, or AWS's regional one). */
  readonly endpoint: string;
  /** How long `create()` waited, in ms. */
  readonly waitedMs: number;

  /** Builds the error for an SQS endpoint that did not answer in time. */
  constructor(endpoint: string, waitedMs: number, options?: ErrorOptions) {
    const cause = options?.cause instanceof Error ? ` (last error: ${options.cause.message})` : "";
    super(
      `SQS at ${endpoint} did not answer within ${waitedMs} ms${cause}: start it (moto: ` +
        "`python3 -m moto.server -p 9324`, or ElasticMQ, LocalStack), or raise `deadlineMs`",
      options,
    );
    this.endpoint = endpoint;
    this.waitedMs = waitedMs;
  }
}

/**
 * The queue is not FIFO: harel's SQS transport needs `MessageGroupId`, which only FIFO queues have.
 *
 * @example The error for a standard queue
 * ```ts
 * import { QueueNotFifo } from "@harel/dynamodb/sqs";
 *
 * const error = new QueueNotFifo("https://sqs.eu-west-1.amazonaws.com/123456789012/stm");
 * console.log(error.message);
 * ```
 */
export class QueueNotFifo extends TypeError {
  /** Always `"QueueNotFifo"`. */
  override name = "QueueNotFifo";
  /** The queue's name or URL. */
  readonly queue: string;

  /** Builds the error for a queue that is not FIFO. */
  constructor(queue: string, options?: ErrorOptions) {
    super(
      `queue ${JSON.stringify(queue)} is not a FIFO queue: harel's SQS transport needs one ` +
        '(a name ending in ".fifo", created with FifoQueue "true")',
      options,
    );
    this.queue = queue;
  }
}

/**
 * A `SendMessage` whose answer was lost (timeout, reset, 5xx) after it may have reached SQS: the
 * event may be on the queue, and publishing it again is safe (harel workers dedupe on the event
 * id). An {@linkcode OutcomeUnknown} with `operation` `"publish"` and the group id as `key`.
 *
 * @example Publishing again after an unknown outcome
 * ```ts
 * import { PublishOutcomeUnknown } from "@harel/dynamodb/sqs";
 *
 * const error: unknown = new PublishOutcomeUnknown("exe-1", "3f2b9c0e", "b1c2");
 * if (error instanceof PublishOutcomeUnknown) {
 *   console.log(`event ${error.eventId} to ${error.groupId} may be on the queue`);
 * }
 * ```
 */
export class PublishOutcomeUnknown extends OutcomeUnknown {
  /** Always `"PublishOutcomeUnknown"`. */
  override name = "PublishOutcomeUnknown";
  /** The group (execution id) the event was published to. */
  readonly groupId: string;
  /** The id of the event whose publish has an unknown outcome. */
  readonly eventId: string;
  /** The `MessageDeduplicationId` of the send (resending it within 5 minutes is dropped). */
  readonly deduplicationId: string;

  /** Builds the error for a publish whose outcome is unknown; `options.also` extends the message. */
  constructor(
    groupId: string,
    eventId: string,
    deduplicationId: string,
    options?: ErrorOptions & { also?: string },
  ) {
    super(
      "publish",
      groupId,
      `event ${JSON.stringify(eventId)}: SQS's answer was lost, so it may or may not be on the ` +
        "queue; publishing it again is safe (harel workers dedupe on the event id)" +
        (options?.also ? `. ${options.also}` : ""),
      options,
    );
    this.groupId = groupId;
    this.eventId = eventId;
    this.deduplicationId = deduplicationId;
  }
}

/**
 * The execution a {@linkcode FleetClient} call names is not in the store.
 *
 * @example Telling a missing execution from a fault
 * ```ts
 * import { ExecutionNotFound } from "@harel/dynamodb/sqs";
 *
 * const error: unknown = new ExecutionNotFound("send", "exe-1");
 * if (error instanceof ExecutionNotFound) console.log(error.executionId);
 * ```
 */
export class ExecutionNotFound extends Error {
  /** Always `"ExecutionNotFound"`. */
  override name = "ExecutionNotFound";
  /** The id that named no execution. */
  readonly executionId: string;

  /** Builds the error for a missing execution. */
  constructor(operation: string, executionId: string) {
    super(
      `${operation}(): no execution ${JSON.stringify(executionId)} in the store; nothing was sent`,
    );
    this.executionId = executionId;
  }
}

/**
 * `create()` was given an id that an execution already has (harel's `ExecutionAlreadyExists`).
 *
 * @example Creating an execution once
 * ```ts
 * import { ExecutionExists } from "@harel/dynamodb/sqs";
 *
 * const error: unknown = new ExecutionExists("order-1");
 * if (error instanceof ExecutionExists) console.log(`${error.executionId} is already started`);
 * ```
 */
export class ExecutionExists extends Error {
  /** Always `"ExecutionExists"`. */
  override name = "ExecutionExists";
  /** The id that is taken. */
  readonly executionId: string;

  /** Builds the error for an id that is taken. */
  constructor(executionId: string, options?: ErrorOptions) {
    super(
      `create(): execution ${JSON.stringify(executionId)} already exists; no Start was published`,
      options,
    );
    this.executionId = executionId;
  }
}

/**
 * `create()` committed the execution (PENDING) but SQS refused its `Start`, which waits in the
 * outbox for `FleetClient.relay()`. `send()` throws it too (with `sendingSeq`) when it could not
 * publish such a Start first: then it sent nothing.
 *
 * @example Leaving the Start to the relay
 * ```ts
 * import { StartNotPublished } from "@harel/dynamodb/sqs";
 *
 * const error: unknown = new StartNotPublished("order-1", "3f2b9c0e");
 * if (error instanceof StartNotPublished) console.log(`${error.executionId}: relay() starts it`);
 * ```
 */
export class StartNotPublished extends Error {
  /** Always `"StartNotPublished"`. */
  override name = "StartNotPublished";
  /** The execution, committed PENDING. */
  readonly executionId: string;
  /** The id of its `Start` event, in the outbox. */
  readonly eventId: string;

  /** Builds the error for a Start that SQS refused (`sendingSeq`: from `send()`). */
  constructor(
    executionId: string,
    eventId: string,
    options?: ErrorOptions & { sendingSeq?: number },
  ) {
    const cause = options?.cause instanceof Error ? ` (${options.cause.message})` : "";
    super(
      options?.sendingSeq === undefined
        ? `create(): execution ${JSON.stringify(executionId)} was committed (PENDING), but its ` +
          `Start was not published${cause}; it stays in the outbox for relay(), and a send() to ` +
          "the execution publishes it first"
        : `send(): execution ${JSON.stringify(executionId)}'s Start (outbox seq ` +
          `${options.sendingSeq}) is still in its outbox and could not be published first` +
          `${cause}; nothing was sent, so that no event overtakes the Start: relay() or retry`,
      options,
    );
    this.executionId = executionId;
    this.eventId = eventId;
  }
}

/**
 * `cancel()` committed the execution CANCELLING, but SQS refused its `Cancel` event, which waits
 * in the outbox for `FleetClient.relay()` (workers drop its other events meanwhile).
 *
 * @example Leaving the Cancel to the relay
 * ```ts
 * import { CancelNotPublished } from "@harel/dynamodb/sqs";
 *
 * const error: unknown = new CancelNotPublished("order-1", "3f2b9c0e");
 * if (error instanceof CancelNotPublished) console.log(`${error.executionId}: relay() sends it`);
 * ```
 */
export class CancelNotPublished extends Error {
  /** Always `"CancelNotPublished"`. */
  override name = "CancelNotPublished";
  /** The execution, committed CANCELLING. */
  readonly executionId: string;
  /** The id of its `Cancel` event, in the outbox. */
  readonly eventId: string;

  /** Builds the error for a Cancel that SQS refused. */
  constructor(executionId: string, eventId: string, options?: ErrorOptions) {
    const cause = options?.cause instanceof Error ? ` (${options.cause.message})` : "";
    super(
      `cancel(): execution ${JSON.stringify(executionId)} is CANCELLING (committed), but its ` +
        `Cancel was not published${cause}; it stays in the outbox for relay()`,
      options,
    );
    this.executionId = executionId;
    this.eventId = eventId;
  }
}
