// Building an SQS client and waiting until SQS answers, as src/dynamo/connect.ts does for DynamoDB.
import { SQSClient, type SQSClientConfig } from "@aws-sdk/client-sqs";
import { type BackoffOptions, waitUntilAnswers } from "../core/_backoff.ts";
import { isUnreachable } from "../core/_attributes.ts";
import { QueueUnreachable } from "./sqs_errors.ts";

/** One failed attempt to reach SQS, as `onRetry` gets it. */
export interface QueueRetry {
  /** The endpoint waited for. */
  endpoint: string;
  /** Which attempt failed, from 1. */
  attempt: number;
  /** Why it failed: a connection error, a timeout, or a 5xx answer. */
  error: unknown;
  /** How long `create()` has waited so far, in ms. */
  waitedMs: number;
  /** How long it waits before the next attempt, in ms. */
  delayMs: number;
  /** The deadline: `create()` gives up after this many ms. */
  deadlineMs: number;
}

/** What the client and the wait take (a subset of `SqsQueueOptions`). */
export interface ConnectSettings {
  endpoint?: string | null;
  region?: string;
  signal?: AbortSignal;
  deadlineMs?: number;
  requestTimeoutMs?: number;
  backoff?: BackoffOptions;
  onRetry?: (retry: QueueRetry) => void;
  clientConfig?: Record<string, unknown>;
}

function envVar(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no --allow-env: as if unset
  }
}

/** `create()`'s client: with an endpoint, the environment's AWS keys or else `test`/`test`. */
export function buildSqsClient(options: ConnectSettings): SQSClient {
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
export function sqsEndpointName(options: ConnectSettings, region: string | undefined): string {
  if (typeof options.endpoint === "string") return options.endpoint;
  const fromEnv = envVar("AWS_ENDPOINT_URL_SQS") ?? envVar("AWS_ENDPOINT_URL");
  if (fromEnv) return fromEnv;
  return region ? `https://sqs.${region}.amazonaws.com` : "AWS";
}

/** Runs `attempt`, retrying with backoff while SQS is unreachable, until the deadline or signal. */
export function untilSqsAnswers<T>(
  attempt: (signal: AbortSignal) => Promise<T>,
  options: ConnectSettings,
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
