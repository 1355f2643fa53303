// One relay or sweep pass as a unit of work, handed explicitly to what runs in it (the pass
// bodies, the lanes, the acknowledgements): the signal that stops it, an `onError` that cannot
// escape a lane, and the acknowledgements it owes before it may settle.

/** What one pass shares among its helpers. Built by {@linkcode runPass}, passed by hand. */
export class Pass {
  readonly #stop = new AbortController();
  readonly #settling = new Set<{ flush(): Promise<void> }>();
  #failure: { error: unknown } | null = null;
  /** The caller's signal, or the pass stopping: what the pass body goes by. */
  readonly signal: AbortSignal;
  /** The caller's `onError`, made safe: what it throws stops the pass instead of a lane. */
  readonly onError: ((error: unknown) => void) | undefined;

  /**
   * @param name The runner, e.g. `"relayOutbox"`.
   * @param signal The caller's signal, if any.
   * @param onError The caller's error callback, if any.
   */
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
