/**
 * `DynamoDBStateStore`: Redis-like keys and hash fields with TTL, in one DynamoDB table.
 *
 * @module
 */
import {
  type DynamoDBClient,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { Attempts, retryingConflicts } from "../dynamo/_lost_answers.ts";
import { OutcomeUnknown } from "../core/errors.ts";
import { checkField, checkItemSize, checkKey, describe, LIMITS } from "../core/_validate.ts";
import { checkCreateOptions, checkOptionsOf } from "../core/_option_names.ts";
import {
  checkHdelFields,
  checkPattern,
  checkTtlSeconds,
  decodeValue,
  fieldRecord,
  legacyFields,
  optionsTtl,
  setOwn,
  toAttribute,
} from "./_state_values.ts";
import { plainAttribute } from "../core/_attributes.ts";
import { toJson } from "../core/_json.ts";
import { type ConnectOptions, connectStore } from "../dynamo/connect.ts";
import type { DynamoDBSender } from "../dynamo/_dynamo.ts";
import { type Item, pages, S } from "../dynamo/_dynamo.ts";
import { globMatch } from "../core/glob.ts";
import { checkClock, secondsOf } from "../core/_clock.ts";
import {
  checkTableExists,
  checkTableName,
  ensureDefinedTable,
  ensureRun,
  type EnsureTablesOptions,
} from "../dynamo/tables.ts";
import { stateTableDefinition } from "../dynamo/table_definitions.ts";
import type { SetOptions, StateStore } from "../core/types.ts";
import { instrument } from "../core/_telemetry.ts";
import { checkClient, ClientOwnership } from "../dynamo/_ownership.ts";
import { STATE, stateKey } from "../core/_layout.ts";
import {
  HOLDS,
  isConditionFailure,
  isLive,
  LIVE,
  N,
  PRESENT_NAMES,
  WRITE_IDS_SIZE,
  ZERO,
} from "./_state_presence.ts";
import { deleteIf, type FieldWrite, removeFields, writeFields } from "./_hash_writes.ts";
import { checkHsetInput } from "./_hset_input.ts";
import {
  deletePresent,
  fieldsOf,
  presentItem,
  readItem,
  RESENDS,
  type StateTable,
  WHOLE_ITEM,
} from "./_state_reads.ts";

/**
 * Options of {@linkcode DynamoDBStateStore}.
 *
 * @example A state table of your own
 * ```ts
 * import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
 * import { DynamoDBStateStore } from "@harel/dynamodb";
 *
 * const state = new DynamoDBStateStore(new DynamoDBClient({}), {
 *   tableName: "agents_state",
 *   consistentReads: false,
 * });
 * ```
 */
export interface DynamoDBStateStoreOptions {
  /** The table's name. @default {"harel_state"} */
  tableName?: string;
  /** Read with strongly consistent reads (read-your-writes). @default {true} */
  consistentReads?: boolean;
  /**
   * The clock TTLs are measured with, in epoch milliseconds, for tests that let time pass
   * (DynamoDB still deletes expired items by its own clock).
   * @default {Date.now}
   */
  now?: () => number;
}

/**
 * Options of {@linkcode DynamoDBStateStore.create}: the store's options plus where DynamoDB is.
 *
 * @example Connecting to LocalStack
 * ```ts
 * import { DynamoDBStateStore } from "@harel/dynamodb";
 *
 * await using state = await DynamoDBStateStore.create({
 *   endpoint: "http://localhost:4566",
 *   tableName: "agents_state",
 * });
 * ```
 */
export interface CreateStateStoreOptions extends DynamoDBStateStoreOptions, ConnectOptions {
  /**
   * Create the table where missing and enable TTL on it. `false` for a cold start: one
   * DescribeTable checks the table exists, else {@linkcode TableNotFound}.
   * @default {true}
   */
  ensureTable?: boolean;
}

/**
 * A Redis-like key/value and hash store in one DynamoDB table (key `pk`, TTL on `ttl`).
 * Every read honours expiry; hash fields are written field by field, so concurrent writers of
 * different fields never lose a write. Legacy items (a hash as JSON in `value`) migrate on
 * their first hash write. Every method refuses a call after `close()` with `StoreClosed`, and a
 * key that is not a non-empty string of at most 2048 bytes with a `TypeError` (`RangeError`).
 *
 * @example Session state
 * ```ts
 * import assert from "node:assert/strict";
 * import { DynamoDBStateStore } from "@harel/dynamodb";
 *
 * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * await state.hset("session:abc", { user: "ann", step: 2 }, { ttl: 3600 }); // one write
 * assert.equal((await state.hgetall("session:abc")).step, 2);
 * ```
 */
export class DynamoDBStateStore implements StateStore {
  /** The table this store uses. */
  readonly tableName: string;
  readonly #client: DynamoDBSender;
  readonly #consistent: boolean;
  readonly #ownership: ClientOwnership;
  readonly #table: StateTable;

  /**
   * A store on an existing client. Sends nothing: call `ensureTable()` once, or use
   * {@linkcode DynamoDBStateStore.create}. The client stays the caller's to destroy.
   *
   * @param client Any DynamoDB client (anything with `send()`).
   * @param options The table name and read consistency.
   */
  constructor(client: Pick<DynamoDBClient, "send">, options: DynamoDBStateStoreOptions = {}) {
    checkClient(client);
    const given = checkOptionsOf("new DynamoDBStateStore()", options);
    this.tableName = checkTableName("tableName", given.tableName ?? "harel_state");
    const consistentReads = given.consistentReads ?? true;
    if (typeof consistentReads !== "boolean") {
      throw new TypeError(
        `consistentReads must be true or false, got ${describe(consistentReads)}`,
      );
    }
    this.#consistent = consistentReads;
    this.#ownership = new ClientOwnership("DynamoDBStateStore", client);
    // The deletes are transactions: a plain write they hold off for a moment is sent again.
    this.#client = retryingConflicts(this.#ownership.gate(client), RESENDS.conflicts);
    const clock = checkClock(given.now ?? Date.now);
    this.#table = {
      client: this.#client,
      tableName: this.tableName,
      resends: RESENDS,
      consistent: consistentReads,
      now: () => secondsOf(clock),
    };
  }

  /**
   * Builds a client (as {@linkcode DynamoDBStore.create} does), waits until DynamoDB answers,
   * and ensures the table (with `ensureTable: false`, only checks it exists). The store owns
   * that client.
   *
   * @param options Where DynamoDB is, how long to wait for it, and the store's options.
   * @returns A store whose table exists with TTL enabled.
   *
   * @throws {TypeError} For options of the wrong type, before anything is sent.
   * @throws {MissingSetup} Without an endpoint, when no AWS region or credentials are found.
   * @throws {EndpointUnreachable} When DynamoDB did not answer within `deadlineMs` (see `onRetry`).
   * @throws {EndpointNotDynamoDB} When something else answered at the endpoint (an HTML page).
   * @throws {TableNotFound} With `ensureTable: false`, when the table is missing.
   * @throws {TableNotReady} When DynamoDB refused a change to the table for good, or ensuring it
   *   took over 10 minutes (`ensureTable()`'s default deadline).
   */
  static create(options: CreateStateStoreOptions = {}): Promise<DynamoDBStateStore> {
    let ensure: boolean, store: DynamoDBStateStoreOptions;
    try {
      ({ options, store, ensure } = checkCreateOptions("DynamoDBStateStore.create()", options));
    } catch (error) {
      return Promise.reject(error);
    }
    let client: DynamoDBSender;
    return connectStore(
      options,
      (built) => new DynamoDBStateStore(client = built, store),
      (store) =>
        ensure ? store.ensureTable() : checkTableExists(
          client,
          store.tableName,
          "create it once at deploy time with `await state.ensureTable()` (or call create() " +
            "without ensureTable: false, which creates it)",
        ),
    );
  }

  /**
   * Creates the table where missing (key `pk`, PAY_PER_REQUEST) with TTL on `ttl`. Idempotent.
   *
   * @example Creating the table at deploy time
   * ```ts
   * import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await new DynamoDBStateStore(new DynamoDBClient({})).ensureTable();
   * ```
   *
   * @param options The deadline (10 minutes by default), and where progress goes.
   * @throws {TableNotReady} When DynamoDB refused a change for good, or the deadline passed.
   * @throws {Error} The SDK's error when the table cannot be created or described (e.g.
   *   `AccessDeniedException` without the IAM actions of `iamPolicy`).
   */
  async ensureTable(options?: EnsureTablesOptions): Promise<void> {
    this.#open("ensureTable");
    const run = ensureRun(options);
    await ensureDefinedTable(this.#client, stateTableDefinition(this.tableName), run);
  }

  /**
   * The value of `key`, or `null` when it is missing, expired, or holds only a hash. `T`
   * names the type you stored (it is not checked, as with Deno KV's `get<T>()`).
   */
  async get<T = unknown>(key: string): Promise<T | null> {
    this.#open("get", key);
    const item = await readItem(this.#table, key, [[STATE.value], [STATE.ttl]]);
    const text = item?.[STATE.value]?.S;
    return text === undefined ? null : decodeValue(text) as T;
  }

  /**
   * Stores `value` (any JSON value) under `key`, replacing the whole item, hash included, like
   * Redis SET. With `ttl`, the key expires after that many seconds (rounded up to a whole
   * second). What JSON would silently change is refused, naming the path, before anything is sent.
   *
   * @throws {TypeError} For a value JSON would change.
   * @throws {RangeError} For a `ttl` that is not seconds above 0 and under 10 years, a value
   *   nested too deep, or an item over 400 KB.
   */
  async set(key: string, value: unknown, options?: SetOptions | null): Promise<void> {
    this.#open("set", key);
    const ttl = optionsTtl("set()", options);
    const item: Item = {
      [STATE.key]: S(key),
      [STATE.value]: S(toJson("value", value)),
      [STATE.updatedAt]: N(Math.floor(this.#table.now())),
    };
    if (ttl !== undefined) item[STATE.ttl] = N(Math.ceil(this.#table.now() + ttl));
    checkItemSize(`set ${JSON.stringify(key.slice(0, 40))}`, item);
    await this.#client.send(new PutItemCommand({ TableName: this.tableName, Item: item }));
  }

  /**
   * Removes `key`; `true` if a live key was removed, exact even after a lost answer (a one-item
   * transaction with an idempotency token, 2 write units). An expired leftover is removed too
   * and answers `false`.
   *
   * @throws {OutcomeUnknown} When no answer came back after 3 re-sends: the key may be gone.
   */
  async delete(key: string): Promise<boolean> {
    this.#open("delete", key);
    const removed = await deletePresent(this.#table, "delete", key, true);
    if (removed.applied) return true;
    if (removed.found !== undefined || removed.unreadable) {
      // An expired or emptied leftover goes too, unless a live key was written since.
      await deleteIf(this.#table, key, {
        ConditionExpression: `NOT (${LIVE} AND ${HOLDS})`,
        ExpressionAttributeNames: PRESENT_NAMES,
        ExpressionAttributeValues: { ":now": N(this.#table.now()), ":zero": ZERO },
      });
    }
    return false;
  }

  /** Whether `key` exists and has not expired. An emptied hash does not exist, as in Redis. */
  async exists(key: string): Promise<boolean> {
    this.#open("exists", key);
    return (await presentItem(this.#table, key)) !== undefined;
  }

  /** Every live key matching the glob `pattern` (`*`, `?`, `[...]`), in scan order. */
  async keys(pattern = "*"): Promise<string[]> {
    this.#open("keys");
    checkPattern(pattern);
    const keys: string[] = [];
    const scan = async (start: Item | undefined) => {
      const now = this.#table.now();
      const page = await this.#client.send(
        new ScanCommand({
          TableName: this.tableName,
          ProjectionExpression: `${STATE.key}, #t`,
          FilterExpression: `${LIVE} AND ${HOLDS}`,
          ExpressionAttributeNames: PRESENT_NAMES,
          ExpressionAttributeValues: { ":now": N(now), ":zero": ZERO },
          ConsistentRead: this.#consistent,
          ExclusiveStartKey: start,
        }),
      );
      return { ...page, now };
    };
    for await (const { Items, now } of pages(scan)) {
      for (const item of Items ?? []) {
        const key = item[STATE.key]?.S;
        if (key !== undefined && isLive(item, now) && globMatch(pattern, key)) keys.push(key);
      }
    }
    return keys;
  }

  /**
   * Whole seconds until `key` expires (rounded down), or `null` when it has no TTL or
   * does not exist.
   *
   * @example Reading the time left
   * ```ts
   * import assert from "node:assert/strict";
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await state.set("otp:alice", "493021", { ttl: 300 });
   * const left = await state.ttl("otp:alice");
   * assert.ok(left === 299 || left === 300);
   * ```
   */
  async ttl(key: string): Promise<number | null> {
    this.#open("ttl", key);
    const ttl = (await presentItem(this.#table, key))?.[STATE.ttl]?.N;
    return ttl === undefined ? null : Math.max(0, Math.floor(Number(ttl) - this.#table.now()));
  }

  /**
   * Sets `key` to expire in `seconds` from now (Redis EXPIRE, rounded up); `false` when the key
   * is missing or expired. `seconds <= 0` removes it as `delete` does. Over 10 years is refused
   * as the unit mix-up it almost surely is.
   *
   * @example Setting a TTL
   * ```ts
   * import assert from "node:assert/strict";
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await state.hset("session:abc", "step", 1);
   * assert.equal(await state.expire("session:abc", 3600), true);
   * assert.equal(await state.expire("no-such-key", 3600), false);
   * ```
   *
   * @throws {RangeError} For `seconds` that is not a finite number, or over 10 years.
   * @throws {OutcomeUnknown} When a lost answer leaves unknown what this call did.
   */
  async expire(key: string, seconds: number): Promise<boolean> {
    this.#open("expire", key);
    checkTtlSeconds("seconds", seconds, true);
    if (seconds <= 0) return (await deletePresent(this.#table, "expire", key, false)).applied;
    const now = this.#table.now();
    const command = new UpdateItemCommand({
      TableName: this.tableName,
      Key: stateKey(key),
      UpdateExpression: `SET #t = :ttl, ${STATE.updatedAt} = :at`,
      ConditionExpression: `attribute_exists(${STATE.key}) AND ${LIVE} AND ${HOLDS}`,
      ExpressionAttributeNames: PRESENT_NAMES,
      ExpressionAttributeValues: {
        ":now": N(now),
        ":zero": ZERO,
        ":ttl": N(Math.ceil(now + seconds)),
        ":at": N(Math.floor(now)),
      },
    });
    const attempts = new Attempts(command);
    try {
      // A copy re-sent after a lost answer finds the key still present: it answers true too.
      await this.#client.send(command);
      return true;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      if (attempts.earlierMayHaveApplied(error)) {
        throw new OutcomeUnknown(
          "expire",
          key,
          "the key is missing now, but an earlier copy of this write, whose answer was lost, may have set its expiry before another writer removed it",
          { cause: error },
        );
      }
      return false;
    }
  }

  /**
   * The hash field's value, or `null` when the field or the key is gone. `T` names the type you
   * stored (not checked).
   *
   * @throws {TypeError} For a field that is not a non-empty string (`RangeError`: over 65,535 bytes).
   */
  async hget<T = unknown>(key: string, field: string): Promise<T | null> {
    this.#open("hget", key);
    checkField(field);
    const oneField = [[STATE.key], [STATE.ttl], [STATE.value], [STATE.hash, field]];
    let item = await readItem(this.#table, key, oneField);
    const native = item?.[STATE.hash]?.M;
    if (native && Object.hasOwn(native, field)) return plainAttribute(native[field]!) as T;
    // The projection of a Map lacking the field is empty, like no Map: only the whole item
    // tells whether a legacy value's field counts.
    if (
      item && native === undefined && Object.hasOwn(legacyFields(item[STATE.value]?.S) ?? {}, field)
    ) {
      item = await readItem(this.#table, key, WHOLE_ITEM);
    } else if (native === undefined) {
      return null;
    }
    const fields = fieldsOf(item);
    return fields && Object.hasOwn(fields, field) ? fields[field] as T : null;
  }

  /**
   * Every field of the hash at `key`; `{}` when the key is missing or expired. The result has
   * no prototype, so every property is a field. `T` names the fields' type (not checked).
   */
  async hgetall<T = unknown>(key: string): Promise<Record<string, T>> {
    this.#open("hgetall", key);
    const fields = fieldsOf(
      await readItem(this.#table, key, WHOLE_ITEM),
    );
    return (fields ?? fieldRecord()) as Record<string, T>;
  }

  /**
   * Sets one hash field (`1` if new, `0` if updated), or each field of an object (how many are
   * new), as Redis's HSET. With `{ ttl }` the fields and the key's expiry are written together
   * (Redis's HSETEX); without it the key keeps its TTL. One UpdateItem when the hash exists (at
   * most 230 fields). Values follow `set`'s rule and must fit a native DynamoDB value
   * (docs/state_store.md).
   *
   * @example Setting a field, then a session of fields with a TTL
   * ```ts
   * import assert from "node:assert/strict";
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await state.delete("session:abc");
   * assert.equal(await state.hset("session:abc", "step", 1), 1); // a new field
   * assert.equal(await state.hset("session:abc", "step", 2), 0); // updated
   * assert.equal(await state.hset("session:abc", { user: "ann", step: 3 }, { ttl: 1800 }), 1);
   * ```
   *
   * @throws {TypeError} For a key, field or value as described above, or an empty `fields`
   *   object (a `RangeError` for one out of range or too many fields), before anything is sent.
   * @throws {WriteContention} When other writers of the key won 20 races in a row.
   * @throws {OutcomeUnknown} When a re-sent copy found a field already set: the fields hold
   *   their values, but how many were new is unknown.
   */
  hset(key: string, field: string, value: unknown): Promise<number>;
  /** Sets each field of `fields` (and with `ttl`, the key's expiry): how many are new. */
  hset(key: string, fields: Record<string, unknown>, options?: SetOptions | null): Promise<number>;
  async hset(key: string, fieldOrFields: unknown, valueOrOptions?: unknown): Promise<number> {
    this.#open("hset", key);
    const { fields, ttl } = checkHsetInput(fieldOrFields, valueOrOptions);
    const writes = fields.map(([field, plain]): FieldWrite => [field, plain, toAttribute(plain)]);
    const hash: Record<string, unknown> = {};
    for (const [field, , native] of writes) setOwn(hash, field, native);
    const item: Item = {
      [STATE.key]: S(key),
      [STATE.hash]: { M: hash as Item },
      [STATE.updatedAt]: N(0),
      [STATE.ttl]: N(0),
      ...WRITE_IDS_SIZE,
    };
    const first = fields[0]![0];
    checkItemSize(
      fields.length === 1 ? `hset field ${JSON.stringify(first.slice(0, 40))}` : "hset fields",
      item,
    );
    return await writeFields(this.#table, key, writes, ttl);
  }

  /**
   * Removes hash fields; returns exactly how many existed (two concurrent `hdel`s of one field
   * count 1 in total). Removing the last field deletes the key, as in Redis. More fields than
   * one write can name (some 400) are removed a batch at a time.
   *
   * @example Deleting fields
   * ```ts
   * import assert from "node:assert/strict";
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await state.delete("session:abc");
   * await state.hset("session:abc", "step", 1);
   * assert.equal(await state.hdel("session:abc", "step", "absent"), 1);
   * assert.equal(await state.exists("session:abc"), false); // the last field took the key
   * ```
   *
   * @throws {TypeError} For a key or field as `hget` refuses, before anything is sent.
   * @throws {WriteContention} When other writers of the key won 20 races in a row.
   * @throws {OutcomeUnknown} When a re-sent copy found some fields already gone: the fields
   *   are gone, but the count is unknown.
   */
  async hdel(key: string, ...fields: string[]): Promise<number> {
    this.#open("hdel", key);
    const all = checkHdelFields(fields);
    return await removeFields(this.#table, key, all);
  }

  /**
   * Releases the client if `create()` built it (a client passed in stays the caller's); every
   * later call is refused with {@linkcode StoreClosed}. Idempotent.
   */
  close(): Promise<void> {
    return this.#ownership.close();
  }

  /** Same as {@linkcode DynamoDBStateStore.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Refuses a call on a closed store before anything else, then a bad `key`. */
  #open(method: string, ...key: [string?]): void {
    this.#ownership.open(method);
    if (key.length) checkKey("key", key[0], LIMITS.partitionKeyBytes);
  }
}

instrument(DynamoDBStateStore);
