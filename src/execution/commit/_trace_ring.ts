// Each execution's trace ring as this store sees it: where the ring ends (read, or cached
// from this store's own commits), steps appended outside commits, and the whole ring read
// back. The ring's layout is in _layout.ts; the items a commit writes in _transaction.ts.
import { type CancellationReason, QueryCommand } from "@aws-sdk/client-dynamodb";
import { backoffDelay, sleep } from "../../core/_backoff.ts";
import { isNamed, type Item, N, pages, S } from "../../dynamo/_dynamo.ts";
import { EXECUTION, executionKey, traceStepFromItem } from "../../core/_layout.ts";
import { VersionCache } from "../../core/_lru.ts";
import { sendTransaction, unansweredWrite } from "../../dynamo/_lost_answers.ts";
import {
  TRACE_END,
  type TraceHead,
  traceItems,
  tracePutAt,
  type TxContext,
} from "./_transaction.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";

/** The trace rings of one store's executions, and where each ends. */
export class TraceRing {
  // Where each execution's trace ring ends, as of the version this store last committed it
  // at: a commit from that version can trust it (anyone else's commit moved the version).
  readonly #heads = new VersionCache<number>(); // id → the ring's last index

  constructor(
    readonly client: DynamoDBSender,
    readonly tx: TxContext,
    readonly consistent: boolean,
    readonly conflictRetries: number,
    readonly ambiguousRetries: number,
  ) {}

  /**
   * Where the execution's trace ring ends, for a commit from version `expected`: cached when
   * this store committed that version itself, else read.
   */
  async head(id: string, expected: number): Promise<TraceHead> {
    return this.headNow(id, expected) ?? await this.readHead(id);
  }

  /** The same end when this store committed `expected` itself (no call), else undefined. */
  headNow(id: string, expected: number): TraceHead | undefined {
    const last = this.#heads.at(id, expected);
    return last === undefined ? undefined : { last, cached: true };
  }

  /** Forgets the cached end of the ring and reads it again. */
  reread(id: string): Promise<TraceHead> {
    this.#heads.forget(id);
    return this.readHead(id);
  }

  /** Forgets the cached end of the ring (a commit whose outcome is unknown). */
  forget(id: string): void {
    this.#heads.forget(id);
  }

  /**
   * A commit from `expected` to `next` went through: with a step (`head` where it went), the
   * ring's end moved one on; without one, a cached end stays where it was.
   */
  committed(id: string, head: TraceHead | undefined, expected: number, next: number): void {
    const last = this.#heads.at(id, expected);
    if (head !== undefined) this.#heads.set(id, next, head.last + 1);
    // An untraced commit leaves the ring's end where it was.
    else if (last !== undefined) this.#heads.set(id, next, last);
  }

  /** The ring's highest index (-1 when empty): one Query, whoever wrote the ring. */
  async readHead(id: string): Promise<TraceHead> {
    const result = await this.client.send(
      new QueryCommand({
        TableName: this.tx.tables.trace.name,
        KeyConditionExpression: "execution_id = :id",
        ExpressionAttributeValues: { ":id": S(id) },
        ProjectionExpression: "idx",
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const last = result.Items?.[0]?.idx?.N;
    return { last: last === undefined ? -1 : Number(last) };
  }

  /**
   * Appends one checked step (`json`) outside a commit: at `index` when given, else at the
   * ring's end + 1, read first.
   */
  async append(id: string, index: number | undefined, json: string): Promise<void> {
    // Steps appended outside commits do not move the version, so the end is always read here,
    // and the execution's trace_end is moved so that no store's cached end is trusted past it.
    let head = index === undefined ? await this.readHead(id) : undefined;
    let markExecution = true; // false once we know there is no execution item to mark
    for (let attempt = 0;; attempt++) {
      const items = head === undefined
        ? tracePutAt(this.tx, id, index!, json)
        : traceItems(this.tx, id, head, json);
      if (markExecution) {
        items.push({
          Update: {
            TableName: this.tx.tables.executions.name,
            Key: executionKey(id),
            UpdateExpression: "SET #te = :te",
            ConditionExpression: "attribute_exists(#id)",
            ExpressionAttributeNames: { "#te": TRACE_END, "#id": EXECUTION.id },
            ExpressionAttributeValues: { ":te": N(head === undefined ? -1 : head.last + 1) },
          },
        });
      }
      try {
        // With a token: a copy re-sent after a lost answer must not find its own step taken
        // and append it again at the next index.
        await sendTransaction(
          this.client,
          items,
          unansweredWrite(
            { operation: "appendTrace", key: id },
            this.ambiguousRetries,
            "read the trace to find out",
          ),
        );
        const cached = this.#heads.peek(id);
        if (head !== undefined && cached?.value === head.last) {
          this.#heads.set(id, cached.version, head.last + 1);
        } else this.#heads.forget(id);
        return;
      } catch (error) {
        if (
          !isNamed(error, "TransactionCanceledException") || attempt >= this.conflictRetries
        ) {
          this.#heads.forget(id);
          throw error;
        }
        const reasons = (error as { CancellationReasons?: CancellationReason[] })
          .CancellationReasons ?? [];
        if (markExecution && reasons.at(-1)?.Code === "ConditionalCheckFailed") {
          markExecution = false; // no such execution: nothing caches its ring's end
          continue;
        }
        // Someone else appended first: find the new end and try again.
        this.#heads.forget(id);
        await sleep(backoffDelay(attempt, { minDelayMs: 10, maxDelayMs: 500 }));
        if (head !== undefined) head = await this.readHead(id);
      }
    }
  }

  /** The execution's whole ring, oldest step first, each with its `index`. */
  async read(id: string): Promise<Record<string, unknown>[]> {
    const steps: Record<string, unknown>[] = [];
    const query = (start: Item | undefined) =>
      this.client.send(
        new QueryCommand({
          TableName: this.tx.tables.trace.name,
          KeyConditionExpression: "execution_id = :id",
          ExpressionAttributeValues: { ":id": S(id) },
          ScanIndexForward: true,
          ConsistentRead: this.consistent,
          ExclusiveStartKey: start,
        }),
      );
    for await (const page of pages(query)) {
      for (const item of page.Items ?? []) {
        steps.push(traceStepFromItem(item, id));
      }
    }
    return steps;
  }
}
