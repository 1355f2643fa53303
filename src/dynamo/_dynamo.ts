// The DynamoDB plumbing every module shares: attribute values and error classification (from
// _attributes.ts), paging, batches with their unprocessed retries, and one retry loop (shaped
// like jsr:@std/async's `retry`, which cannot be reached from here).
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  type DynamoDBClient,
  type KeysAndAttributes,
  ScanCommand,
  type ScanCommandInput,
  type Update,
  UpdateItemCommand,
  type WriteRequest,
} from "@aws-sdk/client-dynamodb";
import { backoffDelay, type BackoffOptions, sleep } from "../core/_backoff.ts";
import { isNamed, type Item } from "../core/_attributes.ts";

export { isNamed, isUnreachable, type Item, N, S } from "../core/_attributes.ts";
export { eachConcurrently } from "../core/_lanes.ts";

/** What the stores need of a client: its `send()` (they check for it at run time). */
export type DynamoDBSender = Pick<DynamoDBClient, "send">;

/** How {@linkcode retry} and {@linkcode repeat} go on. */
export interface RetryOptions {
  /** Whether an error is worth another attempt; others are thrown at once. @default {() => true} */
  isRetriable?: (error: unknown) => boolean;
  /** Attempts in all, the first included; the last one's error is thrown. @default {Infinity} */
  maxAttempts?: number;
  /** The waits between attempts. @default {{}} (100 ms doubling up to 2 s) */
  backoff?: BackoffOptions;
  /** Ends the waits: rejects with its reason. */
  signal?: AbortSignal;
}

/**
 * Calls `fn` until it resolves, waiting with backoff after each retriable failure; the first
 * error that is not retriable, or the last attempt's error, is thrown.
 */
export async function retry<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const { isRetriable = () => true, maxAttempts = Infinity, backoff, signal } = options;
  for (let attempt = 0;; attempt++) {
    signal?.throwIfAborted();
    try {
      return await fn(attempt);
    } catch (error) {
      if (attempt + 1 >= maxAttempts || !isRetriable(error)) throw error;
    }
    await sleep(backoffDelay(attempt, backoff), signal);
  }
}

/**
 * Calls `step` until it says it is done, waiting with backoff between calls: for polling
 * (a table turning ACTIVE) and for sending what a batch left unprocessed.
 */
export async function repeat(
  step: () => Promise<boolean>,
  backoff?: BackoffOptions,
): Promise<void> {
  for (let attempt = 0; !(await step()); attempt++) {
    await sleep(backoffDelay(attempt, backoff));
  }
}

/** The waits before re-sending what a batch call left unprocessed (throttling). */
const UNPROCESSED_BACKOFF: BackoffOptions = { minDelayMs: 25 };

/**
 * Pages of a Scan or Query: `fetch` sends one page from `start`; pages are yielded until
 * DynamoDB sends no `LastEvaluatedKey` (or the caller stops iterating).
 */
export async function* pages<P extends { Items?: Item[]; LastEvaluatedKey?: Item }>(
  fetch: (start: Item | undefined) => Promise<P>,
  start?: Item,
): AsyncGenerator<P, void, undefined> {
  do {
    const page = await fetch(start);
    yield page;
    start = page.LastEvaluatedKey;
  } while (start);
}

/**
 * One BatchGetItem, with what comes back in `UnprocessedKeys` sent again (with backoff)
 * until nothing is left; `take` sees the responses of each call.
 */
export async function batchGet(
  client: DynamoDBSender,
  request: Record<string, KeysAndAttributes>,
  take: (responses: Record<string, Item[]>) => void,
): Promise<void> {
  let pending = request;
  await repeat(async () => {
    const result = await client.send(new BatchGetItemCommand({ RequestItems: pending }));
    take(result.Responses ?? {});
    pending = result.UnprocessedKeys ?? {};
    return Object.keys(pending).length === 0;
  }, UNPROCESSED_BACKOFF);
}

/**
 * One BatchWriteItem of `requests` (at most 25) on `table`, with what comes back in
 * `UnprocessedItems` sent again (with backoff) until nothing is left.
 */
export async function batchWrite(
  client: DynamoDBSender,
  table: string,
  requests: WriteRequest[],
): Promise<void> {
  let pending = requests;
  await repeat(async () => {
    const result = await client.send(
      new BatchWriteItemCommand({ RequestItems: { [table]: pending } }),
    );
    pending = result.UnprocessedItems?.[table] ?? [];
    return pending.length === 0;
  }, UNPROCESSED_BACKOFF);
}

/** `items` cut into runs of at most `size` (batch limits). */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const runs: T[][] = [];
  for (let i = 0; i < items.length; i += size) runs.push(items.slice(i, i + size));
  return runs;
}

/** Scans the whole table, handing each page to `take` (a page is dropped before the next). */
export async function scanAll(
  client: DynamoDBSender,
  input: ScanCommandInput,
  take: (items: Item[]) => void,
): Promise<void> {
  const scan = (start: Item | undefined) =>
    client.send(new ScanCommand({ ...input, ExclusiveStartKey: start }));
  for await (const page of pages(scan)) take(page.Items ?? []);
}

/** Sends a conditional update: false when its condition failed (the row changed meanwhile). */
export async function conditionalUpdate(client: DynamoDBSender, input: Update): Promise<boolean> {
  return (await updateIfMatch(client, input)) !== null;
}

/**
 * Sends a conditional update: the attributes it asked for (`ReturnValues`; none: `{}`), or null
 * when its condition failed.
 */
export async function updateIfMatch(client: DynamoDBSender, input: Update): Promise<Item | null> {
  try {
    return (await client.send(new UpdateItemCommand(input))).Attributes ?? {};
  } catch (error) {
    if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
    return null;
  }
}
