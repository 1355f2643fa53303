// The state store's reads of one item, and its delete of a present one: what its methods share
// besides the hash writes (_hash_writes.ts).
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import type { Resends } from "../dynamo/_lost_answers.ts";
import { transactOne } from "../dynamo/_lost_answers.ts";
import type { Item } from "../dynamo/_dynamo.ts";
import { STATE, stateKey } from "../core/_layout.ts";
import { fieldRecord, legacyFields } from "./_state_values.ts";
import { plainMap } from "../core/_attributes.ts";
import { HOLDS, holds, isLive, LIVE, N, PRESENT_NAMES, ZERO } from "./_state_presence.ts";
import type { HashTable } from "./_hash_writes.ts";

/** The store's table as its reads and writes see it: the client, the name, how to resend. */
export interface StateTable extends HashTable {
  /** Whether reads are strongly consistent. */
  consistent: boolean;
}

/** What a read of the whole item projects (every attribute but `updated_at` and `write_id`). */
export const WHOLE_ITEM = [[STATE.key], [STATE.ttl], [STATE.value], [STATE.hash]];

/** How often a delete (a one-item transaction) is re-sent: 3 lost answers, 8 conflicts. */
export const RESENDS: Resends = { lost: 3, conflicts: 8 };

/** The live item at `key` (or undefined), projected on `paths` (each a list of names). */
export async function readItem(
  table: StateTable,
  key: string,
  paths: string[][],
): Promise<Item | undefined> {
  const names: Record<string, string> = {};
  const projection = paths.map((path) =>
    path.map((name) => {
      const alias = `#p${Object.keys(names).length}`;
      names[alias] = name;
      return alias;
    }).join(".")
  );
  const result = await table.client.send(
    new GetItemCommand({
      TableName: table.tableName,
      Key: stateKey(key),
      ProjectionExpression: projection.join(", "),
      ExpressionAttributeNames: names,
      ConsistentRead: table.consistent,
    }),
  );
  return isLive(result.Item, table.now()) ? result.Item : undefined;
}

/**
 * Deletes the item at `key` if present, as a one-item transaction with an idempotency token: a
 * copy re-sent after a lost answer is answered as the first. `withOld`: the item found if not.
 */
export function deletePresent(
  table: StateTable,
  operation: string,
  key: string,
  withOld: boolean,
): ReturnType<typeof transactOne> {
  return transactOne(
    table.client,
    {
      Delete: {
        TableName: table.tableName,
        Key: stateKey(key),
        ConditionExpression: `attribute_exists(${STATE.key}) AND ${LIVE} AND ${HOLDS}`,
        ExpressionAttributeNames: PRESENT_NAMES,
        ExpressionAttributeValues: { ":now": N(table.now()), ":zero": ZERO },
        ReturnValuesOnConditionCheckFailure: withOld ? "ALL_OLD" : undefined,
      },
    },
    { operation, key },
    table.resends,
    "if it was applied, the key is gone",
  );
}

/** The present item at `key`. A GetItem: a filtering Query needs an IAM action more. */
export async function presentItem(table: StateTable, key: string): Promise<Item | undefined> {
  const item = await readItem(table, key, WHOLE_ITEM);
  return item && holds(item) ? item : undefined;
}

/** The fields of a live item: its native Map once it has a `hash`, else its legacy hash. */
export function fieldsOf(item: Item | undefined): Record<string, unknown> | undefined {
  if (!item) return undefined;
  const hash = item[STATE.hash];
  if (hash !== undefined) return hash.M ? plainMap(hash.M, fieldRecord()) : undefined;
  return legacyFields(item[STATE.value]?.S);
}
