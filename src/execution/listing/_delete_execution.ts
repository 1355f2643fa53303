// Deleting an execution and what it left in the timers, trace and processed tables. The item goes
// first: every later commit to it fails its CAS, so the sweep after it misses nothing.
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

/** Deletes execution `id`, then its timers, trace steps and dedupe marks. */
export async function removeExecution(
  reads: ExecutionReads,
  id: string,
  resends: Resends,
): Promise<DeleteExecutionResult> {
  const { client, tables } = reads;
  // A one-item transaction with a token: a re-sent copy is answered as the first, so
  // `execution: true` is never lost.
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
 * The `ttl` deleteExecutions leaves on an execution it is retiring: absent to every reader, yet in
 * the status index until a run finishes it (DynamoDB's TTL skips times over five years past).
 */
export const RETIRED_TTL = 1;

/**
 * Retires execution `id` if still alive at `version` (docs/retention.md), sweeps what it left,
 * then deletes it: `true` when this call retired it.
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
 * Deletes every item of `spec` under `id`: how many. Strongly consistent, so a commit that landed
 * before the execution's delete is seen; memory: one page.
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
