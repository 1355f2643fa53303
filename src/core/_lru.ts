// A small bounded map that forgets the least recently used key first.
export class Lru<K, V> {
  readonly #map = new Map<K, V>();
  /** The most recently used key: using it again moves nothing (one execution's commits). */
  #newest: K | undefined;
  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    const value = this.#map.get(key);
    if (value !== undefined && key !== this.#newest) {
      this.#map.delete(key);
      this.#map.set(key, value);
      this.#newest = key;
    }
    return value;
  }

  set(key: K, value: V): void {
    if (key !== this.#newest || !this.#map.has(key)) this.#map.delete(key);
    this.#map.set(key, value);
    this.#newest = key;
    if (this.#map.size > this.capacity) this.#map.delete(this.#map.keys().next().value!);
  }

  delete(key: K): void {
    this.#map.delete(key);
    if (key === this.#newest) this.#newest = undefined;
  }
}

/**
 * What a store knows of each execution as of one version it read or committed (the trace ring's
 * end, the outbox chains): a commit from that version may trust it, since any other writer's
 * commit moved the version on. Bounded: the least recently used executions are forgotten.
 */
export class VersionCache<T> {
  readonly #byId = new Lru<string, { version: number | null; value: T }>(10_000);

  /** What is known of `id` at `version`, or undefined (unknown, or known at another version). */
  at(id: string, version: number): T | undefined {
    const known = this.#byId.get(id);
    return known?.version === version ? known.value : undefined;
  }

  /** What is known of `id`, whatever its version. */
  peek(id: string): { version: number | null; value: T } | undefined {
    return this.#byId.get(id);
  }

  /** Remembers `value` of `id` at `version` (`null`: a version not known yet). */
  set(id: string, version: number | null, value: T): void {
    this.#byId.set(id, { version, value });
  }

  forget(id: string): void {
    this.#byId.delete(id);
  }
}
