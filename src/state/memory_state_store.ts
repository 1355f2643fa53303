/**
 * `MemoryStateStore`: the hash-state store's in-memory twin, with an injectable clock.
 *
 * @module
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { checkField, checkItemSize, checkKey, LIMITS } from "../core/_validate.ts";
import { checkOptionsOf } from "../core/_option_names.ts";
import { checkClock, secondsOf } from "../core/_clock.ts";
import {
  checkHdelFields,
  checkMigrating,
  checkPattern,
  checkTtlSeconds,
  decodeValue,
  fieldRecord,
  legacyFields,
  optionsTtl,
  setOwn,
  stateEntries,
  type StateEntry as Entry,
  toAttribute,
} from "./_state_values.ts";
import { N } from "../core/_attributes.ts";
import { toJson } from "../core/_json.ts";
import { StoreClosed } from "../core/errors.ts";
import { checkHsetInput } from "./_hset_input.ts";
import { globMatch } from "../core/glob.ts";
import type { SetOptions, StateStore } from "../core/types.ts";
import { STATE } from "../core/_layout.ts";
import { WRITE_IDS_SIZE } from "./_state_presence.ts";

/**
 * Options of {@linkcode MemoryStateStore}.
 *
 * @example A fake clock
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryStateStore } from "@harel/dynamodb/testing";
 *
 * let now = 0;
 * const state = new MemoryStateStore({ now: () => now });
 * await state.set("otp", "1234", { ttl: 60 });
 * now += 5_000; // five seconds later
 * assert.equal(await state.ttl("otp"), 55);
 * ```
 */
export interface MemoryStateStoreOptions {
  /** The clock, in epoch milliseconds: tests move it instead of sleeping. @default {Date.now} */
  now?: () => number;
}

/** Whether an entry holds a value or a hash field: an emptied hash is no key, as in Redis. */
function holds(entry: Entry): boolean {
  return entry.value !== undefined || (entry.hash?.size ?? 0) > 0;
}

/** The entry as the DynamoDB item it stands for, for the 400 KB check. */
function asItem(key: string, entry: Entry): Record<string, AttributeValue> {
  const item: Record<string, AttributeValue> = {
    [STATE.key]: { S: key },
    [STATE.updatedAt]: { N: "1000000000" },
  };
  if (entry.value !== undefined) item[STATE.value] = { S: entry.value };
  if (entry.ttl !== undefined) item[STATE.ttl] = N(entry.ttl);
  if (entry.hash) {
    const map: Record<string, unknown> = {};
    for (const [field, json] of entry.hash) setOwn(map, field, toAttribute(JSON.parse(json)));
    item[STATE.hash] = { M: map as Record<string, AttributeValue> };
    Object.assign(item, WRITE_IDS_SIZE);
  }
  return item;
}

/**
 * An in-memory {@linkcode StateStore} with DynamoDBStateStore's semantics and refusals. Pass
 * a clock to expire keys without waiting.
 *
 * @example Expiring a key by moving the clock
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryStateStore } from "@harel/dynamodb/testing";
 *
 * let now = Date.now();
 * const state = new MemoryStateStore({ now: () => now });
 * await state.set("otp", "1234", { ttl: 60 });
 * now += 61_000;
 * assert.equal(await state.get("otp"), null);
 * assert.equal(await state.exists("otp"), false);
 * ```
 */
export class MemoryStateStore implements StateStore {
  readonly #now: () => number;
  readonly #items = new Map<string, Entry>();
  #closed = false;

  /** An empty store. */
  constructor(options: MemoryStateStoreOptions = {}) {
    this.#now = checkClock(checkOptionsOf("new MemoryStateStore()", options).now ?? Date.now);
    stateEntries.set(this, this.#items);
  }

  #seconds(): number {
    return secondsOf(this.#now);
  }

  /** The live entry at `key`; an expired or emptied one is dropped. */
  #live(key: string): Entry | undefined {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const entry = this.#items.get(key);
    if (!entry) return undefined;
    if ((entry.ttl !== undefined && entry.ttl <= this.#seconds()) || !holds(entry)) {
      this.#items.delete(key);
      return undefined;
    }
    return entry;
  }

  /** The fields of an entry: its hash once it has one, else a legacy hash in its value. */
  #fields(entry: Entry | undefined): Map<string, string> | undefined {
    if (!entry) return undefined;
    if (entry.hash) return entry.hash;
    const legacy = legacyFields(entry.value, true);
    return legacy && new Map(Object.entries(legacy).map(([k, v]) => [k, JSON.stringify(v)]));
  }

  /** Stores `entry` at `key` unless it would be over 400 KB. */
  #store(key: string, entry: Entry, what: string): void {
    checkItemSize(what, asItem(key, entry));
    this.#items.set(key, entry);
  }

  /** The value of `key`, or `null`; `T` names the stored type (not checked). */
  get<T = unknown>(key: string): Promise<T | null> {
    return Promise.try(() => {
      this.#open("get");
      const value = this.#live(key)?.value;
      return value === undefined ? null : decodeValue(value) as T;
    });
  }

  /** Stores a JSON value, replacing the whole item. */
  set(key: string, value: unknown, options?: SetOptions | null): Promise<void> {
    return Promise.try(() => {
      this.#open("set", key);
      const ttl = optionsTtl("set()", options);
      const entry: Entry = { value: toJson("value", value) };
      if (ttl !== undefined) entry.ttl = Math.ceil(this.#seconds() + ttl);
      this.#store(key, entry, `set ${JSON.stringify(key.slice(0, 40))}`);
    });
  }

  /** Removes `key`; `true` if a live key was removed. */
  delete(key: string): Promise<boolean> {
    return Promise.try(() => {
      this.#open("delete");
      return this.#live(key) !== undefined && this.#items.delete(key);
    });
  }

  /** Whether `key` exists and has not expired. */
  exists(key: string): Promise<boolean> {
    return Promise.try(() => {
      this.#open("exists");
      return this.#live(key) !== undefined;
    });
  }

  /** Live keys matching a glob. */
  keys(pattern = "*"): Promise<string[]> {
    return Promise.try(() => {
      this.#open("keys");
      checkPattern(pattern);
      return [...this.#items.keys()].filter((key) =>
        this.#live(key) !== undefined && globMatch(pattern, key)
      );
    });
  }

  /** Whole seconds until `key` expires, or `null`. */
  ttl(key: string): Promise<number | null> {
    return Promise.try(() => {
      this.#open("ttl");
      const ttl = this.#live(key)?.ttl;
      return ttl === undefined ? null : Math.max(0, Math.floor(ttl - this.#seconds()));
    });
  }

  /** Sets `key` to expire in `seconds` (`<= 0` removes it); `false` when missing. */
  expire(key: string, seconds: number): Promise<boolean> {
    return Promise.try(() => {
      this.#open("expire", key);
      checkTtlSeconds("seconds", seconds, true);
      const entry = this.#live(key);
      if (!entry) return false;
      if (seconds <= 0) this.#items.delete(key);
      else entry.ttl = Math.ceil(this.#seconds() + seconds);
      return true;
    });
  }

  /** A hash field's value, or `null`; `T` names the stored type (not checked). */
  hget<T = unknown>(key: string, field: string): Promise<T | null> {
    return Promise.try(() => {
      this.#open("hget", key);
      checkField(field);
      const value = this.#fields(this.#live(key))?.get(field);
      return value === undefined ? null : JSON.parse(value) as T;
    });
  }

  /** Every field of the hash at `key`, as an object with no prototype. */
  hgetall<T = unknown>(key: string): Promise<Record<string, T>> {
    return Promise.try(() => {
      this.#open("hgetall");
      const all = fieldRecord();
      for (const [k, v] of this.#fields(this.#live(key)) ?? []) setOwn(all, k, JSON.parse(v));
      return all as Record<string, T>;
    });
  }

  /** A copy of the hash an entry's write goes to: its own, or its legacy hash. */
  #hashOf(key: string, entry: Entry): Map<string, string> {
    const fields = this.#fields(entry);
    if (fields) return new Map(fields);
    throw new TypeError(
      `key ${JSON.stringify(key)} holds a value, not a hash; delete it or use set() instead`,
    );
  }

  /** The entry after a hash write: a legacy one migrates (its fields must be storable). */
  #after(key: string, entry: Entry | undefined, hash: Map<string, string>): Entry {
    if (entry?.hash) return { ...entry, hash };
    if (entry) {
      for (const [field, json] of hash) checkMigrating(key, field, JSON.parse(json));
    }
    return entry?.ttl === undefined ? { hash } : { hash, ttl: entry.ttl };
  }

  /** Sets a hash field (1 if new, 0 if updated), as `DynamoDBStateStore.hset` does. */
  hset(key: string, field: string, value: unknown): Promise<number>;
  /** Sets each field of `fields` (and with `ttl`, the key's expiry): how many are new. */
  hset(key: string, fields: Record<string, unknown>, options?: SetOptions | null): Promise<number>;
  hset(key: string, fieldOrFields: unknown, valueOrOptions?: unknown): Promise<number> {
    return Promise.try(() => {
      this.#open("hset", key);
      const { fields, ttl } = checkHsetInput(fieldOrFields, valueOrOptions);
      const entry = this.#live(key);
      const hash = entry ? this.#hashOf(key, entry) : new Map<string, string>();
      let added = 0;
      for (const [field, plain] of fields) {
        if (!hash.has(field)) added++;
        hash.set(field, JSON.stringify(plain));
      }
      const next = this.#after(key, entry, hash);
      if (ttl !== undefined) next.ttl = Math.ceil(this.#seconds() + ttl);
      this.#store(key, next, `key ${JSON.stringify(key.slice(0, 40))}`);
      return added;
    });
  }

  /** Removes hash fields; the number that existed. An emptied hash deletes the key. */
  hdel(key: string, ...fields: string[]): Promise<number> {
    return Promise.try(() => {
      this.#open("hdel", key);
      const unique = checkHdelFields(fields);
      const entry = this.#live(key);
      if (!entry) return 0;
      const hash = this.#hashOf(key, entry);
      const removed = unique.filter((f) => hash.delete(f)).length;
      const next = this.#after(key, entry, hash);
      if (holds(next)) this.#items.set(key, next);
      else this.#items.delete(key);
      return removed;
    });
  }
  /** Ends the store: every later call is refused with {@linkcode StoreClosed}. Idempotent. */
  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }

  /** Same as {@linkcode MemoryStateStore.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Refuses a call on a closed store before anything else, then a bad `key`. */
  #open(method: string, ...key: [string?]): void {
    if (this.#closed) throw new StoreClosed("MemoryStateStore", method);
    if (key.length) checkKey("key", key[0], LIMITS.partitionKeyBytes);
  }
}
