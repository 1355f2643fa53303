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
