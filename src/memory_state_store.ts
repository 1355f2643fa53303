/**
 * `MemoryStateStore`: the hash-state store's in-memory twin, with an injectable clock.
 *
 * @module
 */
import { checkField, checkKey, checkTime, describe, LIMITS, settle, toJson } from "./_validate.ts";
import { globMatch } from "./glob.ts";
import type { SetOptions, StateStore } from "./types.ts";

/**
 * Options of {@linkcode MemoryStateStore}.
 *
 * @example A fake clock
 * ```ts
 * import { MemoryStateStore } from "@harel/dynamodb/testing";
 *
 * let now = 0;
 * const state = new MemoryStateStore({ now: () => now });
 * now += 5_000; // five seconds later
 * ```
 */
export interface MemoryStateStoreOptions {
  /** The clock, in epoch milliseconds: tests move it instead of sleeping. @default {Date.now} */
  now?: () => number;
}

interface Entry {
  value?: string; // JSON text
  hash?: Map<string, string>; // field → JSON text
  ttl?: number; // epoch seconds
}

/**
 * An in-memory {@linkcode StateStore} with DynamoDBStateStore's semantics: JSON values,
 * TTL honoured on every read and write, `hset`/`hdel` counts, glob `keys`, and the same
 * refusals. Pass a clock to expire keys without waiting.
 *
 * @example Expiring a key by moving the clock
 * ```ts
 * import { MemoryStateStore } from "@harel/dynamodb/testing";
 *
 * let now = Date.now();
 * const state = new MemoryStateStore({ now: () => now });
 * await state.set("otp", "1234", { ttl: 60 });
 * now += 61_000;
 * console.log(await state.get("otp")); // null
 * ```
 */
export class MemoryStateStore implements StateStore {
  readonly #now: () => number;
  readonly #items = new Map<string, Entry>();

  /**
   * An empty store.
   *
   * @param options The clock.
   */
  constructor(options: MemoryStateStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  #seconds(): number {
    return this.#now() / 1000;
  }

  /** The live entry at `key`; an expired one is dropped, as DynamoDB eventually does. */
  #live(key: string): Entry | undefined {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const entry = this.#items.get(key);
    if (entry?.ttl !== undefined && entry.ttl <= this.#seconds()) {
      this.#items.delete(key);
      return undefined;
    }
    return entry;
  }

  #expiry(field: string, seconds: number): number {
    if (checkTime(field, seconds) === 0) {
      throw new RangeError(`${field} must be more than 0 seconds, got 0`);
    }
    return Math.ceil(this.#seconds() + seconds);
  }

  /** The fields of an entry: its hash, else a legacy hash in its value. */
  #fields(entry: Entry | undefined): Map<string, string> | undefined {
    if (!entry) return undefined;
    if (entry.hash) return entry.hash;
    if (entry.value === undefined) return undefined;
    const value = JSON.parse(entry.value);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? new Map(Object.entries(value).map(([k, v]) => [k, JSON.stringify(v)]))
      : undefined;
  }

  /**
   * The value of `key`, or `null`.
   *
   * @example Reading a value
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().get("k")); // null
   * ```
   */
  get(key: string): Promise<unknown | null> {
    return settle(() => {
      const value = this.#live(key)?.value;
      return value === undefined ? null : JSON.parse(value);
    });
  }

  /**
   * Stores a JSON value, replacing the whole item.
   *
   * @example Setting a value with a TTL
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * await new MemoryStateStore().set("k", { a: 1 }, { ttl: 10 });
   * ```
   */
  set(key: string, value: unknown, options: SetOptions = {}): Promise<void> {
    return settle(() => {
      checkKey("key", key, LIMITS.partitionKeyBytes);
      const entry: Entry = { value: toJson("value", value) };
      if (options.ttl !== undefined) entry.ttl = this.#expiry("options.ttl", options.ttl);
      this.#items.set(key, entry);
    });
  }

  /**
   * Removes `key`; `true` if a live key was removed.
   *
   * @example Deleting a key
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().delete("k")); // false
   * ```
   */
  delete(key: string): Promise<boolean> {
    return settle(() => this.#live(key) !== undefined && this.#items.delete(key));
  }

  /**
   * Whether `key` exists and has not expired.
   *
   * @example Checking a key
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().exists("k")); // false
   * ```
   */
  exists(key: string): Promise<boolean> {
    return settle(() => this.#live(key) !== undefined);
  }

  /**
   * Live keys matching a glob.
   *
   * @example Listing keys by pattern
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().keys("session:*")); // []
   * ```
   */
  keys(pattern = "*"): Promise<string[]> {
    return settle(() => {
      if (typeof pattern !== "string") {
        throw new TypeError(`pattern must be a glob string, got ${describe(pattern)}`);
      }
      return [...this.#items.keys()].filter((key) =>
        this.#live(key) !== undefined && globMatch(pattern, key)
      );
    });
  }

  /**
   * Whole seconds until `key` expires, or `null`.
   *
   * @example Reading the time left
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().ttl("k")); // null
   * ```
   */
  ttl(key: string): Promise<number | null> {
    return settle(() => {
      const ttl = this.#live(key)?.ttl;
      return ttl === undefined ? null : Math.max(0, Math.floor(ttl - this.#seconds()));
    });
  }

  /**
   * Sets `key` to expire in `seconds` (`<= 0` removes it); `false` when missing.
   *
   * @example Setting a TTL
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().expire("k", 10)); // false
   * ```
   */
  expire(key: string, seconds: number): Promise<boolean> {
    return settle(() => {
      checkKey("key", key, LIMITS.partitionKeyBytes);
      if (typeof seconds !== "number" || !Number.isFinite(seconds)) {
        throw new RangeError(`seconds must be a finite number, got ${describe(seconds)}`);
      }
      const entry = this.#live(key);
      if (!entry) return false;
      if (seconds <= 0) this.#items.delete(key);
      else entry.ttl = this.#expiry("seconds", seconds);
      return true;
    });
  }

  /**
   * A hash field's value, or `null`.
   *
   * @example Reading one field
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().hget("k", "f")); // null
   * ```
   */
  hget(key: string, field: string): Promise<unknown | null> {
    return settle(() => {
      checkField(field);
      const value = this.#fields(this.#live(key))?.get(field);
      return value === undefined ? null : JSON.parse(value);
    });
  }

  /**
   * Every field of the hash at `key`.
   *
   * @example Reading every field
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().hgetall("k")); // {}
   * ```
   */
  hgetall(key: string): Promise<Record<string, unknown>> {
    return settle(() => {
      const fields = this.#fields(this.#live(key)) ?? new Map();
      return Object.fromEntries([...fields].map(([k, v]) => [k, JSON.parse(v)]));
    });
  }

  /** The entry's hash, migrating a legacy one; refuses to overwrite a plain value. */
  #hashFor(key: string, entry: Entry | undefined): Map<string, string> {
    if (!entry) {
      const hash = new Map<string, string>();
      this.#items.set(key, { hash });
      return hash;
    }
    const fields = this.#fields(entry);
    if (!fields) {
      if (entry.value !== undefined) {
        throw new TypeError(
          `key ${JSON.stringify(key)} holds a value, not a hash; delete it or use set() instead`,
        );
      }
      return (entry.hash = new Map());
    }
    entry.hash = fields;
    delete entry.value;
    return fields;
  }

  /**
   * Sets a hash field: 1 if new, 0 if updated.
   *
   * @example Setting a field
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().hset("k", "f", 1)); // 1
   * ```
   */
  hset(key: string, field: string, value: unknown): Promise<number> {
    return settle(() => {
      checkKey("key", key, LIMITS.partitionKeyBytes);
      checkField(field);
      const json = toJson("value", value);
      const hash = this.#hashFor(key, this.#live(key));
      const isNew = !hash.has(field);
      hash.set(field, json);
      return isNew ? 1 : 0;
    });
  }

  /**
   * Removes hash fields; the number that existed.
   *
   * @example Deleting fields
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * console.log(await new MemoryStateStore().hdel("k", "f")); // 0
   * ```
   */
  hdel(key: string, ...fields: string[]): Promise<number> {
    return settle(() => {
      checkKey("key", key, LIMITS.partitionKeyBytes);
      if (fields.length === 0) throw new TypeError("hdel needs at least one field");
      const unique = [...new Set(fields.map((f, i) => checkField(f, `fields[${i}]`)))];
      const entry = this.#live(key);
      if (!entry) return 0;
      const hash = this.#hashFor(key, entry);
      return unique.filter((f) => hash.delete(f)).length;
    });
  }

  /**
   * Nothing to release; here for the interface.
   *
   * @example Closing a store
   * ```ts
   * import { MemoryStateStore } from "@harel/dynamodb/testing";
   *
   * await new MemoryStateStore().close();
   * ```
   */
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Same as {@linkcode MemoryStateStore.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
