/**
 * The hash writes of `DynamoDBStateStore`: one field set (`hset`) or fields removed a batch at a
 * time (`hdel`), each a conditional write on a native Map that, when it finds none, seeds one
 * (a fresh hash, or the legacy JSON hash migrated out of `value`) and races other writers.
 *
 * @module
 */
import {
  type AttributeValue,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import { checkItemSize, LIMITS, utf8Length } from "./_validate.ts";
import { checkMigrating, fieldRecord, legacyFields, setOwn, toAttribute } from "./_state_values.ts";
import type { DynamoDBSender } from "./connect.ts";
import { isNamed, type Item, S } from "./_dynamo.ts";
import { WriteContention } from "./errors.ts";
import { STATE, stateKey } from "./_layout.ts";
import {
  HOLDS,
  isConditionFailure,
  isPresent,
  LIVE,
  N,
  nowSeconds,
  PRESENT_NAMES,
  ZERO,
} from "./_state_presence.ts";

/** Where the hash writes go: the store's client and table. */
export interface HashTable {
  readonly client: DynamoDBSender;
  readonly tableName: string;
}

/** How often a write re-reads after losing a race against another writer's migration. */
const MAX_RACES = 20;

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
 * Sets `field` of the hash at `key` to `plain` (`native` as a DynamoDB value): `1` if the field
 * is new, `0` if it was updated. Input is checked by the caller.
 */
export async function writeField(
  table: HashTable,
  key: string,
  field: string,
  plain: unknown,
  native: AttributeValue,
): Promise<number> {
  for (let race = 0; race < MAX_RACES; race++) {
    const now = nowSeconds();
    try {
      const result = await table.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
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
      const old = await lostCondition(table, key, error);
      // No live Map yet: seed one (from the legacy hash if any) holding the field.
      const seeded = await seed(table, key, old, now, (fields) => {
        const isNew = !Object.hasOwn(fields, field);
        setOwn(fields, field, plain);
        return isNew ? 1 : 0;
      });
      if (seeded !== undefined) return seeded;
    }
  }
  throw new WriteContention("hset", key, MAX_RACES);
}

/** Removes the (checked, unique) hash fields `all` of `key`: how many existed. */
export async function removeFields(table: HashTable, key: string, all: string[]): Promise<number> {
  // DynamoDB's expression limits cap the fields one UpdateItem can name: more go a batch at
  // a time, each counted from its own write's answer.
  let total = 0;
  for (let start = 0; start < all.length;) {
    const end = hdelBatchEnd(all, start);
    const batch = await removeBatch(table, key, all.slice(start, end), all.slice(start));
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
async function removeBatch(
  table: HashTable,
  key: string,
  unique: string[],
  rest: string[],
): Promise<{ removed: number; last: boolean }> {
  const names: Record<string, string> = { ...PRESENT_NAMES };
  unique.forEach((f, i) => names[`#f${i}`] = f);
  for (let race = 0; race < MAX_RACES; race++) {
    const now = nowSeconds();
    const input: UpdateItemCommandInput = {
      TableName: table.tableName,
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
      const result = await table.client.send(new UpdateItemCommand(input));
      const old = result.Attributes?.[STATE.hash]?.M ?? {};
      const removed = unique.filter((f) => Object.hasOwn(old, f)).length;
      const emptied = Object.keys(old).every((f) => unique.includes(f));
      const last = emptied && result.Attributes?.[STATE.value] === undefined;
      if (removed > 0 && last) {
        await dropEmpty(table, key);
      }
      return { removed, last };
    } catch (error) {
      const old = await lostCondition(table, key, error);
      if (!isPresent(old, now)) return { removed: 0, last: true };
      const removed = await seed(table, key, old, now, (legacy) => {
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
async function lostCondition(
  table: HashTable,
  key: string,
  error: unknown,
): Promise<Item | undefined> {
  if (isConditionFailure(error)) return error.Item;
  if (!isUnreadableFailure(error)) throw error;
  const result = await table.client.send(
    new GetItemCommand({ TableName: table.tableName, Key: stateKey(key), ConsistentRead: true }),
  );
  return result.Item;
}

/**
 * Deletes the item if its hash is (still) empty and it holds no value: Redis deletes an
 * emptied hash. A concurrent `hset` that got there first wins; readers treat an empty
 * leftover as absent anyway.
 */
async function dropEmpty(table: HashTable, key: string): Promise<void> {
  try {
    await table.client.send(
      new DeleteItemCommand({
        TableName: table.tableName,
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
async function seed(
  table: HashTable,
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
      await table.client.send(
        new PutItemCommand({
          TableName: table.tableName,
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
      await table.client.send(
        new DeleteItemCommand({
          TableName: table.tableName,
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
    await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
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
