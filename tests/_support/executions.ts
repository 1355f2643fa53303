// Filling an executions table fast: items as this module's commits leave them (with the status
// index's attributes), written with BatchWriteItem (25 a call, a few calls in flight).
import type { WriteRequest } from "@aws-sdk/client-dynamodb";
import { putAll } from "./put_all.ts";
import type { DynamoDBSender } from "../../src/dynamo/_dynamo.ts";
import { type Execution, newExecution, type Status } from "../../mod.ts";
import { statusKey } from "../../src/execution/listing/_status_index.ts";

/** The item a commit of `exe` at `exe.version` leaves, committed at `updatedAt` (epoch s). */
export function committedItem(exe: Execution, updatedAt: number): WriteRequest["PutRequest"] {
  return {
    Item: {
      id: { S: exe.id },
      data: { S: JSON.stringify(exe) },
      version: { N: String(exe.version) },
      definition_id: { S: exe.definition_id },
      status_shard: { S: statusKey(exe.status, exe.id) },
      status_at: { N: String(updatedAt) },
      updated_at: { N: String(updatedAt) },
    },
  };
}

/**
 * Writes `count` executions of `status` (at version 1, committed at `from`, `from + 1`, ...)
 * straight into `table`; returns them oldest first.
 */
export async function fillExecutions(
  client: DynamoDBSender,
  table: string,
  count: number,
  { status, from, definitionId = "filled" }: {
    status: Status;
    from: number;
    definitionId?: string;
  },
): Promise<Execution[]> {
  const exes = Array.from(
    { length: count },
    () => newExecution({ definition_id: definitionId, status, version: 1 }),
  );
  await putAll(client, table, exes.map((exe, i) => committedItem(exe, from + i)!.Item!), 8);
  return exes;
}
