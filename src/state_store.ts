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
import {
  checkField,
  checkItemSize,
  checkKey,
  checkOptions,
  describe,
  LIMITS,
  utf8Length,
} from "./_validate.ts";
import {
  checkHdelFields,
  checkMigrating,
  checkPattern,
  checkTtlSeconds,
  decodeValue,
  fieldRecord,
  fromAttribute,
  fromMap,
  legacyFields,
  numberText,
  plainJson,
  plainValue,
  setOwn,
  setTtl,
  toAttribute,
} from "./_state_values.ts";
import { type ConnectOptions, connectStore, type DynamoDBSender } from "./connect.ts";
import { isNamed, type Item, pages, S } from "./_dynamo.ts";
import { globMatch } from "./glob.ts";
import { checkTableExists, checkTableName, ensureTable, ensureTtl } from "./tables.ts";
import type { SetOptions, StateStore } from "./types.ts";
import { instrument } from "./_telemetry.ts";
import { checkClient, ClientOwnership } from "./_ownership.ts";
import { WriteContention } from "./errors.ts";
import { STATE, stateKey } from "./_layout.ts";

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
export interface CreateStateStoreOptions extends DynamoDBStateStoreOptions, ConnectOptions {
  /**
   * Create the table where missing and enable TTL on it. `false` for a cold start that goes
   * straight to work: one DescribeTable checks that DynamoDB answers and the table was
   * created (at deploy time, with `ensureTable()`); a missing table is an immediate
   * {@linkcode TableNotFound}.
   * @default {true}
   */
  ensureTable?: boolean;
}

/** A number attribute: here also fractional (`now`) and stored numbers, in DynamoDB's text. */
const N = (value: number): AttributeValue => ({ N: numberText(value) });
const nowSeconds = () => Date.now() / 1000;
/** `#t` is `ttl`: alive while there is no ttl or it lies ahead. */
const LIVE = "(attribute_not_exists(#t) OR #t > :now)";
/** `#v` is `value`, `#h` is `hash`: a key holding neither a value nor a hash field is absent. */
const HOLDS = "(attribute_exists(#v) OR size(#h) > :zero)";
/** The names and values LIVE and HOLDS use. */
const PRESENT_NAMES = { "#t": STATE.ttl, "#v": STATE.value, "#h": STATE.hash } as const;
/** What a read of the whole item projects (every attribute but `updated_at`). */
const WHOLE_ITEM = [[STATE.key], [STATE.ttl], [STATE.value], [STATE.hash]];
const ZERO: AttributeValue = { N: "0" };
/** How often a write re-reads after losing a race against another writer's migration. */
const MAX_RACES = 20;

function isConditionFailure(error: unknown): error is Error & { Item?: Item } {
  return isNamed(error, "ConditionalCheckFailedException");
}

function isLive(item: Item | undefined, now: number): item is Item {
  if (!item) return false;
  const ttl = item[STATE.ttl]?.N;
  return ttl === undefined || Number(ttl) > now;
}

/**
 * Whether an item holds a value or a hash field: what HOLDS checks on the server, where
 * `size()` of a number, boolean or null is no size at all.
 */
function holds(item: Item): boolean {
  if (item[STATE.value] !== undefined) return true;
  const hash = item[STATE.hash];
  if (hash === undefined) return false;
  const sized = hash.M ? Object.keys(hash.M) : hash.L ?? hash.S ?? hash.B ?? hash.SS ?? hash.NS ??
    hash.BS;
  return (sized?.length ?? 0) > 0;
}

/** Live and holding something: what every method treats as an existing key. */
function isPresent(item: Item | undefined, now: number): item is Item {
  return isLive(item, now) && holds(item);
}

/**
 * A lost condition whose `ALL_OLD` item the SDK could not read back: its response parser
 * throws a `TypeError` on a map key named `__proto__` (a field name we allow). Such a write
 * re-reads the item instead.
 */
function isUnreadableFailure(error: unknown): boolean {
  return error instanceof TypeError &&
    (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 400;
}

/** DynamoDB's refusal of an update that would grow an item past 400 KB. */
function isItemTooLarge(error: unknown): boolean {
  return isNamed(error, "ValidationException") &&
    /item size.*exceed|exceed.*item size/i.test((error as Error).message);
}

/** DynamoDB's limits on one request's expressions (the developer guide's "Constraints"). */
const EXPRESSION_BYTES = 4 * 1024;
/** The sum of a request's ExpressionAttributeNames and ExpressionAttributeValues: 2 MB. */
const SUBSTITUTION_BYTES = 2 * 1024 * 1024;
/**
 * An expression with its names substituted: DynamoDB Local refuses one over 1 MB as "Expression
 * size has exceeded the maximum allowed size" (measured; the guide does not say), so we keep
 * to it too.
 */
const SUBSTITUTED_BYTES = 1024 * 1024;

/**
 * Where the batch of `hdel` fields from `start` ends: as many as one UpdateItem can name
 * within EXPRESSION_BYTES (some 400 short fields), SUBSTITUTION_BYTES and SUBSTITUTED_BYTES
 * (some 16 fields of 64 KB); at least one. Counted in UTF-8 bytes, the fixed parts generously.
 */
function hdelBatchEnd(fields: string[], start: number): number {
  let expression = `REMOVE  SET ${STATE.updatedAt} = :at`.length;
  let substitution = 256; // PRESENT_NAMES and the four values
  let substituted = expression;
  let end = start;
  for (; end < fields.length; end++) {
    const alias = `#f${end - start}`;
    const path = `#h.${alias}, `.length;
    const bytes = utf8Length(fields[end]!);
    const full = expression + path > EXPRESSION_BYTES ||
      substitution + alias.length + bytes > SUBSTITUTION_BYTES ||
      substituted + `${STATE.hash}., `.length + bytes > SUBSTITUTED_BYTES;
    if (full && end > start) break;
    expression += path;
    substitution += alias.length + bytes;
    substituted += `${STATE.hash}., `.length + bytes;
  }
  return end;
}

/** DynamoDB's 400 KB refusal of a hash write, as the RangeError a check before sending gives. */
function tooLarge(key: string, cause: unknown): RangeError {
  return new RangeError(
    `key ${
      JSON.stringify(key.slice(0, 40))
    }: the item would exceed DynamoDB's ${LIMITS.itemBytes}-byte (400 KB) item limit`,
    { cause },
  );
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
 * import assert from "node:assert/strict";
 * import { DynamoDBStateStore } from "@harel/dynamodb";
 *
 * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * await state.hset("session:abc", "step", 2);
 * await state.expire("session:abc", 3600);
 * assert.equal((await state.hgetall("session:abc")).step, 2);
 * ```
 */
export class DynamoDBStateStore implements StateStore {
  /** The table this store uses. */
  readonly tableName: string;
  readonly #client: DynamoDBSender;
  readonly #consistent: boolean;
  readonly #ownership: ClientOwnership;

  /**
   * A store on an existing client. Sends nothing: call `ensureTable()` once, or use
   * {@linkcode DynamoDBStateStore.create}. The client stays the caller's to destroy.
   *
   * @param client Any DynamoDB client (anything with `send()`).
   * @param options The table name and read consistency.
   */
  constructor(client: Pick<DynamoDBClient, "send">, options: DynamoDBStateStoreOptions = {}) {
    checkClient(client);
    const given = checkOptions(options);
    this.tableName = checkTableName("tableName", given.tableName ?? "harel_state");
    const consistentReads = given.consistentReads ?? true;
    if (typeof consistentReads !== "boolean") {
      throw new TypeError(
        `consistentReads must be true or false, got ${describe(consistentReads)}`,
      );
    }
    this.#consistent = consistentReads;
    this.#ownership = new ClientOwnership("DynamoDBStateStore", client);
    this.#client = this.#ownership.gate(client);
  }

  /**
   * Builds a client (as {@linkcode DynamoDBStore.create} does), waits with backoff until
   * DynamoDB answers, and ensures the table — or, with `ensureTable: false`, only checks
   * with one DescribeTable that it exists. The store owns that client.
   *
   * @example Creating a store
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({
   *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
   *   tableName: "demo_state",
   * });
   * ```
   *
   * @param options Where DynamoDB is, how long to wait for it, and the store's options.
   * @returns A store whose table exists with TTL enabled.
   *
   * @throws {TypeError} For options of the wrong type, before anything is sent.
   * @throws {MissingSetup} Without an endpoint, when no AWS region or credentials are found.
   * @throws {EndpointUnreachable} When DynamoDB did not answer within `deadlineMs`.
   * @throws {TableNotFound} With `ensureTable: false`, when the table is missing.
   */
  static create(options: CreateStateStoreOptions = {}): Promise<DynamoDBStateStore> {
    try {
      options = checkOptions(options); // null is no options
    } catch (error) {
      return Promise.reject(error);
    }
    const ensure = options.ensureTable ?? true;
    if (typeof ensure !== "boolean") {
      return Promise.reject(
        new TypeError(`ensureTable must be true or false, got ${describe(ensure)}`),
      );
    }
    let client: DynamoDBSender;
    return connectStore(
      options,
      (built) => new DynamoDBStateStore(client = built, options),
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
   *
   * @throws {StoreClosed} After `close()`.
   * @throws {Error} The SDK's error when the table cannot be created or described (e.g.
   *   `AccessDeniedException` without the IAM actions of `iamPolicy`).
   */
  async ensureTable(): Promise<void> {
    this.#open("ensureTable");
    await ensureTable(this.#client, { name: this.tableName, hash: [STATE.key, "S"] });
    await ensureTtl(this.#client, this.tableName, STATE.ttl);
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
        Key: stateKey(key),
        ProjectionExpression: projection.join(", "),
        ExpressionAttributeNames: names,
        ConsistentRead: this.#consistent,
      }),
    );
    return isLive(result.Item, nowSeconds()) ? result.Item : undefined;
  }

  /**
   * The value of `key`, or `null` when it is missing, expired, or holds only a hash. `T`
   * names the type you stored (it is not checked, as with Deno KV's `get<T>()`).
   *
   * @example Reading a value
   * ```ts
   * import assert from "node:assert/strict";
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await state.set("greeting", { text: "hi" });
   * const greeting = await state.get<{ text: string }>("greeting");
   * assert.equal(greeting?.text, "hi");
   * ```
   */
  async get<T = unknown>(key: string): Promise<T | null> {
    this.#open("get");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const item = await this.#read(key, [[STATE.value], [STATE.ttl]]);
    const text = item?.[STATE.value]?.S;
    return text === undefined ? null : decodeValue(text) as T;
  }

  /**
   * Stores `value` (any JSON value) under `key`, replacing the whole item — a hash
   * included — like Redis SET. With `ttl`, the key expires after that many seconds.
   * Values JSON would silently change (Map, Set, BigInt, NaN, functions) and items over
   * 400 KB are refused before anything is sent.
   *
   * @example Setting a value with a TTL
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await state.set("otp:alice", "493021", { ttl: 300 });
   * ```
   *
   * @throws {TypeError} For a value JSON would change, or a key that is not a non-empty string.
   * @throws {RangeError} For a `ttl` that is not a finite number of seconds above 0 (at most
   *   1e125), or an item over 400 KB.
   * @throws {StoreClosed} After `close()`.
   */
  async set(key: string, value: unknown, options?: SetOptions | null): Promise<void> {
    this.#open("set");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const ttl = setTtl(options);
    const item: Item = {
      [STATE.key]: S(key),
      [STATE.value]: S(plainJson(plainValue("value", value, false))),
      [STATE.updatedAt]: N(Math.floor(nowSeconds())),
    };
    if (ttl !== undefined) item[STATE.ttl] = N(Math.ceil(nowSeconds() + ttl));
    checkItemSize(`set ${JSON.stringify(key.slice(0, 40))}`, item);
    await this.#client.send(new PutItemCommand({ TableName: this.tableName, Item: item }));
  }

  /**
   * Removes `key`; `true` if a live key was removed.
   *
   * @example Deleting a key
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * console.log(await state.delete("greeting"));
   * ```
   */
  async delete(key: string): Promise<boolean> {
    this.#open("delete");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const result = await this.#client.send(
      new DeleteItemCommand({
        TableName: this.tableName,
        Key: stateKey(key),
        ReturnValues: "ALL_OLD",
      }),
    );
    return isPresent(result.Attributes, nowSeconds());
  }

  /**
   * The live item at `key` when it holds a value or a hash field. A GetItem of the whole
   * item (a Query could filter on the server, but would need one more IAM action than the
   * store's policy has always granted).
   */
  async #present(key: string): Promise<Item | undefined> {
    const item = await this.#read(key, WHOLE_ITEM);
    return item && holds(item) ? item : undefined;
  }

  /**
   * Whether `key` exists and has not expired. A key whose hash was emptied (and that holds
   * no value) does not exist, as in Redis.
   *
   * @example Checking a key
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * console.log(await state.exists("greeting"));
   * ```
   */
  async exists(key: string): Promise<boolean> {
    this.#open("exists");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    return (await this.#present(key)) !== undefined;
  }

  /**
   * Every live key matching the glob `pattern` (`*`, `?`, `[...]`), across all scan pages.
   * Reads only keys and TTLs, never values. The order is DynamoDB's scan order.
   *
   * @example Listing keys by pattern
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * console.log(await state.keys("session:*"));
   * ```
   */
  async keys(pattern = "*"): Promise<string[]> {
    this.#open("keys");
    checkPattern(pattern);
    const keys: string[] = [];
    const scan = async (start: Item | undefined) => {
      const now = nowSeconds();
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
    this.#open("ttl");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const ttl = (await this.#present(key))?.[STATE.ttl]?.N;
    return ttl === undefined ? null : Math.max(0, Math.floor(Number(ttl) - nowSeconds()));
  }

  /**
   * Sets `key` to expire in `seconds`; `false` when the key is missing or expired.
   * `seconds <= 0` expires it now (it is removed). At most 1e125 seconds (the expiry must
   * be a number DynamoDB can store).
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
   * @throws {RangeError} For `seconds` that is not a finite number, or above 1e125.
   * @throws {TypeError} For a key that is not a non-empty string (a `RangeError` over 2048 bytes).
   * @throws {StoreClosed} After `close()`.
   */
  async expire(key: string, seconds: number): Promise<boolean> {
    this.#open("expire");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    checkTtlSeconds("seconds", seconds, true);
    const now = nowSeconds();
    const present = {
      ConditionExpression: `attribute_exists(${STATE.key}) AND ${LIVE} AND ${HOLDS}`,
      ExpressionAttributeNames: PRESENT_NAMES,
    };
    try {
      if (seconds <= 0) {
        await this.#client.send(
          new DeleteItemCommand({
            TableName: this.tableName,
            Key: stateKey(key),
            ...present,
            ExpressionAttributeValues: { ":now": N(now), ":zero": ZERO },
          }),
        );
      } else {
        await this.#client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: stateKey(key),
            UpdateExpression: `SET #t = :ttl, ${STATE.updatedAt} = :at`,
            ...present,
            ExpressionAttributeValues: {
              ":now": N(now),
              ":zero": ZERO,
              ":ttl": N(Math.ceil(now + seconds)),
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
   * The hash field's value, or `null` when the field, the key or its life is gone. `T`
   * names the type you stored (not checked).
   *
   * @example Reading one field
   * ```ts
   * import assert from "node:assert/strict";
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await state.hset("session:abc", "step", 2);
   * const step = await state.hget<number>("session:abc", "step");
   * assert.equal(step, 2);
   * ```
   *
   * @throws {TypeError} For a key or field that is not a non-empty string (a `RangeError` for
   *   one too long: 2048 bytes for the key, 65,535 for the field).
   * @throws {StoreClosed} After `close()`.
   */
  async hget<T = unknown>(key: string, field: string): Promise<T | null> {
    this.#open("hget");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    checkField(field);
    // `hash.<field>` reads just that field; `value` is there for legacy items.
    const oneField = [[STATE.key], [STATE.ttl], [STATE.value], [STATE.hash, field]];
    let item = await this.#read(key, oneField);
    const native = item?.[STATE.hash]?.M;
    if (native && Object.hasOwn(native, field)) return fromAttribute(native[field]!) as T;
    // A legacy value naming the field counts only if no Map exists (the projection of a
    // Map lacking the field is empty): look at the whole item once to know.
    if (
      item && native === undefined && Object.hasOwn(legacyFields(item[STATE.value]?.S) ?? {}, field)
    ) {
      item = await this.#read(key, WHOLE_ITEM);
    } else if (native === undefined) {
      return null;
    }
    const fields = this.#fields(item);
    return fields && Object.hasOwn(fields, field) ? fields[field] as T : null;
  }

  /** The fields of a live item: its native Map once it has a `hash`, else its legacy hash. */
  #fields(item: Item | undefined): Record<string, unknown> | undefined {
    if (!item) return undefined;
    const hash = item[STATE.hash];
    if (hash !== undefined) return hash.M ? fromMap(hash.M, fieldRecord()) : undefined;
    return legacyFields(item[STATE.value]?.S);
  }

  /**
   * Every field of the hash at `key`; `{}` when the key is missing or expired. The result
   * has no prototype: every property is a field (`toString` only if you stored one). `T`
   * names the fields' type (not checked).
   *
   * @example Reading every field
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * const fields = await state.hgetall<number>("session:abc");
   * console.log(fields.step);
   * ```
   */
  async hgetall<T = unknown>(key: string): Promise<Record<string, T>> {
    this.#open("hgetall");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const fields = this.#fields(
      await this.#read(key, WHOLE_ITEM),
    );
    return (fields ?? fieldRecord()) as Record<string, T>;
  }

  /**
   * Sets one hash field: `1` if the field is new, `0` if it was updated. One call when
   * the hash exists; a missing, expired or emptied key starts a fresh hash (without TTL),
   * and a legacy item migrates to a native Map keeping its fields (one a Map cannot hold —
   * an empty field name, nesting too deep — is refused naming the field and left as it is:
   * it reads as before; `hdel` of that field, `set` or `delete` gets it going). The value
   * follows `set`'s rule (JSON as `JSON.stringify` sees it) and must be storable as a native
   * DynamoDB value: integers beyond 2^53 keep their decimal digits; numbers of magnitude
   * 1e126 or more (or below 1e-130), more than 30 levels of maps and lists (DynamoDB's 32
   * count the `hash` Map and the innermost value) and empty keys inside are refused (a
   * `RangeError`/`TypeError` naming the field); holes in arrays are stored as null.
   *
   * @example Setting a field
   * ```ts
   * import assert from "node:assert/strict";
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * await using state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await state.delete("session:abc");
   * assert.equal(await state.hset("session:abc", "step", 1), 1); // a new field
   * assert.equal(await state.hset("session:abc", "step", 2), 0); // updated
   * ```
   *
   * @throws {TypeError} For a key, field or value as described above (a `RangeError` for one
   *   out of range), before anything is sent.
   * @throws {WriteContention} When other writers of the key won 20 races in a row.
   * @throws {StoreClosed} After `close()`.
   */
  async hset(key: string, field: string, value: unknown): Promise<number> {
    this.#open("hset");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    checkField(field);
    const plain = plainValue("value", value, true, `hash field ${JSON.stringify(field)}`);
    const native = toAttribute(plain);
    const single: Item = {
      [STATE.key]: S(key),
      [STATE.hash]: { M: {} },
      [STATE.updatedAt]: N(0),
      [STATE.ttl]: N(0),
    };
    setOwn(single[STATE.hash]!.M as Record<string, unknown>, field, native);
    checkItemSize(`hset field ${JSON.stringify(field.slice(0, 40))}`, single);
    for (let race = 0; race < MAX_RACES; race++) {
      const now = nowSeconds();
      try {
        const result = await this.#client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: stateKey(key),
            UpdateExpression: `SET #h.#f = :v, ${STATE.updatedAt} = :at`,
            ConditionExpression: `attribute_type(#h, :map) AND ${LIVE} AND ${HOLDS}`,
            ExpressionAttributeNames: { ...PRESENT_NAMES, "#f": field },
            ExpressionAttributeValues: {
              ":v": native,
              ":at": N(Math.floor(now)),
              ":map": S("M"),
              ":now": N(now),
              ":zero": ZERO,
            },
            ReturnValues: "UPDATED_OLD",
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          }),
        );
        const old = result.Attributes?.[STATE.hash]?.M;
        return old && Object.hasOwn(old, field) ? 0 : 1;
      } catch (error) {
        if (isItemTooLarge(error)) throw tooLarge(key, error);
        const old = await this.#lostCondition(key, error);
        // No live Map yet: seed one (from the legacy hash if any) holding the field.
        const seeded = await this.#seed(key, old, now, (fields) => {
          const isNew = !Object.hasOwn(fields, field);
          setOwn(fields, field, plain);
          return isNew ? 1 : 0;
        });
        if (seeded !== undefined) return seeded;
      }
    }
    throw new WriteContention("hset", key, MAX_RACES);
  }

  /**
   * Removes hash fields; returns exactly how many existed (from the write's own
   * answer, so two concurrent `hdel`s of one field count 1 in total). Removing the last
   * field of a key that holds no value deletes the key, as in Redis. More fields than one
   * write can name (DynamoDB's 4 KB expression and 2 MB names limits: some 400 short fields)
   * are removed a batch at a time, each write counted from its own answer.
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
   * @throws {StoreClosed} After `close()`.
   */
  async hdel(key: string, ...fields: string[]): Promise<number> {
    this.#open("hdel");
    checkKey("key", key, LIMITS.partitionKeyBytes);
    const all = checkHdelFields(fields);
    // DynamoDB's expression limits cap the fields one UpdateItem can name: more go a batch at
    // a time, each counted from its own write's answer.
    let total = 0;
    for (let start = 0; start < all.length;) {
      const end = hdelBatchEnd(all, start);
      const batch = await this.#hdelBatch(key, all.slice(start, end), all.slice(start));
      total += batch.removed;
      if (batch.last) break;
      start = end;
    }
    return total;
  }

  /**
   * Removes the hash fields `unique` (one UpdateItem's worth) as one write; `last` when
   * nothing of the hash is left for later batches: the key emptied or gone, or a legacy hash
   * migrated without every field of `rest` (this batch and the ones after it).
   */
  async #hdelBatch(
    key: string,
    unique: string[],
    rest: string[],
  ): Promise<{ removed: number; last: boolean }> {
    const names: Record<string, string> = { ...PRESENT_NAMES };
    unique.forEach((f, i) => names[`#f${i}`] = f);
    for (let race = 0; race < MAX_RACES; race++) {
      const now = nowSeconds();
      const input: UpdateItemCommandInput = {
        TableName: this.tableName,
        Key: stateKey(key),
        UpdateExpression: `REMOVE ${
          unique.map((_, i) => `#h.#f${i}`).join(", ")
        } SET ${STATE.updatedAt} = :at`,
        ConditionExpression: `attribute_type(#h, :map) AND ${LIVE} AND ${HOLDS}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: {
          ":at": N(Math.floor(now)),
          ":map": S("M"),
          ":now": N(now),
          ":zero": ZERO,
        },
        // The whole old item: which fields existed, and whether none is left.
        ReturnValues: "ALL_OLD",
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      };
      try {
        const result = await this.#client.send(new UpdateItemCommand(input));
        const old = result.Attributes?.[STATE.hash]?.M ?? {};
        const removed = unique.filter((f) => Object.hasOwn(old, f)).length;
        const emptied = Object.keys(old).every((f) => unique.includes(f));
        const last = emptied && result.Attributes?.[STATE.value] === undefined;
        if (removed > 0 && last) {
          await this.#dropEmpty(key);
        }
        return { removed, last };
      } catch (error) {
        const old = await this.#lostCondition(key, error);
        if (!isPresent(old, now)) return { removed: 0, last: true };
        const removed = await this.#seed(key, old, now, (legacy) => {
          const present = rest.filter((f) => Object.hasOwn(legacy, f));
          for (const f of present) delete legacy[f];
          return present.length;
        });
        if (removed !== undefined) return { removed, last: true };
      }
    }
    throw new WriteContention("hdel", key, MAX_RACES);
  }

  /** The item a conditional write found (its `ALL_OLD`); rethrows any other error. */
  async #lostCondition(key: string, error: unknown): Promise<Item | undefined> {
    if (isConditionFailure(error)) return error.Item;
    if (!isUnreadableFailure(error)) throw error;
    const result = await this.#client.send(
      new GetItemCommand({ TableName: this.tableName, Key: stateKey(key), ConsistentRead: true }),
    );
    return result.Item;
  }

  /**
   * Deletes the item if its hash is (still) empty and it holds no value: Redis deletes an
   * emptied hash. A concurrent `hset` that got there first wins; readers treat an empty
   * leftover as absent anyway.
   */
  async #dropEmpty(key: string): Promise<void> {
    try {
      await this.#client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: stateKey(key),
          ConditionExpression: "attribute_not_exists(#v) AND NOT size(#h) > :zero",
          ExpressionAttributeNames: { "#v": STATE.value, "#h": STATE.hash },
          ExpressionAttributeValues: { ":zero": ZERO },
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }

  /**
   * Writes a native hash Map where the item `old` (from ALL_OLD) had none: a fresh one
   * when the key is missing, expired or emptied, else the legacy hash migrated out of
   * `value`. `change` edits the fields and gives the result. The write is conditioned on
   * the item being as `old` showed it, so it never clobbers a concurrent seeder;
   * `undefined` means it lost that race and the caller starts over.
   */
  async #seed(
    key: string,
    old: Item | undefined,
    now: number,
    change: (fields: Record<string, unknown>) => number,
  ): Promise<number | undefined> {
    const present = isPresent(old, now);
    const oldHash = present ? old[STATE.hash] : undefined;
    if (oldHash !== undefined) {
      // A Map that the condition did not see was written after it ran: start over.
      if (oldHash.M !== undefined) return undefined;
      throw new TypeError(
        `key ${JSON.stringify(key)} has a "hash" attribute that is not a Map; not overwriting it`,
      );
    }
    const legacy = present ? legacyFields(old[STATE.value]?.S, true) : undefined;
    if (present && legacy === undefined) {
      throw new TypeError(
        `key ${JSON.stringify(key)} holds a value, not a hash; delete it or use set() instead`,
      );
    }
    const fields = legacy ?? fieldRecord();
    const result = change(fields);
    for (const [field, value] of Object.entries(fields)) checkMigrating(key, field, value);
    const map = toAttribute(fields).M!;
    try {
      if (!present) {
        // Missing, expired or emptied: a fresh item, no TTL, only if that is still so.
        const item: Item = {
          [STATE.key]: S(key),
          [STATE.hash]: { M: map },
          [STATE.updatedAt]: N(Math.floor(now)),
        };
        checkItemSize(`key ${JSON.stringify(key.slice(0, 40))}`, item);
        await this.#client.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: item,
            ConditionExpression: `attribute_not_exists(${STATE.key}) OR NOT (${LIVE} AND ${HOLDS})`,
            ExpressionAttributeNames: PRESENT_NAMES,
            ExpressionAttributeValues: { ":now": N(now), ":zero": ZERO },
          }),
        );
        return result;
      }
      const unchanged = {
        ConditionExpression:
          `attribute_exists(${STATE.key}) AND attribute_not_exists(#h) AND #v = :old`,
        ExpressionAttributeNames: { "#h": STATE.hash, "#v": STATE.value },
      };
      if (Object.keys(fields).length === 0) {
        // hdel took the legacy hash's last field: the key is gone, as in Redis.
        await this.#client.send(
          new DeleteItemCommand({
            TableName: this.tableName,
            Key: stateKey(key),
            ...unchanged,
            ExpressionAttributeValues: { ":old": old[STATE.value]! },
          }),
        );
        return result;
      }
      const migrated: Item = {
        ...old,
        [STATE.hash]: { M: map },
        [STATE.updatedAt]: N(Math.floor(now)),
      };
      delete migrated[STATE.value];
      checkItemSize(`key ${JSON.stringify(key.slice(0, 40))}`, migrated);
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: stateKey(key),
          UpdateExpression: `SET #h = :m, ${STATE.updatedAt} = :at REMOVE #v`,
          ...unchanged,
          ExpressionAttributeValues: {
            ":m": { M: map },
            ":at": N(Math.floor(now)),
            ":old": old[STATE.value]!,
          },
        }),
      );
      return result;
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      if (isItemTooLarge(error)) throw tooLarge(key, error);
      throw error;
    }
  }

  /**
   * Releases the client if `create()` built it; a client passed to the constructor stays
   * the caller's. Either way every later call is refused with {@linkcode StoreClosed}.
   * Idempotent.
   *
   * @example Closing a store
   * ```ts
   * import { DynamoDBStateStore } from "@harel/dynamodb";
   *
   * const state = await DynamoDBStateStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
   * await state.close();
   * ```
   */
  close(): Promise<void> {
    return this.#ownership.close();
  }

  /** Same as {@linkcode DynamoDBStateStore.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Refuses a call on a closed store before anything else, input checks included. */
  #open(method: string): void {
    this.#ownership.open(method);
  }
}

// Every public method in a span `DynamoDBStateStore.{method}` (see _telemetry.ts).
instrument(DynamoDBStateStore);
