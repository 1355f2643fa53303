// Acknowledging what a relay pass delivered: seqs in batches of one BatchWriteItem, a few in
// flight, a batch the store refuses split until the seq it refuses fails alone.
import { isNamed } from "../core/_attributes.ts";
import { WRITES_IN_FLIGHT } from "../core/_lanes.ts";
import type { Pass } from "./_relay_pass.ts";
import { readFromTable } from "../core/_table_seqs.ts";
import { LIMITS } from "../core/_validate.ts";
import { StoreClosed } from "../core/errors.ts";

/** Acknowledgements go out in batches of one BatchWriteItem, at most this many at once (as ackOutbox). */
export const ACKS_IN_FLIGHT = WRITES_IN_FLIGHT;

/**
 * Acknowledges seqs in batches of one BatchWriteItem (25), a few batches in flight; `add`
 * waits when too many are, so a fast pass does not flood the client's sockets. The seqs are
 * acknowledged as read from the table, whatever another writer stored; a batch the store
 * refuses as input is split until the seq it refuses fails alone. The pass it is made for
 * flushes it before settling, even if the body did not.
 */
export class Acks {
  #batch: number[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #error: { cause: unknown } | null = null;
  readonly ack: (seqs: number[]) => Promise<void>;
  #settle: (() => Promise<void>) | undefined;

  /**
   * @param pass The pass that owes these acknowledgements: it flushes them before settling.
   * @param acks Acknowledges one batch of seqs (a function, or `ack` with the `settle` the last
   * flush calls once every batch is done: `ExecutionStore.outboxAcks`).
   */
  constructor(
    readonly pass: Pass,
    acks: ((seqs: number[]) => Promise<void>) | {
      ack(seqs: number[]): Promise<void>;
      settle?(): Promise<void>;
    },
  ) {
    this.ack = typeof acks === "function" ? acks : (seqs) => acks.ack(seqs);
    this.#settle = typeof acks === "function" ? undefined : acks.settle?.bind(acks);
    pass.owe(this);
  }

  async add(seq: number): Promise<void> {
    this.#batch.push(seq);
    if (this.#batch.length < LIMITS.batchWriteItems) return;
    this.#send();
    while (this.#inFlight.size >= ACKS_IN_FLIGHT) await Promise.race(this.#inFlight);
  }

  /**
   * Sends what is left, waits for every batch, then settles (once); rejects with the first
   * failure.
   */
  async flush(): Promise<void> {
    this.#send();
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
    const settle = this.#settle;
    this.#settle = undefined;
    if (settle) {
      await settle().catch((error) => {
        this.#error ??= { cause: this.#inFlightAtClose(error) };
      });
    }
    if (this.#error) throw this.#error.cause;
  }

  #send(): void {
    if (this.#batch.length === 0) return;
    const seqs = this.#batch;
    this.#batch = [];
    const sent: Promise<void> = this.#acknowledge(seqs)
      .finally(() => this.#inFlight.delete(sent));
    this.#inFlight.add(sent);
  }

  async #acknowledge(seqs: number[]): Promise<void> {
    try {
      await this.ack(readFromTable(seqs));
    } catch (error) {
      if (seqs.length > 1 && refusesInput(error)) {
        const half = seqs.length >> 1;
        await Promise.all([
          this.#acknowledge(seqs.slice(0, half)),
          this.#acknowledge(seqs.slice(half)),
        ]);
      } else {
        this.#error ??= { cause: this.#inFlightAtClose(error) };
      }
    }
  }

  /**
   * An acknowledgement follows the pass's read, so a store that refuses it as closed was
   * closed while the pass ran: say to await the pass, not to make a new store.
   */
  #inFlightAtClose(error: unknown): unknown {
    if (!(error instanceof StoreClosed) || error.inFlight) return error;
    const step = `${error.method}() of ${this.pass.name}()`;
    return new StoreClosed(error.store, step, { inFlight: true, cause: error });
  }
}

/** Whether a store refused an acknowledgement for what it was given (a seq), not for a failure. */
export function refusesInput(error: unknown): boolean {
  return error instanceof RangeError || error instanceof TypeError ||
    isNamed(error, "ValidationException");
}
