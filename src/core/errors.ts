/**
 * The named errors this module throws.
 *
 * @module
 */
import { type Answer, describeAnswer, foreignAnswer } from "./_answer.ts";

/**
 * A commit lost its optimistic-concurrency check: the stored execution is not at
 * the version the caller loaded. Nothing of the losing commit was written.
 *
 * @example Telling a lost race from a fault
 * ```ts
 * import { StoreConflict } from "@harel/dynamodb";
 *
 * const error: unknown = new StoreConflict("exe-1", 3, 4);
 * if (error instanceof StoreConflict) {
 *   console.log(`${error.executionId}: expected v${error.expected}, found v${error.found}`);
 * }
 * ```
 */
export class StoreConflict extends Error {
  /** Always `"StoreConflict"`. */
  override name = "StoreConflict";
  /** The id of the execution whose commit lost. */
  readonly executionId: string;
  /** The version the commit expected to replace (0 = an insert). */
  readonly expected: number;
  /** The stored version, or `null` when the item is absent. */
  readonly found: number | null;

  /** Builds the error for a lost commit (`found` null: no stored item). */
  constructor(
    executionId: string,
    expected: number,
    found: number | null,
    options?: ErrorOptions,
  ) {
    super(
      `execution ${JSON.stringify(executionId)}: expected version ${expected}, found ${
        found === null ? "no stored item" : `version ${found}`
      }`,
      options,
    );
    this.executionId = executionId;
    this.expected = expected;
    this.found = found;
  }
}

/**
 * A write may or may not have been applied: an answer was lost, and a re-sent copy's answer does
 * not say what the first did. The message says what is certain; read the key back for the rest.
 *
 * @example Telling an unknown outcome from a refusal
 * ```ts
 * import assert from "node:assert/strict";
 * import { OutcomeUnknown } from "@harel/dynamodb";
 *
 * const error: unknown = new OutcomeUnknown("hdel", "session:abc", "the fields are gone now");
 * if (error instanceof OutcomeUnknown) {
 *   assert.equal(error.operation, "hdel");
 *   assert.equal(error.key, "session:abc");
 *   assert.match(error.message, /hdel "session:abc": the fields are gone now/);
 * }
 * ```
 */
export class OutcomeUnknown extends Error {
  /** Always `"OutcomeUnknown"` (a subclass names itself). */
  override name = "OutcomeUnknown";
  /** The method whose outcome is unknown, e.g. `"hset"`, `"deleteTimer"`, `"commit"`. */
  readonly operation: string;
  /** The key it wrote: the state key, the execution id, or `executionId/path` for a timer. */
  readonly key: string;

  /** Builds the error; `detail` says what is known and what to do. */
  constructor(operation: string, key: string, detail: string, options?: ErrorOptions) {
    super(`${operation} ${JSON.stringify(key)}: ${detail}`, options);
    this.operation = operation;
    this.key = key;
  }
}

/**
 * A commit may or may not have been applied: no answer came back, also after re-sends with the
 * same idempotency token. Read the execution back. An {@linkcode OutcomeUnknown} of `"commit"`.
 *
 * @example Reading back after an unknown outcome
 * ```ts
 * import { CommitOutcomeUnknown } from "@harel/dynamodb";
 *
 * const error: unknown = new CommitOutcomeUnknown("exe-1", 4);
 * if (error instanceof CommitOutcomeUnknown) {
 *   console.log(`reload ${error.executionId}: applied if it is at version ${error.attemptedVersion}`);
 * }
 * ```
 */
export class CommitOutcomeUnknown extends OutcomeUnknown {
  /** Always `"CommitOutcomeUnknown"`. */
  override name = "CommitOutcomeUnknown";
  /** The id of the execution whose commit has an unknown outcome. */
  readonly executionId: string;
  /** The version the execution holds if the commit was applied. */
  readonly attemptedVersion: number;

  /** Builds the error; `options.cause` is the last transport error. */
  constructor(executionId: string, attemptedVersion: number, options?: ErrorOptions) {
    super(
      "commit",
      executionId,
      `the commit to version ${attemptedVersion} may or may not have been applied (no answer from DynamoDB); load the execution to find out`,
      options,
    );
    this.executionId = executionId;
    this.attemptedVersion = attemptedVersion;
  }
}

/**
 * A list cursor that this module did not produce, or produced for another listing.
 *
 * @example Handling a forged cursor
 * ```ts
 * import assert from "node:assert/strict";
 * import { InvalidCursor } from "@harel/dynamodb";
 *
 * const error: unknown = new InvalidCursor("not base64url");
 * assert.ok(error instanceof TypeError);
 * assert.equal(error.name, "InvalidCursor");
 * ```
 */
export class InvalidCursor extends TypeError {
  /** Always `"InvalidCursor"`. */
  override name = "InvalidCursor";

  /** Builds the error; `options.cause` is the decoding error. */
  constructor(reason: string, options?: ErrorOptions) {
    super(`invalid cursor: ${reason}; pass null or a nextCursor returned by this store`, options);
  }
}

/**
 * `create()` gave up: DynamoDB did not answer before the deadline (or the signal aborted the
 * wait). The last connection error is the `cause`; the message says what to do.
 *
 * @example What the message says
 * ```ts
 * import assert from "node:assert/strict";
 * import { EndpointUnreachable } from "@harel/dynamodb";
 *
 * const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8000"), {
 *   code: "ECONNREFUSED",
 * });
 * const error = new EndpointUnreachable("http://127.0.0.1:8000", 30_000, { cause: refused });
 * assert.equal(error.endpoint, "http://127.0.0.1:8000");
 * assert.match(error.message, /did not answer within 30000 ms \(last error: connect ECONNREFUSED/);
 * assert.match(error.message, /start one with `deno task dynamodb`/);
 * assert.match(error.message, /DYNAMODB_ENDPOINT/);
 * ```
 */
export class EndpointUnreachable extends Error {
  /** Always `"EndpointUnreachable"`. */
  override name = "EndpointUnreachable";
  /** The endpoint that did not answer (the option, `AWS_ENDPOINT_URL_DYNAMODB`, or AWS's). */
  readonly endpoint: string;
  /** How long `create()` waited, in ms. */
  readonly waitedMs: number;

  /** Builds the error; `endpoint` `null` is AWS (region unknown). */
  constructor(endpoint: string | null, waitedMs: number, options?: ErrorOptions) {
    const where = endpoint ?? "AWS";
    const last = options?.cause === undefined
      ? ""
      : ` (last error: ${describeCause(options.cause)})`;
    super(
      `DynamoDB at ${where} did not answer within ${waitedMs} ms${last}. ${hint(where)}`,
      options,
    );
    this.endpoint = where;
    this.waitedMs = waitedMs;
  }
}

/** What to do about an endpoint that does not answer: AWS's own, or a local one. */
function hint(endpoint: string): string {
  const start = "start one with `deno task dynamodb` (in a clone of @harel/dynamodb; it prints " +
    "the DYNAMODB_ENDPOINT to use)";
  const where = "the `endpoint` option, --endpoint or DYNAMODB_ENDPOINT";
  return endpoint === "AWS" || /\.amazonaws\.com(:\d+)?\/?$/.test(endpoint)
    ? `Check the network and the region (AWS_REGION). For a local DynamoDB instead, ${start} and pass its endpoint (${where}).`
    : `Is DynamoDB running there? ${start[0]!.toUpperCase()}${
      start.slice(1)
    }, or check the endpoint (${where}).`;
}

/** A short description of the last error of a wait: a connection error, or what answered. */
function describeCause(cause: unknown): string {
  const answer = foreignAnswer(cause);
  if (answer) return `${describeAnswer(answer)}, which is not DynamoDB`;
  const text = cause instanceof Error ? cause.message || cause.name : String(cause);
  return text.split("\n")[0]!.trim(); // the SDK appends advice lines of its own
}

/**
 * Something other than DynamoDB answered at the endpoint (a web server, a proxy): waiting will
 * not change that, so `create()` stops at once. The SDK's parse error is the `cause`.
 *
 * @example What the message says
 * ```ts
 * import assert from "node:assert/strict";
 * import { EndpointNotDynamoDB } from "@harel/dynamodb";
 *
 * const error = new EndpointNotDynamoDB("http://127.0.0.1:8080", {
 *   status: 200,
 *   contentType: "text/html",
 *   server: "nginx",
 *   body: "<html><hea",
 * });
 * assert.equal(error.status, 200);
 * assert.match(error.message, /answered HTTP 200 text\/html from "nginx"/);
 * assert.match(error.message, /not DynamoDB/);
 * ```
 */
export class EndpointNotDynamoDB extends Error {
  /** Always `"EndpointNotDynamoDB"`. */
  override name = "EndpointNotDynamoDB";
  /** The endpoint that answered. */
  readonly endpoint: string;
  /** The answer's HTTP status. */
  readonly status: number;
  /** The answer's `content-type`, or `null` when it had none. */
  readonly contentType: string | null;
  /** The answer's `server` header, or `null` when it had none. */
  readonly server: string | null;

  /** Builds the error from the answer's status, headers and start of body. */
  constructor(
    endpoint: string,
    answer: {
      status: number;
      contentType?: string | null;
      server?: string | null;
      body?: string | null;
    },
    options?: ErrorOptions,
  ) {
    const full: Answer = {
      status: answer.status,
      contentType: answer.contentType ?? null,
      server: answer.server ?? null,
      body: answer.body ?? null,
    };
    super(
      `${endpoint} answered ${describeAnswer(full)}: that is not DynamoDB, which answers JSON ` +
        "(application/x-amz-json-1.0). A web server, a proxy or another service listens there: " +
        "check the endpoint (the `endpoint` option, --endpoint or DYNAMODB_ENDPOINT) and its port.",
      options,
    );
    this.endpoint = endpoint;
    this.status = full.status;
    this.contentType = full.contentType;
    this.server = full.server;
  }
}

/**
 * `create()` cannot start: without an endpoint it needs an AWS region and credentials, and one
 * is missing. Thrown before any request; the message says what to set.
 *
 * @example Telling missing setup from an unreachable DynamoDB
 * ```ts
 * import { MissingSetup } from "@harel/dynamodb";
 *
 * const error: unknown = new MissingSetup("region", "no AWS region: set AWS_REGION");
 * if (error instanceof MissingSetup) console.log(error.missing, error.message);
 * ```
 */
export class MissingSetup extends TypeError {
  /** Always `"MissingSetup"`. */
  override name = "MissingSetup";
  /** What is missing. */
  readonly missing: "region" | "credentials";

  /** Builds the error; `message` says what to set. */
  constructor(missing: "region" | "credentials", message: string, options?: ErrorOptions) {
    super(message, options);
    this.missing = missing;
  }
}

/**
 * Options of {@linkcode StoreClosed}.
 *
 * @example The error of a call still running at close()
 * ```ts
 * import assert from "node:assert/strict";
 * import { StoreClosed, type StoreClosedOptions } from "@harel/dynamodb";
 *
 * const options: StoreClosedOptions = { inFlight: true };
 * const error = new StoreClosed("DynamoDBStore", "its Scan request", options);
 * assert.match(error.message, /await it before close\(\)/);
 * ```
 */
export interface StoreClosedOptions extends ErrorOptions {
  /** The refused request belongs to a call still running at `close()`. @default {false} */
  inFlight?: boolean;
}

/**
 * The store was closed (`close()` or `await using`) and refuses every call after that. A call
 * still running at `close()` (`inFlight`: a pass or a read not awaited) says to await it first.
 *
 * @example Telling a closed store from other failures
 * ```ts
 * import { newExecution, StoreClosed } from "@harel/dynamodb";
 * import { MemoryStore } from "@harel/dynamodb/testing";
 *
 * const store = new MemoryStore();
 * await store.close();
 * try {
 *   await store.save(newExecution({ definition_id: "d" }));
 * } catch (error) {
 *   if (error instanceof StoreClosed) console.log(error.inFlight, error.message);
 * }
 * ```
 */
export class StoreClosed extends Error {
  /** Always `"StoreClosed"`. */
  override name = "StoreClosed";
  /** The store's class name, e.g. `"DynamoDBStore"`. */
  readonly store: string;
  /** What was refused: the method called, or (`inFlight`) the request or step that came after `close()`. */
  readonly method: string;
  /** Whether the refused call was begun before `close()` and still running, rather than made after it. */
  readonly inFlight: boolean;

  /** Builds the error for a call after `close()`, or (`inFlight`) one still running at it. */
  constructor(store: string, method: string, options?: StoreClosedOptions) {
    const inFlight = options?.inFlight ?? false;
    super(
      inFlight
        ? `${store}: a call was still running when the store was closed: await it before close() (refused: ${method})`
        : `${store}.${method}() was called after the store was closed; make a new store`,
      options,
    );
    this.store = store;
    this.method = method;
    this.inFlight = inFlight;
  }
}

/**
 * A queue row that cannot be read (not JSON, a missing attribute). A relay pass reports it to
 * `onError` and dead-letters it instead of failing: every other entry is still delivered.
 *
 * @example Telling unreadable rows from failed deliveries
 * ```ts
 * import { relayOutbox, UnreadableEntry } from "@harel/dynamodb";
 * import { MemoryStore } from "@harel/dynamodb/testing";
 *
 * await relayOutbox(new MemoryStore(), async () => {}, {
 *   onError: (error) => {
 *     if (error instanceof UnreadableEntry) console.error(`set aside: ${error.kind} ${error.key}`);
 *   },
 * });
 * ```
 */
export class UnreadableEntry extends Error {
  /** Always `"UnreadableEntry"`. */
  override name = "UnreadableEntry";
  /** The queue: `"outbox"`, `"spawns"` or `"timers"`. */
  readonly kind: string;
  /** The row's key: its seq (or timer). */
  readonly key: unknown;

  /** Builds the error; `reason` says why the row cannot be read. */
  constructor(kind: string, key: unknown, reason: string) {
    super(
      `${kind} ${JSON.stringify(key)} cannot be read and was set aside (dead-lettered): ${reason}`,
    );
    this.kind = kind;
    this.key = key;
  }
}

/**
 * An execution item whose document cannot be read (its `data` missing, not JSON, or not an
 * object): `load`, `loadForEvent` and `inspectExecution` throw it. A listing lists such an item
 * apart instead (`ListPage.unreadable`).
 *
 * @example What an operator tool shows instead of a document
 * ```ts
 * import assert from "node:assert/strict";
 * import { UnreadableExecution } from "@harel/dynamodb";
 *
 * const error: unknown = new UnreadableExecution("exe-1", "its data is not JSON", "{oops");
 * if (error instanceof UnreadableExecution) {
 *   assert.equal(error.executionId, "exe-1");
 *   assert.match(error.message, /execution "exe-1" cannot be read: its data is not JSON/);
 * }
 * ```
 */
export class UnreadableExecution extends Error {
  /** Always `"UnreadableExecution"`. */
  override name = "UnreadableExecution";
  /** The item's key. */
  readonly executionId: string;
  /** Why its document cannot be read. */
  readonly reason: string;
  /** Its `data` as stored, or null when it has none (or it is not a string). */
  readonly data: string | null;

  /** Builds the error; `data` is as stored, or null. */
  constructor(executionId: string, reason: string, data: string | null, options?: ErrorOptions) {
    super(`execution ${JSON.stringify(executionId)} cannot be read: ${reason}`, options);
    this.executionId = executionId;
    this.reason = reason;
    this.data = data;
  }
}

/** One item of a cancelled commit: its role in the transaction and DynamoDB's reason code. */
export interface CancelledItem {
  /** What the item writes: `"execution"`, `"outbox"`, `"spawn"`, `"processed"`, `"timer"` or `"trace"`. */
  role: string;
  /** DynamoDB's cancellation code, e.g. `"ConditionalCheckFailed"`, `"TransactionConflict"`. */
  code: string;
  /** DynamoDB's message for it, when it gave one. */
  message?: string;
}

/**
 * DynamoDB cancelled a commit for a reason that is not a lost race and that retrying did not
 * clear: nothing was written. `items` names each failing item's role and code.
 *
 * @example Reading why a commit was cancelled
 * ```ts
 * import assert from "node:assert/strict";
 * import { CommitCancelled } from "@harel/dynamodb";
 *
 * const error = new CommitCancelled("exe-1", [
 *   { role: "execution", code: "None" },
 *   { role: "outbox", code: "ValidationError", message: "item too large" },
 * ]);
 * assert.deepEqual(error.items, [
 *   { role: "outbox", code: "ValidationError", message: "item too large" },
 * ]);
 * assert.match(error.message, /outbox: ValidationError \(item too large\)/);
 * ```
 */
export class CommitCancelled extends Error {
  /** Always `"CommitCancelled"`. */
  override name = "CommitCancelled";
  /** The id of the execution whose commit was cancelled. */
  readonly executionId: string;
  /** The items that failed, each with its role and DynamoDB's code. */
  readonly items: CancelledItem[];

  /** Builds the error from every item in order (those with code `"None"` are dropped). */
  constructor(executionId: string, items: CancelledItem[], options?: ErrorOptions) {
    const failed = items.filter((item) => item.code !== "None");
    super(
      `commit of execution ${JSON.stringify(executionId)} was cancelled by DynamoDB: ${
        failed.map((item) =>
          `${item.role}: ${item.code}${item.message ? ` (${item.message})` : ""}`
        )
          .join("; ")
      }`,
      options,
    );
    this.executionId = executionId;
    this.items = failed;
  }
}

/**
 * A state-store write lost the race to other writers of its key too many times in a row:
 * nothing of this call was written. Rare outside a storm of writers on one key; try again.
 *
 * @example Telling contention from other failures
 * ```ts
 * import assert from "node:assert/strict";
 * import { WriteContention } from "@harel/dynamodb";
 *
 * const error = new WriteContention("hset", "session:abc", 20);
 * assert.equal(error.key, "session:abc");
 * assert.equal(error.attempts, 20);
 * assert.match(error.message, /lost 20 races in a row/);
 * ```
 */
export class WriteContention extends Error {
  /** Always `"WriteContention"`. */
  override name = "WriteContention";
  /** The method that gave up, e.g. `"hset"`. */
  readonly method: string;
  /** The key it could not write. */
  readonly key: string;
  /** How many conditional writes it tried. */
  readonly attempts: number;

  /** Builds the error for a write that kept losing races. */
  constructor(method: string, key: string, attempts: number) {
    super(`${method} ${JSON.stringify(key)}: lost ${attempts} races in a row to other writers`);
    this.method = method;
    this.key = key;
    this.attempts = attempts;
  }
}
