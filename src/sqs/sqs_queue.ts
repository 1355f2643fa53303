/**
 * `SqsQueue`: harel's SQS transport on its exact wire, for the publishing side.
 *
 * @module
 */
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { isUnreachable } from "../core/_attributes.ts";
import { checkKnownOptions, checkOptions, describe } from "../core/_validate.ts";
import { newId } from "../core/documents.ts";
import type { Event } from "../../mod.ts";
import {
  buildSqsClient,
  type QueueRetry,
  type SqsQueueOptions,
  untilSqsAnswers,
} from "./_connect.ts";
import { checkGroupId, MAX_BODY_BYTES, messageBody } from "./_wire.ts";
import { PublishOutcomeUnknown, QueueNotFifo } from "./sqs_errors.ts";

export type { QueueRetry, SqsQueueOptions };

/**
 * Options of one {@linkcode SqsQueue.publish}.
 *
 * @example Publishing at the only priority SQS has
 * ```ts
 * import type { PublishOptions } from "@harel/dynamodb/sqs";
 *
 * const options: PublishOptions = { priority: 0 };
 * ```
 */
export interface PublishOptions {
  /** harel's message priority: SQS FIFO has none, so anything but 0 is a RangeError. @default {0} */
  priority?: number;
}

/**
 * What SQS answered to a publish.
 *
 * @example Logging a publish
 * ```ts
 * import type { PublishReceipt } from "@harel/dynamodb/sqs";
 *
 * const log = (r: PublishReceipt) => console.log(`${r.messageId} #${r.sequenceNumber}`);
 * ```
 */
export interface PublishReceipt {
  /** SQS's id of the message. */
  messageId: string;
  /** The FIFO sequence number SQS gave it. */
  sequenceNumber: string | null;
  /** The `MessageDeduplicationId` sent: fresh for every publish. */
  deduplicationId: string;
}

/** What a publisher needs of a queue: {@linkcode SqsQueue} is one (the fleet client takes any). */
export interface EventQueue {
  /** The largest message body the queue takes, in bytes (SQS's `MaximumMessageSize`). */
  readonly maxMessageBytes?: number;
  /** Publishes `event` to the group `groupId` (an execution id). */
  publish(groupId: string, event: Event, options?: PublishOptions): Promise<unknown>;
}

const CREATE_OPTIONS = [
  "endpoint",
  "region",
  "queueName",
  "deadlineMs",
  "signal",
  "onRetry",
  "backoff",
  "requestTimeoutMs",
  "clientConfig",
] as const;

/** harel's own refusal (`harel.engine.transport.sqs._NO_PRIORITY`), word for word. */
const NO_PRIORITY = "SqsTransport has no message priority (SQS FIFO has no per-group priority): " +
  "publish with priority=0, or use another transport for priority routing.";

/** The queue name of a queue URL (its last path segment). */
function nameOfUrl(url: string): string {
  return url.replace(/\/+$/, "").split("/").pop() ?? url;
}

/**
 * The publishing half of harel's `SqsTransport`, on its exact wire: one `SendMessage` per event,
 * the execution id as `MessageGroupId` (the engine's per-execution lock), and a fresh
 * `MessageDeduplicationId` per send (a fan-out reuses event ids).
 *
 * @example Publishing an event to an execution's group
 * ```ts
 * import { newEvent } from "@harel/dynamodb";
 * import { SqsQueue } from "@harel/dynamodb/sqs";
 *
 * await using queue = await SqsQueue.create({ endpoint: Deno.env.get("SQS_ENDPOINT") });
 * const receipt = await queue.publish("order-1", newEvent("order.paid", { amount: 42 }));
 * console.log(receipt.messageId);
 * ```
 */
export class SqsQueue implements EventQueue, AsyncDisposable {
  /** The queue's URL. */
  readonly url: string;
  readonly #client: Pick<SQSClient, "send">;
  #owned: SQSClient | null = null;
  #closed = false;
  #maxMessageBytes = MAX_BODY_BYTES;

  /**
   * A queue on an injected client, which stays the caller's. A URL not ending in `.fifo` is a
   * {@linkcode QueueNotFifo}.
   *
   * @param client An `SQSClient` (anything with its `send`).
   */
  constructor(client: Pick<SQSClient, "send">, url: string) {
    if (typeof client?.send !== "function") {
      throw new TypeError(`client must be an SQSClient, got ${describe(client)}`);
    }
    if (typeof url !== "string" || URL.parse(url) === null) {
      throw new TypeError(`url must be the queue's URL, got ${describe(url)}`);
    }
    if (!nameOfUrl(url).endsWith(".fifo")) throw new QueueNotFifo(url);
    this.#client = client;
    this.url = url;
  }

  /** The largest message body the queue takes: its `MaximumMessageSize` (1 MiB with `new`). */
  get maxMessageBytes(): number {
    return this.#maxMessageBytes;
  }

  /**
   * Builds a client it owns, retries until SQS answers, creates the FIFO queue when missing and
   * reads its `MaximumMessageSize`.
   *
   * @param options Where SQS is, the queue's name, and how long to wait.
   */
  static async create(options: SqsQueueOptions = {}): Promise<SqsQueue> {
    const given = checkOptions(options);
    checkKnownOptions("SqsQueue.create()", given, CREATE_OPTIONS);
    if (typeof given.backoff === "object" && given.backoff !== null) {
      checkKnownOptions("SqsQueue.create()'s backoff", given.backoff, [
        "minDelayMs",
        "maxDelayMs",
        "multiplier",
      ]);
    }
    const { queueName = "stm.fifo" } = given;
    if (typeof queueName !== "string" || !/^[A-Za-z0-9_-]{1,75}\.fifo$/.test(queueName)) {
      if (typeof queueName === "string" && /^[A-Za-z0-9_-]{1,80}$/.test(queueName)) {
        throw new QueueNotFifo(queueName);
      }
      throw new TypeError(
        `queueName must be a FIFO queue's name: 1 to 80 letters, digits, "-" or "_" ending in ` +
          `".fifo", got ${describe(queueName)}`,
      );
    }
    const client = buildSqsClient(given);
    try {
      const region = await client.config.region().catch(() => undefined);
      const [url, size] = await untilSqsAnswers(
        async (signal) => {
          const { QueueUrl } = await client.send(
            new CreateQueueCommand({ QueueName: queueName, Attributes: { FifoQueue: "true" } }),
            { abortSignal: signal },
          );
          if (!QueueUrl) throw new Error(`CreateQueue of ${queueName} returned no QueueUrl`);
          const { Attributes } = await client.send(
            new GetQueueAttributesCommand({
              QueueUrl,
              AttributeNames: ["MaximumMessageSize"],
            }),
            { abortSignal: signal },
          );
          return [QueueUrl, Number(Attributes?.MaximumMessageSize)] as const;
        },
        given,
        region,
      );
      const queue = new SqsQueue(client, url);
      queue.#owned = client;
      if (size > 0 && size < MAX_BODY_BYTES) queue.#maxMessageBytes = size;
      return queue;
    } catch (error) {
      client.destroy();
      throw error;
    }
  }

  /**
   * Publishes `event` to the group `groupId` with one `SendMessage`, as `SqsTransport.publish`,
   * after checking the group id, the priority and the event. A lost answer is a
   * {@linkcode PublishOutcomeUnknown}: the event may be on the queue.
   *
   * @param groupId The execution the event is for (its `MessageGroupId`).
   * @param options The priority (0, the only one SQS has).
   */
  async publish(groupId: string, event: Event, options?: PublishOptions): Promise<PublishReceipt> {
    const given = checkOptions(options);
    checkKnownOptions("publish()", given, ["priority"]);
    const { priority = 0 } = given;
    if (typeof priority !== "number" || !Number.isInteger(priority)) {
      throw new TypeError(`priority must be an integer, got ${describe(priority)}`);
    }
    if (priority !== 0) throw new RangeError(`priority ${priority}: ${NO_PRIORITY}`);
    checkGroupId("groupId", groupId);
    const body = messageBody(event, this.#maxMessageBytes);
    if (this.#closed) throw new Error("SqsQueue is closed: publish() before close()");
    const deduplicationId = newId();
    try {
      const answer = await this.#client.send(
        new SendMessageCommand({
          QueueUrl: this.url,
          MessageBody: body,
          MessageGroupId: groupId,
          MessageDeduplicationId: deduplicationId,
        }),
      );
      return {
        messageId: answer.MessageId ?? "",
        sequenceNumber: answer.SequenceNumber ?? null,
        deduplicationId,
      };
    } catch (error) {
      if (mayHaveBeenSent(error)) {
        throw new PublishOutcomeUnknown(groupId, event.id, deduplicationId, { cause: error });
      }
      throw error;
    }
  }

  /** Destroys the client `create()` built (an injected one stays the caller's). */
  close(): Promise<void> {
    this.#closed = true;
    this.#owned?.destroy();
    return Promise.resolve();
  }

  /** The same as {@linkcode SqsQueue.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** SQS's refusals that concern the queue or the caller, not the message: an operator cures them. */
const NOT_THE_MESSAGE =
  /Throttl|RequestLimit|OverLimit|AccessDenied|Kms|Token|Signature|Credential|Unrecognized|Security|QueueDoesNotExist|NonExistentQueue|QueueDeleted|Unavailable|Timeout/i;

/** Why SQS will never take this message (a 4xx refusal of the message itself), or null. */
export function permanentRefusal(error: unknown): string | null {
  const e = error as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e?.$metadata?.httpStatusCode ?? 0;
  if (status < 400 || status >= 500 || status === 429 || NOT_THE_MESSAGE.test(e.name ?? "")) {
    return null;
  }
  return `SQS refused it (${status} ${e.name}: ${e.message}); a retry cannot cure that`;
}

/** Whether a failed send may have reached SQS: not a 4xx, nor a refused connection on its only attempt. */
function mayHaveBeenSent(error: unknown): boolean {
  if (!isUnreachable(error)) return false;
  const e = error as { code?: string; $metadata?: { attempts?: number } };
  const refused = e.code === "ECONNREFUSED" ||
    (error as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED";
  return !(refused && (e.$metadata?.attempts ?? 1) <= 1);
}
