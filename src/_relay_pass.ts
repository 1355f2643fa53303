// One relay or sweep pass as a unit of work, shared by relay.ts's helpers (inSpan, checkOptions,
// inLanes, Acks) through an AsyncLocalStorage, so that the pass bodies need not thread it: what
// the pass saw pending (its lag), the acknowledgements it owes, and a failure that must stop it.
import { AsyncLocalStorage } from "node:async_hooks";
import type { OutboxEntry, PendingSpawn, Timer } from "./types.ts";

/** What one pass shares among its helpers. */
export class Pass {
  readonly #stop = new AbortController();
  readonly #settling = new Set<{ flush(): Promise<void> }>();
  #failure: { error: unknown } | null = null;
  #now: number | undefined;
  #lag: number | null = null;

  /** @param name The runner, e.g. `"relayOutbox"`. */
  constructor(readonly name: string) {}

  /** The first failure that stopped the pass (a throwing `onError`, a lane that threw). */
  get failure(): { error: unknown } | null {
    return this.#failure;
  }

  /** The age in seconds of the oldest entry the pass saw pending, or null (none, or unknown). */
  get lagSeconds(): number | null {
    return this.#lag;
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

  /** The pass's clock, in epoch seconds (a sweep's `now`); otherwise the wall clock. */
  setClock(now: number): void {
    this.#now = now;
  }

  /** Records the entries the pass read (nested arrays too: the outbox's queues per target). */
  saw(items: readonly unknown[]): void {
    const now = this.#now ?? Date.now() / 1000;
    const visit = (item: unknown) => {
      if (Array.isArray(item)) return item.forEach(visit);
      const age = entryAge(item as OutboxEntry | PendingSpawn | Timer, now);
      if (age !== null && (this.#lag === null || age > this.#lag)) this.#lag = age;
    };
    items.forEach(visit);
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

/**
 * How long `entry` has waited at `now` (epoch seconds), in seconds, or null when it does not
 * say: a timer since it was due (`fireAt`), an outbox entry since its event's `created_time`.
 * Spawn intents carry no time. Never negative (a writer's clock ahead of ours reads as 0).
 */
export function entryAge(entry: OutboxEntry | PendingSpawn | Timer, now: number): number | null {
  if (entry === null || typeof entry !== "object") return null;
  let since: number | null = null;
  if ("fireAt" in entry) since = Number.isFinite(entry.fireAt) ? entry.fireAt : null;
  else if ("event" in entry) since = isoSeconds(entry.event?.created_time);
  return since === null ? null : Math.max(0, now - since);
}

/**
 * An ISO 8601 time as Python's `isoformat()` or JS's `toISOString()` writes it, in epoch
 * seconds; without an offset it is UTC (what harel engines write). Anything else is null.
 */
function isoSeconds(text: unknown): number | null {
  if (typeof text !== "string") return null;
  const match = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d(?:\.\d+)?)?)(Z|[+-]\d\d:?\d\d)?$/i
    .exec(text.trim());
  if (!match) return null;
  const [, date, time, offset] = match;
  const ms = Date.parse(`${date}T${time}${offset ?? "Z"}`);
  return Number.isFinite(ms) ? ms / 1000 : null;
}
