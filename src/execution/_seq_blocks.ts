// Outbox and spawn seqs come from a shared counter item; taking them in blocks makes the
// steady-state commit a single call. Seqs a store hands out only ever rise.
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { DynamoDBSender } from "../dynamo/_dynamo.ts";
import { N, S } from "../dynamo/_dynamo.ts";
import { COUNTER } from "../core/_layout.ts";

export class SeqBlocks {
  #next = 1;
  #end = 0; // the current block is [#next, #end]; empty when #next > #end
  #refill: Promise<void> | null = null;

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

  async #reserve(size: number): Promise<void> {
    const result = await this.client.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { [COUNTER.id]: S(this.counterId) },
        // `ours` counts what this module reserved: the rest other writers took (see _upkeep.ts).
        UpdateExpression: "ADD #n :k, #o :k",
        ExpressionAttributeNames: { "#n": COUNTER.n, "#o": COUNTER.ours },
        ExpressionAttributeValues: { ":k": N(size) },
        ReturnValues: "UPDATED_NEW",
      }),
    );
    const end = Number(result.Attributes?.[COUNTER.n]?.N);
    // Blocks can come back out of order under concurrency; only a later block replaces ours.
    if (end > this.#end) {
      this.#end = end;
      this.#next = end - size + 1;
    }
  }
}
