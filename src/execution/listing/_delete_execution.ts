// `deleteExecution`: one execution out of the executions, timers, trace and processed tables.
// The execution item goes first, whatever it holds: from then on every commit to it (a CAS on a
// version >= 1) fails with StoreConflict, so the sweep that follows removes whatever a commit
// that landed before it wrote, and nothing writes after it but an insert of the same id.
import { ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { DeleteItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import {
  batchWrite,
  chunks,
  eachConcurrently,
  isNamed,
  type Item,
  N,
  pages,
  S,
} from "../../dynamo/_dynamo.ts";
import { EXECUTION, executionKey } from "../../core/_layout.ts";
import { ALIVE, isExpired, livenessValues, secondsOf } from "../commit/_retention.ts";
import { type Resends, transactOne } from "../../dynamo/_lost_answers.ts";
import { LIMITS } from "../../core/_validate.ts";
import type { ExecutionReads } from "./_execution_reads.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import type { TableSpec } from "../../core/table_specs.ts";
import type { DeleteExecutionResult } from "../../core/types.ts";

/**
 * Deletes execution `id` and its timers, trace steps and dedupe marks: one DeleteItem, then per
 * table a keys-only Query (page by page) and BatchWriteItem deletes of 25. Input is checked by
 * the caller.
 */
export async function removeExecution(
  reads: ExecutionReads,
  id: string,
  resends: Resends,
): Promise<DeleteExecutionResult> {
  const { client, tables } = reads;
  // A live execution goes in a one-item transaction with a token: a copy re-sent after a lost
  // answer is answered as the first copy was, so `execution: true` is never lost.
  const live = await transactOne(
    client,
    {
      Delete: {
        TableName: tables.executions.name,
        Key: executionKey(id),
        ConditionExpression: `attribute_exists(#id) AND ${ALIVE}`,
        ExpressionAttributeNames: { "#id": EXECUTION.id, "#ttl": EXECUTION.ttl },
        ExpressionAttributeValues: livenessValues(secondsOf(reads.now)),
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      },
    },
    { operation: "deleteExecution", key: id },
    resends,
    "the execution is gone if it was there",
  );
  // An expired item was already absent to every read: removing it is no deletion of an execution.
  if (!live.applied && live.found !== undefined) {
    await client.send(
      new DeleteItemCommand({ TableName: tables.executions.name, Key: executionKey(id) }),
    );
  }
  const execution = live.applied;
  const [timers, trace, processed] = await Promise.all(
    [tables.timers, tables.trace, tables.processed].map((spec) => sweep(client, spec, id)),
  );
  return { execution, timers: timers!, trace: trace!, processed: processed! };
}

/**
 * The `ttl` deleteExecutions leaves on an execution it is removing: long past, so that every
 * reader (whatever its clock) finds it absent and every commit fails, while it stays in the table
 * (and in the status index) until what it left behind is gone: a run that stops half-way is
 * finished by the next one. DynamoDB's TTL never deletes it (TTL skips times over five years
 * past), so only such a run does.
 */
export const RETIRED_TTL = 1;

/** Whether an item is one deleteExecutions retired (and has not finished removing). */
export function isRetired(item: Item): boolean {
  return item[EXECUTION.ttl]?.N === String(RETIRED_TTL);
}

/**
 * Removes execution `id` for deleteExecutions, only if it is still alive at `version` (what the
 * listing saw): it is retired (its `ttl` set to {@linkcode RETIRED_TTL} and its `version` bumped,
 * so that no writer's compare-and-set, the Python store's included, lands on it any more) in a
 * one-item transaction with a token, then its timers, trace and marks are swept, then it goes.
 * `true` when this call retired it; `false` when it was committed since (it stays untouched),
 * was gone, or was already retired or expired (then what it left is swept and it goes, uncounted).
 */
export async function retireExecution(
  reads: ExecutionReads,
  id: string,
  version: number,
  resends: Resends,
): Promise<boolean> {
  const { client, tables } = reads;
  const now = secondsOf(reads.now);
  const retired = await transactOne(
    client,
    {
      Update: {
        TableName: tables.executions.name,
        Key: executionKey(id),
        UpdateExpression: "SET #ttl = :retired, #v = :next",
        ConditionExpression: `#v = :v AND ${ALIVE}`,
        ExpressionAttributeNames: { "#v": EXECUTION.version, "#ttl": EXECUTION.ttl },
        ExpressionAttributeValues: {
          ":v": N(version),
          ":next": N(version + 1),
          ":retired": N(RETIRED_TTL),
          ...livenessValues(now),
        },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      },
    },
    { operation: "deleteExecutions", key: id },
    resends,
    "the execution is retired (absent to every read) if it was there; run deleteExecutions again",
  );
  if (!retired.applied && (retired.found === undefined || !isExpired(retired.found, now))) {
    return false;
  }
  await Promise.all(
    [tables.timers, tables.trace, tables.processed].map((spec) => sweep(client, spec, id)),
  );
  try {
    // Still expired: a whole-item Put (the Python store) may have brought it back meanwhile.
    await client.send(
      new DeleteItemCommand({
        TableName: tables.executions.name,
        Key: executionKey(id),
        ConditionExpression: "#ttl <= :now",
        ExpressionAttributeNames: { "#ttl": EXECUTION.ttl },
        ExpressionAttributeValues: { ":now": N(now) },
      }),
    );
  } catch (error) {
    if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
  }
  return retired.applied;
}

/**
 * Deletes every item of `spec` (hash `execution_id`, some range key) under `id`; returns how many
 * it found. Strongly consistent pages, so a commit that landed before the execution's delete is
 * seen; each page is deleted before the next is read (memory: one page).
 */
async function sweep(client: DynamoDBSender, spec: TableSpec, id: string): Promise<number> {
  const [hash] = spec.hash;
  const [range] = spec.range!;
  const query = (start: Item | undefined) =>
    client.send(
      new QueryCommand({
        TableName: spec.name,
        KeyConditionExpression: "#h = :id",
        ProjectionExpression: "#h, #r",
        ExpressionAttributeNames: { "#h": hash, "#r": range },
        ExpressionAttributeValues: { ":id": S(id) },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
  let removed = 0;
  for await (const page of pages(query)) {
    const keys = page.Items ?? [];
    await eachConcurrently(
      chunks(keys, LIMITS.batchWriteItems),
      ITEM_WRITES_IN_FLIGHT,
      (batch) => batchWrite(client, spec.name, batch.map((Key) => ({ DeleteRequest: { Key } }))),
    );
    removed += keys.length;
  }
  return removed;
}
