// One relay or sweep pass as a unit of work, shared by relay.ts's helpers (inSpan, checkOptions,
// inLanes, Acks) through an AsyncLocalStorage, so that the pass bodies need not thread it: the
// acknowledgements it owes, and a failure that must stop it.
import { AsyncLocalStorage } from "node:async_hooks";

/** What one pass shares among its helpers. */
export class Pass {
  readonly #stop = new AbortController();
  readonly #settling = new Set<{ flush(): Promise<void> }>();
  #failure: { error: unknown } | null = null;

  /** @param name The runner, e.g. `"relayOutbox"`. */
  constructor(readonly name: string) {}

  /** The first failure that stopped the pass (a throwing `onError`, a lane that threw). */
  get failure(): { error: unknown } | null {
    return this.#failure;
  }

  /** Stops the pass with `error`: nothing new starts; it rejects with the first such error. */
  stop(error: unknown): void {
    this.#failure ??= { error };
    this.#stop.abort();
  }

  /** The signal the pass body goes by: the caller's, or the pass stopping. */
  signal(signal: AbortSignal | undefined): AbortSignal {
    return signal ? AbortSignal.any([signal, this.#stop.signal]) : this.#stop.signal;
  }

  /** `onError` made safe: what it throws stops the pass instead of escaping a lane. */
  guard(onError: ((error: unknown) => void) | undefined): ((error: unknown) => void) | undefined {
    if (onError === undefined) return undefined;
    return (error) => {
      try {
        onError(error);
      } catch (thrown) {
        this.stop(thrown);
      }
    };
  }

  /** Something the pass must flush before it settles, whatever its body did. */
  owe(work: { flush(): Promise<void> }): void {
    this.#settling.add(work);
  }

  /** Flushes everything owed; resolves with the first error, or null. */
  async settle(): Promise<{ error: unknown } | null> {
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

const passes = new AsyncLocalStorage<Pass>();

/** Runs `body` as the pass `pass`: {@linkcode currentPass} finds it, across awaits. */
export function runPass<T>(pass: Pass, body: () => Promise<T>): Promise<T> {
  return passes.run(pass, body);
}

/** The pass the caller runs in, if any. */
export function currentPass(): Pass | undefined {
  return passes.getStore();
}
