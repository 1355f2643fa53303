// `hset` and `hdel` of DynamoDBStateStore: conditional writes on a native Map that seed one
// (fresh, or migrated from the legacy `value`) when they find none.
import {
  type AttributeValue,
  DeleteItemCommand,
  type DeleteItemCommandInput,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import { checkItemSize, LIMITS, utf8Length } from "../core/_validate.ts";
import { checkMigrating, fieldRecord, legacyFields, setOwn, toAttribute } from "./_state_values.ts";
import { hsetExpression } from "./_hset_input.ts";
import type { DynamoDBSender } from "../dynamo/_dynamo.ts";
import { isNamed, type Item, S } from "../dynamo/_dynamo.ts";
import { OutcomeUnknown, WriteContention } from "../core/errors.ts";
import { Attempts, type Resends, transactOne, writeId } from "../dynamo/_lost_answers.ts";
import { STATE, stateKey } from "../core/_layout.ts";
import {
  HOLDS,
  holds,
  isConditionFailure,
  isPresent,
  LIVE,
  N,
  PRESENT_NAMES,
  ZERO,
} from "./_state_presence.ts";

/** Where the hash writes go: the store's client and table, and how its transactions resend. */
export interface HashTable {
  readonly client: DynamoDBSender;
  readonly tableName: string;
  readonly resends: Resends;
  /** The store's clock, in epoch seconds: expiry is checked, and `updated_at` written, by it. */
  readonly now: () => number;
}

/** One call's writes to one key; `id`, left on the item, tells a re-sent copy its own work. */
interface Write {
  readonly table: HashTable;
  readonly operation: "hset" | "hdel";
  readonly key: string;
  readonly id: string;
}

/** The ids of the item's last three hash writes, newest first. */
const WRITE_IDS = [STATE.writeId, STATE.writeId1, STATE.writeId2] as const;

/** Sets `write_id` to `:w`, shifting the two before it on (operands read the old item). */
const SHIFT_WRITE_IDS =
  "#w0 = :w, #w1 = if_not_exists(#w0, :none), #w2 = if_not_exists(#w1, :none)";

/** Fails a re-sent copy whose first copy was applied (its id among the last three). */
const NOT_MINE = "NOT (#w0 = :w OR #w1 = :w OR #w2 = :w)";

function writeIdNames(): Record<string, string> {
  return { "#w0": WRITE_IDS[0], "#w1": WRITE_IDS[1], "#w2": WRITE_IDS[2] };
}
function writeIdValues(id: string): Record<string, AttributeValue> {
  return { ":w": S(id), ":none": S("") };
}

/** A write's condition: the item is live and holds a native hash, and this write is not in it. */
const ON_LIVE_MAP = `attribute_type(#h, :map) AND ${LIVE} AND ${HOLDS} AND ${NOT_MINE}`;

function onLiveMapValues(id: string, now: number): Record<string, AttributeValue> {
  return {
    ":at": N(Math.floor(now)),
    ...writeIdValues(id),
    ":map": S("M"),
    ":now": N(now),
    ":zero": ZERO,
  };
}

/** How often a write re-reads after losing a race against another writer's migration. */
const MAX_RACES = 20;

/** A lost condition whose `ALL_OLD` the SDK could not parse (a `__proto__` field): re-read it. */
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
/** An expression with its names substituted: DynamoDB Local refuses one over 1 MB (measured). */
const SUBSTITUTED_BYTES = 1024 * 1024;

/** Where the batch of `hdel` fields from `start` ends: what one UpdateItem can name, at least one. */
function hdelBatchEnd(fields: string[], start: number): number {
  let expression = `REMOVE  SET ${STATE.updatedAt} = :at, ${SHIFT_WRITE_IDS}`.length;
  let substitution = 256; // PRESENT_NAMES, the write ids' names and the six values
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

/** A field `hset` writes: its name, its plain value and that value as DynamoDB's. */
export type FieldWrite = readonly [field: string, plain: unknown, native: AttributeValue];

/** Sets `fields` (and `ttl`) with one UpdateItem on a live Map, else seeds one: how many are new. */
export async function writeFields(
  table: HashTable,
  key: string,
  fields: readonly FieldWrite[],
  ttl: number | undefined,
): Promise<number> {
  const write: Write = { table, operation: "hset", key, id: writeId() };
  const names = fields.map(([field]) => field);
  for (let race = 0; race < MAX_RACES; race++) {
    const now = table.now();
    const expiry: Record<string, AttributeValue> = ttl === undefined
      ? {}
      : { ":ttl": N(Math.ceil(now + ttl)) };
    const tail = `${STATE.updatedAt} = :at, ${
      ttl === undefined ? "" : "#t = :ttl, "
    }${SHIFT_WRITE_IDS}`;
    const command = new UpdateItemCommand({
      TableName: table.tableName,
      Key: stateKey(key),
      UpdateExpression: hsetExpression(fields.length, tail),
      ConditionExpression: ON_LIVE_MAP,
      ExpressionAttributeNames: {
        ...PRESENT_NAMES,
        ...Object.fromEntries(names.map((field, i) => [`#f${i}`, field])),
        ...writeIdNames(),
      },
      ExpressionAttributeValues: {
        ...Object.fromEntries(fields.map(([, , native], i) => [`:v${i}`, native])),
        ...onLiveMapValues(write.id, now),
        ...expiry,
      },
      ReturnValues: "UPDATED_OLD",
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    });
    const attempts = new Attempts(command);
    let answer: { Attributes?: Item };
    try {
      answer = await table.client.send(command);
    } catch (error) {
      if (isItemTooLarge(error)) throw tooLarge(key, error);
      const found = await lostCondition(table, key, error);
      // A re-sent copy: the first one set the fields, and its answer (new or not) is lost.
      if (writtenBy(found, write)) throw unknownCount(write, names, error);
      // No live Map yet: seed one (from the legacy hash if any) holding the fields.
      const seeded = await seed(write, found, now, (hash) => {
        let added = 0;
        for (const [field, plain] of fields) {
          if (!Object.hasOwn(hash, field)) added++;
          setOwn(hash, field, plain);
        }
        return added;
      }, ttl);
      if (seeded !== undefined) return seeded;
      continue;
    }
    const oldHash = answer.Attributes?.[STATE.hash]?.M ?? {};
    const added = names.filter((field) => !Object.hasOwn(oldHash, field)).length;
    if (added === names.length) return added;
    // A field was there: set before, or by a lost earlier copy whose id other writers pushed
    // out of the last three. Only that lost answer could tell.
    if (attempts.earlierMayHaveApplied(answer)) throw unknownCount(write, names);
    return added;
  }
  throw new WriteContention("hset", key, MAX_RACES);
}

function unknownCount(write: Write, fields: string[], cause?: unknown): OutcomeUnknown {
  const what = fields.length === 1
    ? `field ${
      JSON.stringify(fields[0]!.slice(0, 40))
    } was set, but whether it was new (1) or updated (0)`
    : `its ${fields.length} fields were set, but how many of them were new`;
  return new OutcomeUnknown(
    "hset",
    write.key,
    `${what} is unknown: DynamoDB's answer to the write was lost, and the request was sent again`,
    cause === undefined ? undefined : { cause },
  );
}

/** Removes the fields `all` a batch at a time: how many existed (or {@linkcode OutcomeUnknown}). */
export async function removeFields(table: HashTable, key: string, all: string[]): Promise<number> {
  let total = 0;
  let unknown = false;
  for (let start = 0; start < all.length;) {
    const end = hdelBatchEnd(all, start);
    // An id per batch: a batch must not take the one before it for its own earlier copy.
    const write: Write = { table, operation: "hdel", key, id: writeId() };
    const batch = await removeBatch(write, all.slice(start, end), all.slice(start));
    total += batch.removed;
    unknown ||= batch.unknown;
    if (batch.last) break;
    start = end;
  }
  if (unknown) {
    throw new OutcomeUnknown(
      "hdel",
      key,
      "the fields were removed, but how many of them existed is unknown: DynamoDB's answer to a write was lost, and the request was sent again",
    );
  }
  return total;
}

/**
 * Removes one UpdateItem's worth of fields; `last` when nothing is left for later batches;
 * `unknown` when a lost earlier copy may have removed fields `removed` does not count.
 */
async function removeBatch(
  write: Write,
  unique: string[],
  rest: string[],
): Promise<{ removed: number; last: boolean; unknown: boolean }> {
  const { table, key } = write;
  const names: Record<string, string> = { ...PRESENT_NAMES, ...writeIdNames() };
  unique.forEach((f, i) => names[`#f${i}`] = f);
  for (let race = 0; race < MAX_RACES; race++) {
    const now = table.now();
    const input: UpdateItemCommandInput = {
      TableName: table.tableName,
      Key: stateKey(key),
      UpdateExpression: `REMOVE ${
        unique.map((_, i) => `#h.#f${i}`).join(", ")
      } SET ${STATE.updatedAt} = :at, ${SHIFT_WRITE_IDS}`,
      ConditionExpression: ON_LIVE_MAP,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: onLiveMapValues(write.id, now),
      // The whole old item: which fields existed, and whether none is left.
      ReturnValues: "ALL_OLD",
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    };
    const command = new UpdateItemCommand(input);
    const attempts = new Attempts(command);
    let answer: { Attributes?: Item };
    try {
      answer = await table.client.send(command);
    } catch (error) {
      const found = await lostCondition(table, key, error);
      if (found !== undefined && writtenBy(found, write)) {
        // A re-sent copy: the first removed the fields and its count is lost.
        const emptied = !holds(found);
        if (emptied) await dropEmpty(table, key);
        return { removed: 0, last: emptied, unknown: true };
      }
      if (!isPresent(found, now)) {
        // An earlier copy whose answer was lost may have taken the last fields.
        const item: Item | undefined = found;
        const mine = attempts.earlierMayHaveApplied(error);
        if (mine && item !== undefined && !holds(item)) await dropEmpty(table, key);
        return { removed: 0, last: true, unknown: mine };
      }
      const removed = await seed(write, found, now, (legacy) => {
        const present = rest.filter((f) => Object.hasOwn(legacy, f));
        for (const f of present) delete legacy[f];
        return present.length;
      });
      if (removed !== undefined) return { removed, last: true, unknown: false };
      continue;
    }
    const old = answer.Attributes ?? {};
    const oldHash = old[STATE.hash]?.M ?? {};
    const removed = unique.filter((f) => Object.hasOwn(oldHash, f)).length;
    // Every field still there: no earlier attempt removed any, so the count is this write's.
    const unknown = removed < unique.length && attempts.earlierMayHaveApplied(answer);
    const emptied = Object.keys(oldHash).every((f) => unique.includes(f));
    const last = emptied && old[STATE.value] === undefined;
    if ((removed > 0 || unknown) && last) {
      await dropEmpty(table, key);
    }
    return { removed, last, unknown };
  }
  throw new WriteContention("hdel", key, MAX_RACES);
}

/** Whether one of `item`'s last hash writes was one of `write`'s (an earlier copy, re-sent). */
function writtenBy(item: Item | undefined, write: Write): boolean {
  return WRITE_IDS.some((name) => item?.[name]?.S === write.id);
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

/** Deletes the item at `key` where `condition` holds; nothing when it does not. */
export async function deleteIf(
  table: HashTable,
  key: string,
  condition: Pick<
    DeleteItemCommandInput,
    "ConditionExpression" | "ExpressionAttributeNames" | "ExpressionAttributeValues"
  >,
): Promise<void> {
  try {
    await table.client.send(
      new DeleteItemCommand({ TableName: table.tableName, Key: stateKey(key), ...condition }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}

/** Deletes an emptied hash holding no value, as Redis does; a concurrent `hset` wins. */
function dropEmpty(table: HashTable, key: string): Promise<void> {
  return deleteIf(table, key, {
    ConditionExpression: "attribute_not_exists(#v) AND NOT size(#h) > :zero",
    ExpressionAttributeNames: { "#v": STATE.value, "#h": STATE.hash },
    ExpressionAttributeValues: { ":zero": ZERO },
  });
}

/**
 * Writes a native Map where `old` had none (fresh, or the legacy hash migrated), `change`
 * editing the fields; `undefined` when a concurrent seeder won and the caller starts over.
 */
async function seed(
  write: Write,
  old: Item | undefined,
  now: number,
  change: (fields: Record<string, unknown>) => number,
  ttl?: number,
): Promise<number | undefined> {
  const { table, key } = write;
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
  const at = N(Math.floor(now));
  const unchanged = {
    ConditionExpression:
      `attribute_exists(${STATE.key}) AND attribute_not_exists(#h) AND #v = :old`,
    ExpressionAttributeNames: { "#h": STATE.hash, "#v": STATE.value },
  };
  if (present && Object.keys(fields).length === 0) {
    // hdel took the legacy hash's last field. A transaction, so that a copy re-sent after a
    // lost answer is answered as the first one.
    const deleted = await transactOne(
      table.client,
      {
        Delete: {
          TableName: table.tableName,
          Key: stateKey(key),
          ...unchanged,
          ExpressionAttributeValues: { ":old": old[STATE.value]! },
        },
      },
      write,
      table.resends,
      "if it was applied, the key is gone",
    );
    return deleted.applied ? result : undefined;
  }
  let command: PutItemCommand | UpdateItemCommand;
  if (!present) {
    // Missing, expired or emptied: a fresh item, no TTL, only if that is still so.
    const item: Item = {
      [STATE.key]: S(key),
      [STATE.hash]: { M: map },
      [STATE.updatedAt]: at,
      [STATE.writeId]: S(write.id),
      // The leftover's write ids go on, so that its writers' re-sent copies still see theirs.
      [STATE.writeId1]: old?.[STATE.writeId] ?? S(""),
      [STATE.writeId2]: old?.[STATE.writeId1] ?? S(""),
    };
    if (ttl !== undefined) item[STATE.ttl] = N(Math.ceil(now + ttl));
    checkItemSize(`key ${JSON.stringify(key.slice(0, 40))}`, item);
    command = new PutItemCommand({
      TableName: table.tableName,
      Item: item,
      ConditionExpression:
        `(attribute_not_exists(${STATE.key}) OR NOT (${LIVE} AND ${HOLDS})) AND ${NOT_MINE}`,
      ExpressionAttributeNames: { ...PRESENT_NAMES, ...writeIdNames() },
      ExpressionAttributeValues: { ":now": N(now), ":zero": ZERO, ":w": S(write.id) },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    });
  } else {
    const migrated: Item = {
      ...old,
      [STATE.hash]: { M: map },
      [STATE.updatedAt]: at,
      ...Object.fromEntries(WRITE_IDS.map((name) => [name, S(write.id)])),
    };
    delete migrated[STATE.value];
    const expiry = ttl === undefined ? undefined : N(Math.ceil(now + ttl));
    if (expiry) migrated[STATE.ttl] = expiry;
    checkItemSize(`key ${JSON.stringify(key.slice(0, 40))}`, migrated);
    command = new UpdateItemCommand({
      TableName: table.tableName,
      Key: stateKey(key),
      UpdateExpression: `SET #h = :m, ${STATE.updatedAt} = :at, ${
        expiry ? "#t = :ttl, " : ""
      }${SHIFT_WRITE_IDS} REMOVE #v`,
      ConditionExpression: unchanged.ConditionExpression,
      ExpressionAttributeNames: {
        ...unchanged.ExpressionAttributeNames,
        ...writeIdNames(),
        ...(expiry ? { "#t": STATE.ttl } : {}),
      },
      ExpressionAttributeValues: {
        ":m": { M: map },
        ":at": at,
        ...writeIdValues(write.id),
        ":old": old[STATE.value]!,
        ...(expiry ? { ":ttl": expiry } : {}),
      },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    });
  }
  const attempts = new Attempts(command);
  try {
    await (command instanceof PutItemCommand
      ? table.client.send(command)
      : table.client.send(command));
    return result;
  } catch (error) {
    if (isItemTooLarge(error)) throw tooLarge(key, error);
    const found = await lostCondition(table, key, error);
    // Our own write, re-sent after its answer was lost, found what its first copy wrote.
    if (writtenBy(found, write)) return result;
    if (attempts.earlierMayHaveApplied(error)) {
      throw new OutcomeUnknown(
        write.operation,
        key,
        "an earlier copy of its write, whose answer was lost, may have been applied and then changed by another writer; read the key to find out",
        { cause: error },
      );
    }
    return undefined;
  }
}
