// The seq-keyed relay tables (outbox, spawns): their acknowledgements (deleting another writer's
// odd seq may scan the table, holding one page). The timers table is _timers.ts's.
import { WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import {
  batchWrite,
  chunks,
  eachConcurrently,
  type Item,
  N,
  scanAll,
} from "../../dynamo/_dynamo.ts";
import { isReadFromTable } from "../../core/_table_seqs.ts";
import { checkInteger, describe, LIMITS } from "../../core/_validate.ts";
import { isStorableNumber } from "../../core/_json.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";

/** How a store reads: its client and whether reads are strongly consistent. */
export interface Reads {
  client: DynamoDBSender;
  consistent: boolean;
}

/**
 * Deletes seq-keyed items in parallel batches of 25, retrying what comes back unprocessed.
 * `seq` must be seqs this module writes (safe non-negative integers), unless it is a batch a
 * relay read from the table (marked by `readFromTable`): that is deleted whatever the seqs.
 */
export async function deleteSeqs(
  client: DynamoDBSender,
  table: string,
  key: string,
  seq: number | number[],
): Promise<void> {
  const given = Array.isArray(seq) ? seq : [seq];
  const asStored = isReadFromTable(seq);
  // Checked before removing duplicates, so the error names the caller's own position.
  given.forEach((s, i) => {
    const field = Array.isArray(seq) ? `seq[${i}]` : "seq";
    if (!asStored) checkInteger(field, s, 0, Number.MAX_SAFE_INTEGER);
    else if (typeof s !== "number" || !isStorableNumber(s)) {
      throw new RangeError(`${field} must be a number DynamoDB can store, got ${describe(s)}`);
    }
  });
  const seqs = [...new Set(given)];
  // Parallel, but within the SDK's default 50 sockets, so a big backlog does not queue.
  await eachConcurrently(
    chunks(seqs, LIMITS.batchWriteItems),
    WRITES_IN_FLIGHT,
    (batch) =>
      batchWrite(client, table, batch.map((s) => ({ DeleteRequest: { Key: { [key]: N(s) } } }))),
  );
  const inexact = seqs.filter((s) => !isOwnSeq(s) && mayBeInexact(s));
  if (inexact.length) await deleteByStoredKey(client, table, key, inexact);
}

/** A seq as this module writes them: a safe non-negative integer, whose text is its key. */
function isOwnSeq(seq: number): boolean {
  return Number.isSafeInteger(seq) && seq >= 0;
}

/**
 * Whether `seq` may stand for a stored number its text does not spell: one with more digits
 * than a double holds (`12345678901234567890123` reads as 1.2345678901234568e22). A number of
 * at most 15 significant digits always reads back as itself.
 */
function mayBeInexact(seq: number): boolean {
  const digits = String(Math.abs(seq)).replace(/e.*$/, "").replace(".", "")
    .replace(/^0+/, "").replace(/0+$/, "");
  return digits.length > 15;
}

/**
 * Deletes the items whose stored seq reads as one of `seqs`, by their exact stored key, found
 * by a keys-only scan (the relay's read is such a scan too). For another writer's seqs only:
 * a row whose seq has more digits than a double holds is deleted by no other key.
 */
async function deleteByStoredKey(
  client: DynamoDBSender,
  table: string,
  key: string,
  seqs: number[],
): Promise<void> {
  const wanted = new Set(seqs);
  const exact: Item[] = [];
  await scanAll(client, {
    TableName: table,
    ProjectionExpression: "#k",
    ExpressionAttributeNames: { "#k": key },
  }, (items) => {
    for (const item of items) {
      if (wanted.has(Number(item[key]?.N))) exact.push({ [key]: item[key]! });
    }
  });
  await eachConcurrently(
    chunks(exact, LIMITS.batchWriteItems),
    WRITES_IN_FLIGHT,
    (batch) => batchWrite(client, table, batch.map((Key) => ({ DeleteRequest: { Key } }))),
  );
}
