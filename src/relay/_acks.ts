// Acknowledging what a relay pass delivered: in batches of one BatchWriteItem, a few in flight, so
// a fast pass does not flood the client's sockets; then, once, what the pass owes at its end.
import { WRITES_IN_FLIGHT } from "../core/_lanes.ts";
import type { Pass } from "./_relay_pass.ts";
import { LIMITS } from "../core/_validate.ts";
import { StoreClosed } from "../core/errors.ts";

/**
 * A pass's acknowledgements: `send` takes one batch (25), `settle` every item once the batches are
 * done. The pass flushes it before settling, even if its body did not.
 */
export class Acks<T> {
  #batch: T[] = [];
  readonly #all: T[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #error: { cause: unknown } | null = null;

  constructor(
    readonly pass: Pass,
    readonly send: (items: T[]) => Promise<unknown>,
    readonly settle?: (items: T[]) => Promise<void>,
  ) {
    pass.owe(this);
  }

  async add(item: T): Promise<void> {
    this.#batch.push(item);
    if (this.#batch.length < LIMITS.batchWriteItems) return;
    this.#send();
    while (this.#inFlight.size >= WRITES_IN_FLIGHT) await Promise.race(this.#inFlight);
  }

  /** Sends what is left, waits for every batch, then settles (once); rejects with the first failure. */
  async flush(): Promise<void> {
    this.#send();
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
    const all = this.#all.splice(0);
    if (this.settle && all.length && !this.#error) {
      await this.settle(all).catch((error) =>
        void (this.#error ??= { cause: this.#closed(error) })
      );
    }
    if (this.#error) throw this.#error.cause;
  }

  #send(): void {
    if (this.#batch.length === 0) return;
    const items = this.#batch;
    this.#batch = [];
    this.#all.push(...items);
    const sent: Promise<void> = this.send(items).then(
      () => {},
      (error) => void (this.#error ??= { cause: this.#closed(error) }),
    ).finally(() => this.#inFlight.delete(sent));
    this.#inFlight.add(sent);
  }

  /**
   * An acknowledgement follows the pass's read, so a store that refuses it as closed was closed
   * while the pass ran: say to await the pass, not to make a new store.
   */
  #closed(error: unknown): unknown {
    if (!(error instanceof StoreClosed) || error.inFlight) return error;
    const step = `${error.method}() of ${this.pass.name}()`;
    return new StoreClosed(error.store, step, { inFlight: true, cause: error });
  }
}
