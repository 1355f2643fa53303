// Outbox and spawn seqs come from a shared counter item; taking them in blocks makes the
// steady-state commit a single call. Seqs a store hands out only ever rise. Each block is
// recorded in the counter item (`blocks`) by the same conditional write that reserves it, so the
// seqs other writers took (the Python store adds to `n` on each commit) are known exactly: every
// seq up to `n` that no recorded block holds (see _foreign_seqs.ts).
import { GetItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import { isNamed, N, S } from "../../dynamo/_dynamo.ts";
import { COUNTER } from "../../core/_layout.ts";
import type { Item } from "../../core/_attributes.ts";

/** How often a reservation is tried against other writers moving the counter meanwhile. */
const RESERVE_ATTEMPTS = 50;

/** A recorded block, as the counter item's `blocks` holds it. */
export const blockText = (first: number, last: number): string => `${first}-${last}`;

/** A recorded block's range, or null for text that is not one. */
export function blockRange(text: string): [number, number] | null {
  const match = /^(\d+)-(\d+)$/.exec(text);
  return match ? [Number(match[1]), Number(match[2])] : null;
}

export class SeqBlocks {
  #next = 1;
  #end = 0; // the current block is [#next, #end]; empty when #next > #end
  #refill: Promise<void> | null = null;
  /** The counter's value as last seen: what the next reservation expects to find. */
  #counter = 0;

  constructor(
    private readonly client: DynamoDBSender,
    private readonly table: string,
    private readonly counterId: string,
    private readonly blockSize: number,
  ) {}

  /** `count` seqs from the current block when it holds them (no call, no wait), else null. */
  takeNow(count: number): number[] | null {
    return this.#end - this.#next + 1 >= count ? this.#hand(count) : null;
  }

  /** `count` seqs from the current block, reserving a new block when it runs short. */
  async take(count: number): Promise<number[]> {
    while (this.#end - this.#next + 1 < count) {
      this.#refill ??= this.#reserve(Math.max(this.blockSize, count)).finally(() => {
        this.#refill = null;
      });
      await this.#refill;
    }
    return this.#hand(count);
  }

  /**
   * `count` seqs from a block reserved after this call started: above every seq anyone
   * handed out before, whichever process it came from.
   */
  async fresh(count: number): Promise<number[]> {
    await this.#reserve(Math.max(this.blockSize, count));
    // A concurrent refill may have replaced our block with a later one; both are fresh.
    while (this.#end - this.#next + 1 < count) await this.#reserve(Math.max(this.blockSize, count));
    return this.#hand(count);
  }

  #hand(count: number): number[] {
    const seqs: number[] = [];
    for (let i = 0; i < count; i++) seqs.push(this.#next + i);
    this.#next += count;
    return seqs;
  }

  /**
   * Moves the counter from the value it holds to `size` more and records the block, in one
   * conditional write; another writer's addition meanwhile fails it, and it is tried again from
   * the value DynamoDB found. Out of attempts, the block is added unrecorded: its seqs then look
   * like another writer's, which costs a pass a probe of each, and loses nothing.
   */
  async #reserve(size: number): Promise<void> {
    for (let attempt = 0;; attempt++) {
      const first = this.#counter + 1, last = this.#counter + size;
      const recorded = attempt < RESERVE_ATTEMPTS;
      try {
        const result = await this.client.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: { [COUNTER.id]: S(this.counterId) },
            ...(recorded
              ? {
                UpdateExpression: "SET #n = :last ADD #b :block",
                ConditionExpression: this.#counter === 0
                  ? "attribute_not_exists(#n) OR #n = :zero"
                  : "#n = :old",
                ExpressionAttributeNames: { "#n": COUNTER.n, "#b": COUNTER.blocks },
                ExpressionAttributeValues: {
                  ":last": N(last),
                  ":block": { SS: [blockText(first, last)] },
                  ...(this.#counter === 0 ? { ":zero": N(0) } : { ":old": N(this.#counter) }),
                },
                ReturnValuesOnConditionCheckFailure: "ALL_OLD",
              }
              : {
                UpdateExpression: "ADD #n :k",
                ExpressionAttributeNames: { "#n": COUNTER.n },
                ExpressionAttributeValues: { ":k": N(size) },
                ReturnValues: "UPDATED_NEW",
              }),
          }),
        );
        const end = recorded ? last : Number(result.Attributes?.[COUNTER.n]?.N);
        this.#counter = Math.max(this.#counter, end);
        // Blocks can come back out of order under concurrency; only a later block replaces ours.
        if (end > this.#end) {
          this.#end = end;
          this.#next = end - size + 1;
        }
        return;
      } catch (error) {
        if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
        const found = (error as { Item?: Item }).Item ?? await this.#read();
        this.#counter = Number(found?.[COUNTER.n]?.N ?? 0);
      }
    }
  }

  /** The counter item, read strongly (a refusal that did not bring it back). */
  async #read(): Promise<Item | undefined> {
    return (await this.client.send(
      new GetItemCommand({
        TableName: this.table,
        Key: { [COUNTER.id]: S(this.counterId) },
        ConsistentRead: true,
      }),
    )).Item;
  }
}
