// Acknowledgements of the seq-keyed spawns table: deletes in parallel batches of 25, retrying
// what comes back unprocessed. The timers table is _timers.ts's; the outbox's is its queue's.
import { WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { batchWrite, chunks, eachConcurrently, N } from "../../dynamo/_dynamo.ts";
import { checkInteger, LIMITS } from "../../core/_validate.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";

/** How a store reads: its client and whether reads are strongly consistent. */
export interface Reads {
  client: DynamoDBSender;
  consistent: boolean;
}

/** Checks seqs as this module writes them (safe non-negative integers), naming the bad one. */
export function checkSeqs(seq: number | number[]): number[] {
  const given = Array.isArray(seq) ? seq : [seq];
  given.forEach((s, i) =>
    checkInteger(Array.isArray(seq) ? `seq[${i}]` : "seq", s, 0, Number.MAX_SAFE_INTEGER)
  );
  return [...new Set(given)];
}

/** Deletes seq-keyed items of `table` (`seq` checked), 25 a call, a few calls in flight. */
export async function deleteSeqs(
  client: DynamoDBSender,
  table: string,
  seq: number | number[],
): Promise<void> {
  await eachConcurrently(
    chunks(checkSeqs(seq), LIMITS.batchWriteItems),
    WRITES_IN_FLIGHT,
    (batch) =>
      batchWrite(client, table, batch.map((s) => ({ DeleteRequest: { Key: { seq: N(s) } } }))),
  );
}
