// Building an SQS client and waiting until SQS answers, as src/dynamo/connect.ts does for DynamoDB.
import { SQSClient, type SQSClientConfig } from "@aws-sdk/client-sqs";
import { type BackoffOptions, waitUntilAnswers } from "../core/_backoff.ts";
import { isUnreachable } from "../core/_attributes.ts";
import { QueueUnreachable } from "./sqs_errors.ts";
import { type ConnectRetry, envVar } from "../dynamo/connect.ts";

/** One failed attempt to reach SQS, as `onRetry` gets it: the fields of a DynamoDB wait's. */
export type QueueRetry = ConnectRetry;

/**
 * Where SQS is, which queue, and how long `SqsQueue.create()` waits for SQS to answer.
 *
 * @example A queue on a local SQS (moto)
 * ```ts
 * import { SqsQueue, type SqsQueueOptions } from "@harel/dynamodb/sqs";
 *
 * const options: SqsQueueOptions = {
 *   endpoint: Deno.env.get("SQS_ENDPOINT"),
 *   queueName: "stm.fifo",
 *   deadlineMs: 10_000,
 * };
 * await using queue = await SqsQueue.create(options);
 * console.log(queue.url);
 * ```
 */
export interface SqsQueueOptions {
  /** An SQS-compatible endpoint (moto, ElasticMQ, LocalStack), or `null` / absent for AWS. @default {null} */
  endpoint?: string | null;
  /** The AWS region; with an endpoint and none, `"us-east-1"`. @default {undefined} */
  region?: string;
  /** The FIFO queue's name, created when missing; it must end in `.fifo`. @default {"stm.fifo"} */
  queueName?: string;
  /** How long to keep retrying an SQS that does not answer, in ms. @default {30000} */
  deadlineMs?: number;
  /** Aborts the wait for SQS. @default {undefined} */
  signal?: AbortSignal;
  /** Called after each attempt that found SQS unreachable, before the next one. @default {undefined} */
  onRetry?: (retry: QueueRetry) => void;
  /** The backoff between attempts. @default {{ minDelayMs: 100, maxDelayMs: 2000, multiplier: 2 }} */
  backoff?: BackoffOptions;
  /** How long one request may wait for an answer, in ms. @default {30000} */
  requestTimeoutMs?: number;
  /** Settings passed through to `new SQSClient` (`maxAttempts`, `credentials`, ...). @default {{}} */
  clientConfig?: Record<string, unknown>;
}

/** `create()`'s client: with an endpoint, the environment's AWS keys or else `test`/`test`. */
export function buildSqsClient(options: SqsQueueOptions): SQSClient {
  const endpoint = options.endpoint ?? null;
  const { requestTimeoutMs = 30_000 } = options;
  if (!(Number.isFinite(requestTimeoutMs) && requestTimeoutMs > 0)) {
    throw new RangeError(`requestTimeoutMs must be a finite number > 0, got ${requestTimeoutMs}`);
  }
  const requestHandler = {
    connectionTimeout: 5_000,
    requestTimeout: requestTimeoutMs,
    throwOnRequestTimeout: true,
  };
  const clientConfig = (options.clientConfig ?? {}) as SQSClientConfig;
  if (endpoint === null) {
    return new SQSClient({ region: options.region, requestHandler, ...clientConfig });
  }
  if (typeof endpoint !== "string" || !/^https?:$/.test(URL.parse(endpoint)?.protocol ?? "")) {
    throw new TypeError(
      `endpoint must be an http(s) URL such as "http://127.0.0.1:9324", got ${
        JSON.stringify(endpoint)
      }`,
    );
  }
  const accessKeyId = envVar("AWS_ACCESS_KEY_ID");
  const secretAccessKey = envVar("AWS_SECRET_ACCESS_KEY");
  const credentials = accessKeyId && secretAccessKey
    ? { accessKeyId, secretAccessKey, sessionToken: envVar("AWS_SESSION_TOKEN") }
    : { accessKeyId: "test", secretAccessKey: "test" };
  return new SQSClient({
    endpoint,
    region: options.region ?? envVar("AWS_REGION") ?? "us-east-1",
    credentials,
    requestHandler,
    ...clientConfig,
  });
}

/** The endpoint the client talks to, for messages. */
export function sqsEndpointName(options: SqsQueueOptions, region: string | undefined): string {
  if (typeof options.endpoint === "string") return options.endpoint;
  const fromEnv = envVar("AWS_ENDPOINT_URL_SQS") ?? envVar("AWS_ENDPOINT_URL");
  if (fromEnv) return fromEnv;
  return region ? `https://sqs.${region}.amazonaws.com` : "AWS";
}

/** Runs `attempt`, retrying with backoff while SQS is unreachable, until the deadline or signal. */
export function untilSqsAnswers<T>(
  attempt: (signal: AbortSignal) => Promise<T>,
  options: SqsQueueOptions,
  region: string | undefined,
): Promise<T> {
  const endpoint = sqsEndpointName(options, region);
  return waitUntilAnswers(
    attempt,
    options,
    endpoint,
    isUnreachable,
    (waitedMs, cause) => new QueueUnreachable(endpoint, waitedMs, { cause }),
  );
}
