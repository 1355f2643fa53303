// One relay or sweep pass, handed explicitly to what runs in it: the signal that stops it, an
// `onError` that cannot escape a lane, and the acknowledgements it owes before it may settle.
import { WRITES_IN_FLIGHT } from "../core/_lanes.ts";
import { LIMITS } from "../core/_validate.ts";
import { StoreClosed } from "../core/errors.ts";

/** What one pass shares among its helpers, passed by hand. */
export class Pass {
  readonly #stop = new AbortController();
  readonly #settling = new Set<{ flush(): Promise<void> }>();
  #failure: { error: unknown } | null = null;
  /** The caller's signal, or the pass stopping: what the pass body goes by. */
  readonly signal: AbortSignal;
  /** The caller's `onError`, made safe: what it throws stops the pass instead of a lane. */
  readonly onError: ((error: unknown) => void) | undefined;

  /** `name`: the runner, e.g. `"relayOutbox"`. */
  constructor(
    readonly name: string,
    signal: AbortSignal | undefined,
    onError: ((error: unknown) => void) | undefined,
  ) {
    this.signal = signal ? AbortSignal.any([signal, this.#stop.signal]) : this.#stop.signal;
    this.onError = onError && ((error) => {
      try {
        onError(error);
      } catch (thrown) {
        this.stop(thrown);
      }
    });
  }

  /** The first failure that stopped the pass (a throwing `onError`, a lane that threw). */
  get failure(): { error: unknown } | null {
    return this.#failure;
  }

  /** Stops the pass with `error`: nothing new starts; it rejects with the first such error. */
  stop(error: unknown): void {
    this.#failure ??= { error };
    this.#stop.abort();
  }

  /** Something the pass must flush before it settles, whatever its body did. */
  owe(work: { flush(): Promise<void> }): void {
    this.#settling.add(work);
  }

  /** Flushes everything owed; resolves with the first error, or null. */
  async finishInFlight(): Promise<{ error: unknown } | null> {
    let first: { error: unknown } | null = null;
    for (const work of this.#settling) {
      try {
        await work.flush();
      } catch (error) {
        first ??= { error };
      }
    }
    return first;
  }
}

/**
 * A pass's acknowledgements, in batches of one BatchWriteItem (a few in flight, so a fast pass does
 * not flood the sockets): `send` takes a batch, `settle` every item once they are done. The pass
 * flushes it before settling, even if its body did not.
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
