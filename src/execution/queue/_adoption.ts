// Rows written without the relay index's attributes (the Python store's) taken into the index:
// a whole table when ensureTables() adds the index, or on request (`adoptRows()`).
import { ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { conditionalUpdate, eachConcurrently, type Item } from "../../dynamo/_dynamo.ts";
import { OUTBOX, RELAY, TIMER } from "../../core/_layout.ts";
import type { RelayKind } from "../../core/types.ts";
import { adopted, placeOf, rowKey } from "./_relay_index.ts";
import { plainMap } from "../../core/_attributes.ts";
import type { QueueContext } from "./_outbox_table.ts";
import { transactOne } from "../../dynamo/_lost_answers.ts";

/**
 * Adopts every row of `kind`'s table written without the relay index's attributes: one scan of
 * the whole table, for `ensureTables()` and `adoptRows()`. Returns how many rows it adopted.
 */
export async function adoptTable(
  q: QueueContext,
  kind: RelayKind,
  { exact = false }: { exact?: boolean } = {},
): Promise<number> {
  let adopted = 0, start: Item | undefined;
  do {
    const page = await q.client.send(
      new ScanCommand({
        TableName: q.tables[kind].name,
        ExclusiveStartKey: start,
        ...projected(kind),
      }),
    );
    adopted += await adoptAll(q, kind, page.Items ?? [], exact);
    start = page.LastEvaluatedKey;
  } while (start);
  return adopted;
}

/** Adopts the rows of a scan's page that lack the index's attributes: how many it adopted. */
export async function adoptAll(
  q: QueueContext,
  kind: RelayKind,
  rows: Item[],
  exact: boolean,
): Promise<number> {
  let adopted = 0;
  await eachConcurrently(rows, ITEM_WRITES_IN_FLIGHT, async (row) => {
    if (row[RELAY.part] === undefined && await adoptRow(q, kind, row, exact)) adopted++;
  });
  return adopted;
}

/** The attributes a scan reads of a row of `kind`'s table to adopt it. */
export function projected(kind: RelayKind) {
  const names: Record<string, string> = kind === "timers"
    ? { "#e": TIMER.executionId, "#a": TIMER.path, "#f": TIMER.fireAt }
    : kind === "outbox"
    ? { "#s": OUTBOX.seq, "#t": OUTBOX.targetId, "#v": OUTBOX.prevSeq }
    : { "#s": OUTBOX.seq };
  names["#p"] = RELAY.part;
  return { ProjectionExpression: Object.keys(names).join(", "), ExpressionAttributeNames: names };
}

/**
 * A row without the index's attributes into its pending partition, unless adopted, acknowledged
 * or re-scheduled meanwhile. `exact` (adoptRows() counts): a transaction with an idempotency
 * token, so a copy re-sent after a lost answer still counts the row.
 */
export async function adoptRow(
  q: QueueContext,
  kind: RelayKind,
  row: Item,
  exact = false,
): Promise<boolean> {
  if (placeOf(kind, row, 0) === null) return false; // nothing to order it by: only a scan finds it
  const input = adopted(q.tables, kind, row);
  if (!exact) return await conditionalUpdate(q.client, input);
  const done = await transactOne(
    q.client,
    { Update: input },
    {
      operation: "adoptRows",
      key: `${kind} ${JSON.stringify(plainMap(rowKey(kind, row), {}, true))}`,
    },
    q.resends,
    "the row may or may not have been adopted; adoptRows() again adopts it if it was not",
  );
  return done.applied;
}
