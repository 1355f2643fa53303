// The timers table's reads and writes: due timers by a scan (`dueTimers(now, { scan: true })`),
// and the claim of one due timer. Memory grows with the `limit` asked for, never with the table.
import type { Reads } from "./_seq_deletes.ts";
import { byFireAt, Lowest } from "../../core/_bounded.ts";
import { fireAtGuard } from "./_fire_at.ts";
import { type Resends, transactOne } from "../../dynamo/_lost_answers.ts";
import { type Item, N, scanAll } from "../../dynamo/_dynamo.ts";
import { FAILURE, RELAY_DUE, TIMER, timerFromItem, timerKey } from "../../core/_layout.ts";
import type { Timer } from "../../core/types.ts";

/** Reads of the timers table: which table. */
export interface TimerReads extends Reads {
  table: string;
}

/** A due timer with the failed attempts a relay recorded on it. */
export type DueTimer = Timer & { attempts: number };

export function dueTimerOf(item: Item): DueTimer {
  return { ...timerFromItem(item), attempts: Number(item[FAILURE.attempts]?.N ?? 0) || 0 };
}

/**
 * Due timers that are neither waiting for a retry nor dead-lettered, by a projected scan of the
 * timers table (their attempts read along), the `limit` earliest kept in a heap.
 */
export async function dueByScan(
  { client, consistent, table }: TimerReads,
  now: number,
  limit: number,
): Promise<DueTimer[]> {
  const due = new Lowest<DueTimer>(limit, byFireAt);
  await scanAll(client, {
    TableName: table,
    ProjectionExpression: "#e, #p, #f, #a",
    FilterExpression: `#f <= :now AND ${RELAY_DUE.filter}`,
    ExpressionAttributeNames: {
      "#e": TIMER.executionId,
      "#p": TIMER.path,
      "#f": TIMER.fireAt,
      "#a": FAILURE.attempts,
      ...RELAY_DUE.names,
    },
    ExpressionAttributeValues: { ":now": N(now) },
    ConsistentRead: consistent,
  }, (items) => {
    for (const item of items) due.offer(dueTimerOf(item));
  });
  return due.sorted();
}

/**
 * Deletes the timer only if it still fires at `fireAt` (`deleteTimer`). A one-item transaction
 * with an idempotency token: a copy re-sent after a lost answer is answered as the first was,
 * never as a failed condition (which would lose the timer).
 */
export async function claimTimer(
  reads: TimerReads,
  executionId: string,
  path: string,
  fireAt: number,
  resends: Resends,
): Promise<boolean> {
  // Not `fire_at = :f`: a fire_at stored with more digits than a double reads back as
  // fireAt yet never equals it (it would fire on every sweep).
  const guard = fireAtGuard(fireAt);
  const claimed = await transactOne(
    reads.client,
    {
      Delete: {
        TableName: reads.table,
        Key: timerKey(executionId, path),
        ConditionExpression: guard.condition,
        ExpressionAttributeNames: { "#f": TIMER.fireAt },
        ExpressionAttributeValues: guard.values,
      },
    },
    { operation: "deleteTimer", key: `${executionId}/${path}` },
    resends,
    "the timer is gone if it was, and then it is this call's to fire",
  );
  return claimed.applied;
}
