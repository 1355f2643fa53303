// Outbox and spawn seqs come from a shared counter item; taking them in blocks makes the
// steady-state commit a single call. Seqs a store hands out only ever rise. A block is reserved
// with one `ADD n :size` that returns the new value: the item holds `n` alone and never grows, in
// both modes (nothing records which seqs are whose; other writers' rows are found by the
// tables' streams, see other_writers/_adoption_handlers.ts).
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import { N, S } from "../../dynamo/_dynamo.ts";
import { COUNTER } from "../../core/_layout.ts";

/** Reserves `size` seqs on counter `counterId`: resolves to the last seq of the block. */
export type ReserveBlock = (
  client: DynamoDBSender,
  table: string,
  counterId: string,
  size: number,
) => Promise<number>;

/** A block as a plain `ADD n :size` (ReturnValues UPDATED_NEW): no read, no condition. */
export const addBlock: ReserveBlock = async (client, table, counterId, size) => {
  const result = await client.send(
    new UpdateItemCommand({
      TableName: table,
      Key: { [COUNTER.id]: S(counterId) },
      UpdateExpression: "ADD #n :k",
      ExpressionAttributeNames: { "#n": COUNTER.n },
      ExpressionAttributeValues: { ":k": N(size) },
      ReturnValues: "UPDATED_NEW",
    }),
  );
  return Number(result.Attributes?.[COUNTER.n]?.N);
};

export class SeqBlocks {
  #next = 1;
  #end = 0; // the current block is [#next, #end]; empty when #next > #end
  /** A block reserved ahead, above the current one: taken when the current one runs short. */
  #spare: { first: number; last: number } | null = null;
  #refill: Promise<void> | null = null;
  #ahead: Promise<void> | null = null;

  constructor(
    private readonly client: DynamoDBSender,
    private readonly table: string,
    private readonly counterId: string,
    private readonly blockSize: number,
    private readonly reserve: ReserveBlock = addBlock,
  ) {}

  /** `count` seqs from the blocks in hand when they hold them (no call, no wait), else null. */
  takeNow(count: number): number[] | null {
    if (this.#left() < count) this.#useSpare(count);
    return this.#left() >= count ? this.#hand(count) : null;
  }

  /** `count` seqs from the current block, reserving a new block when it runs short. */
  async take(count: number): Promise<number[]> {
    while (this.#left() < count && !this.#useSpare(count)) {
      this.#refill ??= this.#reserve(Math.max(this.blockSize, count)).finally(() => {
        this.#refill = null;
      });
      await this.#refill;
    }
    return this.#hand(count);
  }

  /**
   * Once the current block is half used (and none is reserved ahead yet), reserves the next one:
   * a commit awaits it beside its own transaction, so that no later commit waits for a counter.
   * Resolves when done (a failed reservation is left to the next take); null when not needed.
   */
  ahead(): Promise<void> | null {
    if (this.#end === 0 || this.#spare !== null || this.#ahead !== null) return null;
    if (this.#refill !== null || this.#left() * 2 > this.blockSize) return null;
    const size = this.blockSize;
    this.#ahead = this.reserve(this.client, this.table, this.counterId, size).then(
      (last) => {
        // Only a block above ours may follow it (a concurrent take may have passed this one).
        if (last > this.#end && this.#spare === null) {
          this.#spare = { first: last - size + 1, last };
        }
      },
      () => {}, // the next take that runs short reserves one itself
    ).finally(() => {
      this.#ahead = null;
    });
    return this.#ahead;
  }

  /**
   * `count` seqs from a block reserved after this call started: above every seq anyone
   * handed out before, whichever process it came from.
   */
  async fresh(count: number): Promise<number[]> {
    await this.#reserve(Math.max(this.blockSize, count));
    // A concurrent refill may have replaced our block with a later one; both are fresh.
    while (this.#left() < count) await this.#reserve(Math.max(this.blockSize, count));
    return this.#hand(count);
  }

  #left(): number {
    return this.#end - this.#next + 1;
  }

  /** Moves to the block reserved ahead when it holds `count` seqs; whether it did. */
  #useSpare(count: number): boolean {
    const spare = this.#spare;
    if (spare === null || spare.last - spare.first + 1 < count) return false;
    [this.#next, this.#end, this.#spare] = [spare.first, spare.last, null];
    return true;
  }

  #hand(count: number): number[] {
    const seqs: number[] = [];
    for (let i = 0; i < count; i++) seqs.push(this.#next + i);
    this.#next += count;
    return seqs;
  }

  async #reserve(size: number): Promise<void> {
    const end = await this.reserve(this.client, this.table, this.counterId, size);
    // Blocks can come back out of order under concurrency; only a later block replaces ours.
    if (end > this.#end) {
      this.#end = end;
      this.#next = end - size + 1;
      if (this.#spare !== null && this.#spare.last <= end) this.#spare = null; // below ours now
    }
  }
}
