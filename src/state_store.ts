/**
 * `DynamoDBStateStore`: Redis-like keys and hash fields with TTL, in one DynamoDB table.
 *
 * @module
 */
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import { marshall, unmarshall } from "@aws-sdk/util-dynamodb";
import { checkField, checkKey, checkTime, describe, LIMITS, toJson } from "./_validate.ts";
import {
  claimClient,
  type ConnectOptions,
  connectStore,
  type DynamoDBSender,
  isNamed,
} from "./connect.ts";
import { globMatch } from "./glob.ts";
import { checkTableName, ensureTable, ensureTtl } from "./tables.ts";
import type { SetOptions, StateStore } from "./types.ts";
import { instrument } from "./_telemetry.ts";

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
export interface CreateStateStoreOptions extends DynamoDBStateStoreOptions, ConnectOptions {}

type Item = Record<string, AttributeValue>;

const S = (value: string): AttributeValue => ({ S: value });
const N = (value: number): AttributeValue => ({ N: String(value) });
const nowSeconds = () => Date.now() / 1000;
/** `#t` is `ttl`: alive while there is no ttl or it lies ahead. */
const LIVE = "(attribute_not_exists(#t) OR #t > :now)";
/** How often a write re-reads after losing a race against another writer's migration. */
const MAX_RACES = 20;

function isConditionFailure(error: unknown): error is Error & { Item?: Item } {
  return isNamed(error, "ConditionalCheckFailedException");
}

function isLive(item: Item | undefined, now: number): item is Item {
  if (!item) return false;
  const ttl = item.ttl?.N;
  return ttl === undefined || Number(ttl) > now;
}

/** A stored `value`: JSON text, or (legacy writers) a raw string that reads back as itself. */
function decodeValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The legacy hash a `value` holds (a JSON object), else undefined. */
function legacyHash(item: Item): Record<string, unknown> | undefined {
  const text = item.value?.S;
  if (text === undefined) return undefined;
  const value = decodeValue(text);
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

/**
 * A Redis-like key/value and hash store in one DynamoDB table (key `pk`, TTL on `ttl`).
 * Every read honours expiry; hash fields live in a native Map and are written one
 * field at a time, so concurrent writers of different fields never lose a write. Items
 * of the legacy layout (a hash as a JSON string in `value`) read transparently and
 * migrate on their first hash write.
 *
 * @example Session state
 * ```ts
 * import { DynamoDBStateStore } from "@harel/dynamodb";
 *
 * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
 * await state.hset("session:abc", "step", 2);
 * await state.expire("session:abc", 3600);
 * console.log(await state.hgetall("session:abc")); // { step: 2 }
 * ```
 */
export class DynamoDBStateStore implements StateStore {
  /** The table this store uses. */
  readonly tableName: string;
  readonly #client: DynamoDBSender;
  readonly #consistent: boolean;
  readonly #ownedClient: DynamoDBClient | null;
  #closed = false;

  /**
   * A store on an existing client. Sends nothing: call `ensureTable()` once, or use
   * {@linkcode DynamoDBStateStore.create}. The client stays the caller's to destroy.
   *
   * @param client Any DynamoDB client (anything with `send()`).
   * @param options The table name and read consistency.
   */
  constructor(client: DynamoDBClient, options: DynamoDBStateStoreOptions = {}) {
    if (typeof (client as { send?: unknown })?.send !== "function") {
      throw new TypeError(
        `client must be a DynamoDB client (with send()), got ${describe(client)}`,
      );
    }
    this.tableName = checkTableName("tableName", options.tableName ?? "harel_state");
    this.#consistent = options.consistentReads ?? true;
    this.#client = client;
    this.#ownedClient = claimClient(client);
  }

  /**
   * Builds a client (as {@linkcode DynamoDBStore.create} does), waits with backoff until
   * DynamoDB answers, and ensures the table. The store owns that client.
   *
   * @example Creating a store
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({
   *   endpoint: "http://127.0.0.1:8000",
   *   tableName: "demo_state",
   * });
   * ```
   *
   * @param options Where DynamoDB is, how long to wait for it, and the store's options.
   * @returns A store whose table exists with TTL enabled.
   */
  static create(options: CreateStateStoreOptions = {}): Promise<DynamoDBStateStore> {
    return connectStore(
      options,
      (client) => new DynamoDBStateStore(client, options),
      (store) => store.ensureTable(),
    );
  }

  /**
   * Creates the table where missing (key `pk`, PAY_PER_REQUEST) and enables TTL on `ttl`.
   * Idempotent.
   *
   * @example Creating the table at deploy time
   * ```ts
   * import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await new DynamoDBStateStore(new DynamoDBClient({})).ensureTable();
   * ```
   */
  async ensureTable(): Promise<void> {
    await ensureTable(this.#client, { name: this.tableName, hash: ["pk", "S"] });
    await ensureTtl(this.#client, this.tableName, "ttl");
  }

  /** The live item at `key` (or undefined), projected on `paths` (each a list of names). */
  async #read(key: string, paths: string[][]): Promise<Item | undefined> {
    const names: Record<string, string> = {};
    const projection = paths.map((path) =>
      path.map((name) => {
        const alias = `#p${Object.keys(names).length}`;
        names[alias] = name;
        return alias;
      }).join(".")
    );
    const result = await this.#client.send(
      new GetItemCommand({
        TableName: this.tableName,
        Key: { pk: S(key) },
        ProjectionExpression: projection.join(", "),
        ExpressionAttributeNames: names,
        ConsistentRead: this.#consistent,
      }),
    );
    return isLive(result.Item, nowSeconds()) ? result.Item : undefined;
  }

  /**
   * The value of `key`, or `null` when it is missing, expired, or holds only a hash.
   *
   * @example Reading a value
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * await state.set("greeting", { text: "hi" });
   * console.log(await state.get("greeting")); // { text: "hi" }
   * ```
   */
  async get(key: string): Promise<unknown | null> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const item = await this.#read(key, [["value"], ["ttl"]]);
    const text = item?.value?.S;
    return text === undefined ? null : decodeValue(text);
  }

  /**
   * Stores `value` (any JSON value) under `key`, replacing the whole item — a hash
   * included — like Redis SET. With `ttl`, the key expires after that many seconds.
   *
   * @example Setting a value with a TTL
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * await state.set("otp:alice", "493021", { ttl: 300 });
   * ```
   */
  async set(key: string, value: unknown, options: SetOptions = {}): Promise<void> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const item: Item = {
      pk: S(key),
      value: S(toJson("value", value)),
      updated_at: N(Math.floor(nowSeconds())),
    };
    if (options.ttl !== undefined) item.ttl = N(this.#expiry("options.ttl", options.ttl));
    await this.#client.send(new PutItemCommand({ TableName: this.tableName, Item: item }));
  }

  /** Epoch second at which a key set now with `seconds` of life expires (never early). */
  #expiry(field: string, seconds: number): number {
    if (checkTime(field, seconds) === 0) {
      throw new RangeError(`${field} must be more than 0 seconds, got 0`);
    }
    return Math.ceil(nowSeconds() + seconds);
  }

  /**
   * Removes `key`; `true` if a live key was removed.
   *
   * @example Deleting a key
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * console.log(await state.delete("greeting"));
   * ```
   */
  async delete(key: string): Promise<boolean> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const result = await this.#client.send(
      new DeleteItemCommand({
        TableName: this.tableName,
        Key: { pk: S(key) },
        ReturnValues: "ALL_OLD",
      }),
    );
    return isLive(result.Attributes, nowSeconds());
  }

  /**
   * Whether `key` exists and has not expired.
   *
   * @example Checking a key
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * console.log(await state.exists("greeting"));
   * ```
   */
  async exists(key: string): Promise<boolean> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    return (await this.#read(key, [["pk"], ["ttl"]])) !== undefined;
  }

  /**
   * Every live key matching the glob `pattern` (`*`, `?`, `[...]`), across all scan pages.
   * Reads only keys and TTLs, never values. The order is DynamoDB's scan order.
   *
   * @example Listing keys by pattern
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * console.log(await state.keys("session:*"));
   * ```
   */
  async keys(pattern = "*"): Promise<string[]> {
    if (typeof pattern !== "string") {
      throw new TypeError(`pattern must be a glob string, got ${describe(pattern)}`);
    }
    const keys: string[] = [];
    let start: Item | undefined;
    do {
      const now = nowSeconds();
      const page = await this.#client.send(
        new ScanCommand({
          TableName: this.tableName,
          ProjectionExpression: "pk, #t",
          FilterExpression: LIVE,
          ExpressionAttributeNames: { "#t": "ttl" },
          ExpressionAttributeValues: { ":now": N(now) },
          ConsistentRead: this.#consistent,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        const key = item.pk?.S;
        if (key !== undefined && isLive(item, now) && globMatch(pattern, key)) keys.push(key);
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return keys;
  }

  /**
   * Whole seconds until `key` expires (rounded down), or `null` when it has no TTL or
   * does not exist.
   *
   * @example Reading the time left
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * await state.set("otp:alice", "493021", { ttl: 300 });
   * console.log(await state.ttl("otp:alice")); // 299 or 300
   * ```
   */
  async ttl(key: string): Promise<number | null> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const ttl = (await this.#read(key, [["pk"], ["ttl"]]))?.ttl?.N;
    return ttl === undefined ? null : Math.max(0, Math.floor(Number(ttl) - nowSeconds()));
  }

  /**
   * Sets `key` to expire in `seconds`; `false` when the key is missing or expired.
   * `seconds <= 0` expires it now (it is removed).
   *
   * @example Setting a TTL
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * await state.hset("session:abc", "step", 1);
   * console.log(await state.expire("session:abc", 3600)); // true
   * ```
   */
  async expire(key: string, seconds: number): Promise<boolean> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    if (typeof seconds !== "number" || !Number.isFinite(seconds)) {
      throw new RangeError(`seconds must be a finite number, got ${describe(seconds)}`);
    }
    const now = nowSeconds();
    const live = {
      ConditionExpression: `attribute_exists(pk) AND ${LIVE}`,
      ExpressionAttributeNames: { "#t": "ttl" },
    };
    try {
      if (seconds <= 0) {
        await this.#client.send(
          new DeleteItemCommand({
            TableName: this.tableName,
            Key: { pk: S(key) },
            ...live,
            ExpressionAttributeValues: { ":now": N(now) },
          }),
        );
      } else {
        await this.#client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: { pk: S(key) },
            UpdateExpression: "SET #t = :ttl, updated_at = :at",
            ...live,
            ExpressionAttributeValues: {
              ":now": N(now),
              ":ttl": N(this.#expiry("seconds", seconds)),
              ":at": N(Math.floor(now)),
            },
          }),
        );
      }
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  /**
   * The hash field's value, or `null` when the field, the key or its life is gone.
   *
   * @example Reading one field
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * await state.hset("session:abc", "step", 2);
   * console.log(await state.hget("session:abc", "step")); // 2
   * ```
   */
  async hget(key: string, field: string): Promise<unknown | null> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    checkField(field);
    // `hash.<field>` reads just that field; `value` is there for legacy items.
    const item = await this.#read(key, [["pk"], ["ttl"], ["value"], ["hash", field]]);
    return this.#fields(item)?.[field] ?? null;
  }

  /** The fields of a live item: its native Map, else its legacy JSON hash. */
  #fields(item: Item | undefined): Record<string, unknown> | undefined {
    if (!item) return undefined;
    if (item.hash?.M) return unmarshall(item.hash.M);
    return item.hash === undefined ? legacyHash(item) : undefined;
  }

  /**
   * Every field of the hash at `key`; `{}` when the key is missing or expired.
   *
   * @example Reading every field
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * console.log(await state.hgetall("session:abc"));
   * ```
   */
  async hgetall(key: string): Promise<Record<string, unknown>> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    return this.#fields(await this.#read(key, [["pk"], ["ttl"], ["value"], ["hash"]])) ?? {};
  }

  /**
   * Sets one hash field: `1` if the field is new, `0` if it was updated. One call when
   * the hash exists; an expired key starts a fresh hash (without TTL), and a legacy item
   * migrates to a native Map keeping its fields.
   *
   * @example Setting a field
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * console.log(await state.hset("session:abc", "step", 1)); // 1 (new field)
   * console.log(await state.hset("session:abc", "step", 2)); // 0 (updated)
   * ```
   */
  async hset(key: string, field: string, value: unknown): Promise<number> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    checkField(field);
    toJson("value", value); // refuses what JSON cannot carry, as `set` does
    const native = marshall({ v: value }, { removeUndefinedValues: true }).v!;
    for (let race = 0; race < MAX_RACES; race++) {
      const now = nowSeconds();
      try {
        const result = await this.#client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: { pk: S(key) },
            UpdateExpression: "SET #h.#f = :v, updated_at = :at",
            ConditionExpression: `attribute_type(#h, :map) AND ${LIVE}`,
            ExpressionAttributeNames: { "#h": "hash", "#f": field, "#t": "ttl" },
            ExpressionAttributeValues: {
              ":v": native,
              ":at": N(Math.floor(now)),
              ":map": S("M"),
              ":now": N(now),
            },
            ReturnValues: "UPDATED_OLD",
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          }),
        );
        return result.Attributes?.hash?.M?.[field] === undefined ? 1 : 0;
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        // No live Map yet: seed one (from the legacy hash if any) holding the field.
        const seeded = await this.#seed(key, error.Item, now, (fields) => {
          const isNew = !(field in fields);
          fields[field] = value;
          return isNew ? 1 : 0;
        });
        if (seeded !== undefined) return seeded;
      }
    }
    throw new Error(
      `hset ${JSON.stringify(key)}: lost ${MAX_RACES} races in a row to other writers`,
    );
  }

  /**
   * Removes hash fields; returns exactly how many existed (from the write's own
   * answer, so two concurrent `hdel`s of one field count 1 in total).
   *
   * @example Deleting fields
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * await state.hset("session:abc", "step", 1);
   * console.log(await state.hdel("session:abc", "step", "absent")); // 1
   * ```
   */
  async hdel(key: string, ...fields: string[]): Promise<number> {
    checkKey("key", key, LIMITS.partitionKeyBytes);
    if (fields.length === 0) throw new TypeError("hdel needs at least one field");
    const unique = [...new Set(fields.map((f, i) => checkField(f, `fields[${i}]`)))];
    const names: Record<string, string> = { "#h": "hash", "#t": "ttl" };
    unique.forEach((f, i) => names[`#f${i}`] = f);
    for (let race = 0; race < MAX_RACES; race++) {
      const now = nowSeconds();
      const input: UpdateItemCommandInput = {
        TableName: this.tableName,
        Key: { pk: S(key) },
        UpdateExpression: `REMOVE ${
          unique.map((_, i) => `#h.#f${i}`).join(", ")
        } SET updated_at = :at`,
        ConditionExpression: `attribute_type(#h, :map) AND ${LIVE}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ":at": N(Math.floor(now)), ":map": S("M"), ":now": N(now) },
        ReturnValues: "UPDATED_OLD",
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      };
      try {
        const result = await this.#client.send(new UpdateItemCommand(input));
        const old = result.Attributes?.hash?.M ?? {};
        return unique.filter((f) => old[f] !== undefined).length;
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        if (!isLive(error.Item, now)) return 0;
        const removed = await this.#seed(key, error.Item, now, (legacy) => {
          const present = unique.filter((f) => f in legacy);
          for (const f of present) delete legacy[f];
          return present.length;
        });
        if (removed !== undefined) return removed;
      }
    }
    throw new Error(
      `hdel ${JSON.stringify(key)}: lost ${MAX_RACES} races in a row to other writers`,
    );
  }

  /**
   * Writes a native hash Map where the item `old` (from ALL_OLD) had none: a fresh one
   * when the key is missing or expired, else the legacy hash migrated out of `value`.
   * `change` edits the fields and gives the result. The write is conditioned on the
   * item being as `old` showed it, so it never clobbers a concurrent seeder; `undefined`
   * means it lost that race and the caller starts over.
   */
  async #seed(
    key: string,
    old: Item | undefined,
    now: number,
    change: (fields: Record<string, unknown>) => number,
  ): Promise<number | undefined> {
    const live = isLive(old, now);
    if (live && old.hash !== undefined) {
      throw new TypeError(
        `key ${JSON.stringify(key)} has a "hash" attribute that is not a Map; not overwriting it`,
      );
    }
    const legacy = live ? legacyHash(old) : undefined;
    if (live && old.value !== undefined && legacy === undefined) {
      throw new TypeError(
        `key ${JSON.stringify(key)} holds a value, not a hash; delete it or use set() instead`,
      );
    }
    const fields = legacy ?? {};
    const result = change(fields);
    const map = marshall(fields, { removeUndefinedValues: true });
    try {
      if (!live) {
        // Missing or expired: a fresh item, no TTL. Only if still nothing live is there.
        await this.#client.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: { pk: S(key), hash: { M: map }, updated_at: N(Math.floor(now)) },
            ConditionExpression: "attribute_not_exists(pk) OR #t <= :now",
            ExpressionAttributeNames: { "#t": "ttl" },
            ExpressionAttributeValues: { ":now": N(now) },
          }),
        );
      } else {
        const unchanged = old.value === undefined ? "attribute_not_exists(#v)" : "#v = :old";
        const values: Item = { ":m": { M: map }, ":at": N(Math.floor(now)) };
        if (old.value !== undefined) values[":old"] = old.value;
        await this.#client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: { pk: S(key) },
            UpdateExpression: "SET #h = :m, updated_at = :at REMOVE #v",
            ConditionExpression:
              `attribute_exists(pk) AND attribute_not_exists(#h) AND ${unchanged}`,
            ExpressionAttributeNames: { "#h": "hash", "#v": "value" },
            ExpressionAttributeValues: values,
          }),
        );
      }
      return result;
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  /**
   * Releases the client if `create()` built it. Idempotent.
   *
   * @example Closing a store
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * const state = await DynamoDBStateStore.create({ endpoint: "http://127.0.0.1:8000" });
   * await state.close();
   * ```
   */
  close(): Promise<void> {
    if (!this.#closed) this.#ownedClient?.destroy();
    this.#closed = true;
    return Promise.resolve();
  }

  /** Same as {@linkcode DynamoDBStateStore.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

// Every public method in a span `DynamoDBStateStore.{method}` (see _telemetry.ts).
instrument(DynamoDBStateStore);
