/**
 * Building a DynamoDB client and waiting until its endpoint answers.
 *
 * @module
 */
import {
  DescribeTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
} from "@aws-sdk/client-dynamodb";
import { type BackoffOptions, waitUntilAnswers } from "../core/_backoff.ts";
import { foreignAnswer } from "../core/_answer.ts";
import { isUnreachable } from "../core/_attributes.ts";
import type { DynamoDBSender } from "./_dynamo.ts";
import { EndpointNotDynamoDB, EndpointUnreachable, MissingSetup } from "../core/errors.ts";

export type { BackoffOptions };

/**
 * How `create()` reaches DynamoDB: which endpoint, which region, and how long to wait for it.
 *
 * @example Giving a slow DynamoDB time to start
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *   region: "eu-west-1",
 *   deadlineMs: 60_000,
 *   signal: AbortSignal.timeout(90_000),
 * });
 * ```
 */
export interface ConnectOptions {
  /** A DynamoDB-compatible endpoint (DynamoDB Local, LocalStack); `null`: AWS. @default {null} */
  endpoint?: string | null;
  /**
   * The AWS region. With an endpoint, `AWS_REGION` or `"us-east-1"`; else the SDK resolves it.
   * @default {undefined}
   */
  region?: string;
  /** Aborts the wait for the endpoint. @default {undefined} */
  signal?: AbortSignal;
  /** How long to keep retrying an endpoint that does not answer, in ms: a finite number >= 0. @default {30000} */
  deadlineMs?: number;
  /**
   * How long one request may wait for an answer (5 s for a connection) before it counts as
   * unanswered and is retried (a commit: with its idempotency token), in ms above 0.
   * @default {30000}
   */
  requestTimeoutMs?: number;
  /** The backoff between attempts while the endpoint does not answer. @default {{ minDelayMs: 100, maxDelayMs: 2000, multiplier: 2 }} */
  backoff?: BackoffOptions;
  /**
   * Called after each attempt that found DynamoDB unreachable (refused, reset, timed out, 5xx),
   * before the next wait. What it throws rejects `create()`.
   * @default {undefined}
   */
  onRetry?: (retry: ConnectRetry) => void;
  /**
   * Settings for `new DynamoDBClient` (`maxAttempts`, `logger`, `credentials`, ...); they win
   * over the ones `create()` derives from the options above.
   * @default {{}}
   */
  clientConfig?: ClientConfig;
}

/**
 * One failed attempt to reach DynamoDB, as {@linkcode ConnectOptions.onRetry} reports it.
 *
 * @example Logging each failed attempt
 * ```ts
 * import { type ConnectRetry, DynamoDBStore } from "@harel/dynamodb";
 *
 * const log = (r: ConnectRetry) =>
 *   console.error(
 *     `DynamoDB at ${r.endpoint}: attempt ${r.attempt} failed (${r.error}); ` +
 *       `retrying in ${Math.round(r.delayMs)} ms (${r.waitedMs} of ${r.deadlineMs} ms)`,
 *   );
 * await using store = await DynamoDBStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *   onRetry: log,
 * });
 * ```
 */
export interface ConnectRetry {
  /** The endpoint waited for, as {@linkcode EndpointUnreachable.endpoint} names it. */
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

/**
 * Settings `create()` passes to `new DynamoDBClient`: the common ones typed, any other as given.
 *
 * @example Fewer retries and a logger
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *   clientConfig: { maxAttempts: 2, logger: console },
 * });
 * ```
 */
export interface ClientConfig {
  /** How many times the SDK tries a request (1 = no retries). @default {3} */
  maxAttempts?: number;
  /** Where the SDK logs each command. @default {undefined} */
  logger?: {
    debug(...content: unknown[]): void;
    info(...content: unknown[]): void;
    warn(...content: unknown[]): void;
    error(...content: unknown[]): void;
  };
  /** The SDK's HTTP handler (e.g. a `NodeHttpHandler` with its own agent). @default {undefined} */
  requestHandler?: unknown;
  /** Credentials or a credential provider, instead of the default chain. @default {undefined} */
  credentials?: unknown;
  /** Any other `DynamoDBClientConfig` setting. */
  [setting: string]: unknown;
}

/** The credentials DynamoDB Local and LocalStack accept when the environment has none. */
const DUMMY_CREDENTIALS = { accessKeyId: "test", secretAccessKey: "test" } as const;

/** An environment variable, or undefined when it is unset or the environment may not be read. */
export function envVar(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no --allow-env: behave as if unset
  }
}

/**
 * Builds the client `create()` uses: an endpoint gets the environment's AWS keys when set, else
 * `test`/`test`; no endpoint means AWS with the SDK's default credential chain.
 */
export function buildClient(options: ConnectOptions = {}): DynamoDBClient {
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
  const clientConfig = (options.clientConfig ?? {}) as DynamoDBClientConfig;
  if (endpoint === null) {
    return new DynamoDBClient({ region: options.region, requestHandler, ...clientConfig });
  }
  if (!/^https?:$/.test(URL.parse(endpoint)?.protocol ?? "")) {
    throw new TypeError(
      `endpoint must be an http(s) URL such as "http://127.0.0.1:8000", got ${
        JSON.stringify(endpoint)
      }`,
    );
  }
  const accessKeyId = envVar("AWS_ACCESS_KEY_ID");
  const secretAccessKey = envVar("AWS_SECRET_ACCESS_KEY");
  const sessionToken = envVar("AWS_SESSION_TOKEN");
  const credentials = accessKeyId && secretAccessKey
    ? { accessKeyId, secretAccessKey, sessionToken }
    : DUMMY_CREDENTIALS;
  return new DynamoDBClient({
    endpoint,
    region: options.region ?? envVar("AWS_REGION") ?? "us-east-1",
    credentials,
    requestHandler,
    ...clientConfig,
  });
}

/** The endpoint a client of `options` talks to, for messages (option, SDK's variables, AWS). */
export function endpointInUse(options: ConnectOptions, region: string | undefined): string {
  const configured = options.clientConfig?.endpoint ?? options.endpoint;
  if (typeof configured === "string") return configured;
  if (configured) return "the clientConfig endpoint";
  if (!envVar("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) {
    const fromEnv = envVar("AWS_ENDPOINT_URL_DYNAMODB") ?? envVar("AWS_ENDPOINT_URL");
    if (fromEnv) return fromEnv;
  }
  return region ? `https://dynamodb.${region}.amazonaws.com` : "AWS";
}

const REGION_HINT = "set the `region` option or the AWS_REGION environment variable for AWS, " +
  'or pass `endpoint` (e.g. `endpoint: Deno.env.get("DYNAMODB_ENDPOINT")`) for a local DynamoDB';
const CREDENTIALS_HINT = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN " +
  "for temporary keys), AWS_PROFILE with a shared credentials file, or pass " +
  "`clientConfig.credentials`; for a local DynamoDB pass `endpoint` instead";

/**
 * Resolves the client's region and credentials before any request, so missing setup fails at
 * once with what to set, not in a retry loop that takes it for an endpoint not up yet.
 */
export async function checkSetup(client: DynamoDBClient): Promise<string | undefined> {
  let region: string | undefined;
  try {
    region = await client.config.region();
  } catch (cause) {
    if (isPermissionError(cause)) throw cause; // says which permission; not missing setup
    throw new MissingSetup("region", `no AWS region: ${REGION_HINT}`, { cause });
  }
  if (!region) throw new MissingSetup("region", `no AWS region: ${REGION_HINT}`);
  try {
    await client.config.credentials();
  } catch (cause) {
    if (isPermissionError(cause)) throw cause;
    throw new MissingSetup("credentials", `no AWS credentials: ${CREDENTIALS_HINT}`, { cause });
  }
  return region;
}

function isPermissionError(error: unknown): boolean {
  return error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied;
}

/**
 * Runs `attempt` until it succeeds, retrying while the endpoint is unreachable (a 5xx too),
 * until the deadline or the signal. An answer that is not DynamoDB's stops the wait at once.
 */
export function retryUntilReachable<T>(
  attempt: () => Promise<T>,
  options: ConnectOptions = {},
  region?: string,
): Promise<T> {
  const endpoint = endpointInUse(options, region);
  return waitUntilAnswers(
    (until) => abortable(attempt(), until),
    options,
    endpoint,
    isUnreachable,
    (waitedMs, cause) => new EndpointUnreachable(endpoint, waitedMs, { cause }),
    (error) => {
      const answer = foreignAnswer(error);
      return answer ? new EndpointNotDynamoDB(endpoint, answer, { cause: error }) : error;
    },
  );
}

/**
 * Waits as `create()` does until DynamoDB answers a `DescribeTable` of `tableName` (the CLI's
 * client). Any answer of DynamoDB's counts, a missing table or a denied action too.
 */
export async function awaitAnswer(
  client: DynamoDBSender,
  tableName: string,
  options: ConnectOptions = {},
  region?: string,
): Promise<void> {
  await retryUntilReachable(
    async () => {
      try {
        await client.send(new DescribeTableCommand({ TableName: tableName }));
      } catch (error) {
        if (isUnreachable(error) || foreignAnswer(error)) throw error;
      }
    },
    options,
    region,
  );
}

/** `work`, unless the signal aborts first (then its reason). */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Clients built by {@linkcode connectStore}, until the store made on them claims them. */
const unclaimed = new WeakSet<object>();

/** The client to destroy on close when `connectStore` built it (once), else null. */
export function claimClient(client: DynamoDBSender): DynamoDBClient | null {
  return unclaimed.delete(client) ? client as DynamoDBClient : null;
}

/**
 * `create()` of both stores: builds a client and a store owning it, and retries `ready` until
 * DynamoDB answers. The client is destroyed on failure.
 */
export async function connectStore<T>(
  options: ConnectOptions,
  make: (client: DynamoDBClient) => T,
  ready: (store: T) => Promise<void>,
): Promise<T> {
  const client = buildClient(options);
  unclaimed.add(client);
  try {
    const store = make(client);
    const region = await checkSetup(client);
    await retryUntilReachable(() => ready(store), options, region);
    return store;
  } catch (error) {
    client.destroy();
    throw error;
  } finally {
    unclaimed.delete(client);
  }
}
