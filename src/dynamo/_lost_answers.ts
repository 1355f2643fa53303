/**
 * How a write tells its own earlier copy from another writer's work when an answer was lost.
 *
 * The SDK re-sends a request after a transport error, and Deno's HTTP client re-sends one on its
 * own when a reused keep-alive connection breaks before the answer; the second copy then finds
 * the first one's effect. So a write makes its copies recognisable (a `ClientRequestToken`, or a
 * `write_id` left on the item) and notes that a copy was sent again.
 *
 * @module
 */
import {
  type CancellationReason,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from "@aws-sdk/client-dynamodb";
import { backoffDelay, sleep } from "../core/_backoff.ts";
import { isNamed, isUnreachable, type Item } from "./_dynamo.ts";
import type { DynamoDBSender } from "./_dynamo.ts";
import { OutcomeUnknown, StoreClosed } from "../core/errors.ts";

/** A fresh id for one write: 128 random bits as 22 base64url characters. */
export function writeId(): string {
  return crypto.getRandomValues(new Uint8Array(16)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}

/** An SDK command's own middleware stack, as far as {@linkcode Attempts} uses it. */
interface Stacked {
  middlewareStack: {
    add(
      middleware: (
        next: (args: unknown) => Promise<unknown>,
      ) => (args: unknown) => Promise<unknown>,
      options: { step: "deserialize"; priority: "high" },
    ): void;
  };
}

/**
 * Whether an attempt that failed may have been applied: its answer was lost (no HTTP status:
 * a broken connection, a timeout) or DynamoDB failed inside (5xx). A 4xx answer (a lost
 * condition, a throttle) and a refused connection applied nothing.
 */
function mayHaveApplied(error: unknown): boolean {
  const e = error as { code?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined) return status >= 500;
  return e?.code !== "ECONNREFUSED";
}

/** Whether Deno's `node:http` client re-sent the request of this answer (`_retrying`). */
function wasResent(answer: unknown): boolean {
  const body = (answer as { body?: { req?: { _retrying?: unknown } } } | undefined)?.body;
  return body?.req?._retrying === true;
}

/**
 * Whether a refusal came to a copy sent after an earlier one (an SDK attempt, or Deno's own
 * re-send) that may have been applied: for a send no {@linkcode Attempts} watched.
 */
function refusedAfterRetry(error: unknown): boolean {
  const e = error as { $metadata?: { attempts?: number }; $response?: unknown };
  return (e.$metadata?.attempts ?? 1) > 1 || wasResent(e.$response);
}

/**
 * The SDK's attempts at one command, recorded by a middleware inside its retry loop, and whether
 * Deno's HTTP client re-sent one. Without the SDK, only `$metadata.attempts` counts.
 */
export class Attempts {
  /** Per attempt so far: whether it failed in a way that may have applied it. */
  readonly #unknown: boolean[] = [];
  /** Whether an attempt was sent twice by the HTTP client (the first copy may have applied). */
  #resent = false;

  /** Starts recording the attempts of `command` (sent after this, once or more). */
  constructor(command: object) {
    // A client that is not the SDK's (anything with send()) never runs the middleware.
    (command as Partial<Stacked>).middlewareStack?.add((next) => async (args) => {
      try {
        const result = await next(args);
        this.#resent ||= wasResent((result as { response?: unknown }).response);
        this.#unknown.push(false);
        return result;
      } catch (error) {
        this.#resent ||= wasResent((error as { $response?: unknown }).$response);
        this.#unknown.push(mayHaveApplied(error));
        throw error;
      }
    }, { step: "deserialize", priority: "high" });
  }

  /** Whether a copy sent before the one that answered (`answer`) may have been applied. */
  earlierMayHaveApplied(answer: unknown): boolean {
    if (this.#resent) return true;
    if (this.#unknown.length > 0) return this.#unknown.slice(0, -1).some(Boolean);
    const attempts = (answer as { $metadata?: { attempts?: number } } | undefined)?.$metadata
      ?.attempts;
    return (attempts ?? 1) > 1;
  }

  /** Whether any attempt so far, the last included, may have been applied. */
  anyMayHaveApplied(): boolean {
    return this.#resent || this.#unknown.length === 0 || this.#unknown.some(Boolean);
  }
}

/** What a write is, for an {@linkcode OutcomeUnknown}: the method and the key it wrote. */
export interface WriteName {
  operation: string;
  key: string;
}

/** How often a transaction is re-sent: with the same token while its answer is lost. */
export interface Resends {
  /** Re-sends with the same token after the SDK gave up on an answer. */
  lost: number;
  /** Sends with a new token after DynamoDB cancelled it for a transaction conflict. */
  conflicts: number;
}

/** What a transaction does when its answer is lost: how often it is re-sent, and what it says then. */
export interface Unanswered {
  /** Re-sends with the same token after the SDK gave up on an answer. */
  lost: number;
  /** The error for an outcome that stays unknown (`resends`: how many were made). */
  unknown(cause: unknown, resends: number): OutcomeUnknown;
  /**
   * Whether every send that got no answer counts as maybe applied, a refused connection
   * included (a commit: its caller reads back after any answer it did not get), so no
   * middleware watches the SDK's attempts.
   */
  assumeApplied?: boolean;
  /** Called before each send (a commit counts its sends on its span). */
  onSend?(): void;
}

/** The {@linkcode Unanswered} of a write, saying what stays certain when its outcome is unknown. */
export function unansweredWrite(write: WriteName, lost: number, known: string): Unanswered {
  return {
    lost,
    unknown: (cause, resends) =>
      new OutcomeUnknown(
        write.operation,
        write.key,
        `no answer from DynamoDB (${resends} re-sends with the same token): it may or may not have been applied; ${known}`,
        { cause },
      ),
  };
}

/**
 * Sends one transaction with an idempotency token, re-sent with the same token while its answer
 * is lost (DynamoDB answers a copy of an applied one with success). Out of re-sends,
 * `unanswered.unknown`; any other error is thrown as it is.
 */
export async function sendTransaction(
  client: DynamoDBSender,
  items: TransactWriteItem[],
  unanswered: Unanswered,
): Promise<void> {
  const token = crypto.randomUUID();
  let applying = false; // whether a send so far may have been applied
  for (let resend = 0;; resend++) {
    const command = new TransactWriteItemsCommand({
      TransactItems: items,
      ClientRequestToken: token,
    });
    const attempts = unanswered.assumeApplied ? undefined : new Attempts(command);
    try {
      unanswered.onSend?.();
      await client.send(command);
      return;
    } catch (error) {
      if (isNamed(error, "TransactionCanceledException")) throw error;
      // Closed before this send went out: only an earlier one may have been applied.
      const closed = error instanceof StoreClosed;
      const noAnswer = isNamed(error, "TransactionInProgressException") || isUnreachable(error);
      if (!closed && !noAnswer) {
        // Refused (a throttle, a validation error): this copy applied nothing, but one before
        // it — an earlier re-send, or an attempt the SDK made before this answer — may have.
        const earlier = attempts?.earlierMayHaveApplied(error) ?? refusedAfterRetry(error);
        if (applying || earlier) throw unanswered.unknown(error, resend);
        throw error;
      }
      if (!closed) applying ||= attempts?.anyMayHaveApplied() ?? true;
      if (!applying) throw error; // nothing of it got through
      if (closed || resend >= unanswered.lost) throw unanswered.unknown(error, resend);
      await sleep(backoffDelay(resend, { minDelayMs: 200, maxDelayMs: 2000 }));
    }
  }
}

/**
 * {@linkcode transactItems} of one item: `applied`, or not with the item found (when the write
 * asks for `ALL_OLD`; `unreadable` when the SDK could not read it back).
 */
export async function transactOne(
  client: DynamoDBSender,
  item: TransactWriteItem,
  write: WriteName,
  resends: Resends,
  known: string,
): Promise<{ applied: true } | { applied: false; found: Item | undefined; unreadable: boolean }> {
  const done = await transactItems(client, [item], write, resends, known);
  if (done.applied) return done;
  return { applied: false, found: done.reasons[0]?.Item, unreadable: done.unreadable };
}

/**
 * A transaction of several items ({@linkcode sendTransaction}), sent again with a new token while
 * DynamoDB cancels it for a conflict with another writer: `applied`, or not because a condition
 * failed, with each item's reason (in the order of `items`).
 */
export async function transactItems(
  client: DynamoDBSender,
  items: TransactWriteItem[],
  write: WriteName,
  resends: Resends,
  known: string,
): Promise<
  { applied: true } | { applied: false; reasons: CancellationReason[]; unreadable: boolean }
> {
  for (let conflict = 0;; conflict++) {
    try {
      await sendTransaction(client, items, unansweredWrite(write, resends.lost, known));
      return { applied: true };
    } catch (error) {
      if (!isNamed(error, "TransactionCanceledException")) {
        // The SDK's parser throws a TypeError on a returned map key named `__proto__`.
        if (error instanceof TypeError && isBadRequest(error)) {
          return { applied: false, reasons: [], unreadable: true };
        }
        throw error;
      }
      const reasons = (error as { CancellationReasons?: CancellationReason[] })
        .CancellationReasons ?? [];
      if (reasons.some((reason) => reason.Code === "ConditionalCheckFailed")) {
        return { applied: false, reasons, unreadable: false };
      }
      const conflicted = reasons.some((reason) => reason.Code === "TransactionConflict");
      if (!conflicted || conflict >= resends.conflicts) throw error;
      await sleep(backoffDelay(conflict, { minDelayMs: 20, maxDelayMs: 1000 }));
    }
  }
}

/** An error that came with a 400 answer: DynamoDB refused the request, nothing was applied. */
function isBadRequest(error: unknown): boolean {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 400;
}

/**
 * `client`, re-sending a write refused with `TransactionConflictException` (one of our
 * transactions held the item; the SDK does not retry it). Refused, it was not applied.
 */
export function retryingConflicts(client: DynamoDBSender, retries: number): DynamoDBSender {
  const send = client.send.bind(client) as (command: unknown) => Promise<unknown>;
  return {
    send: (async (command: unknown) => {
      for (let conflict = 0;; conflict++) {
        try {
          return await send(command);
        } catch (error) {
          if (!isNamed(error, "TransactionConflictException") || conflict >= retries) throw error;
          await sleep(backoffDelay(conflict, { minDelayMs: 20, maxDelayMs: 1000 }));
        }
      }
    }) as DynamoDBSender["send"],
  };
}
