// Rows other writers add without the relay index's attributes, taken into the index (adopted):
// outbox entries and spawns as a pass finds them by their seqs (_foreign_seqs.ts), timers by a
// scan of the timers table that each sweep goes on with where the last one stopped (timers have
// no seq; the same scan, a page at a time, catches outbox and spawn rows no counter handed out).
// A pass of the outbox also finishes releases a crash left half done.
import { ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { ScanCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { batchGet, eachConcurrently, isNamed, type Item, S } from "../../dynamo/_dynamo.ts";
import { ADOPTION, COUNTER, OUTBOX, RELAY, RELEASES, TIMER } from "../../core/_layout.ts";
import type { RelayKind } from "../../core/types.ts";
import { finishReleases } from "./_holds.ts";
import { pendingPlace, placeOf, relayAttributes, rowKey } from "./_relay_index.ts";
import { plain, type QueueContext } from "./_queue_items.ts";
import { byIndexOrder } from "./_index_reads.ts";
import { transactOne } from "../../dynamo/_lost_answers.ts";
import { findForeign, type ForeignRows, type SeqKind } from "./_foreign_seqs.ts";
import { noteRows } from "./_recent_writes.ts";
import { adopted } from "./_transitions.ts";

/** How many stale release marks one pass finishes. */
const RELEASES_PER_PASS = 10;

/**
 * One pass's upkeep of `kind`'s table: releases (outbox), then one page of the scan for rows
 * without the index's attributes — a whole 1 MB page for timers (they have no seq to be found
 * by), `adoptRows` rows for outbox entries and spawns (whose other writers' rows are found by
 * seq: the scan only catches rows no counter handed out).
 */
export async function upkeep(q: QueueContext, kind: RelayKind): Promise<Item[]> {
  const counters = await readCounters(q, kind);
  if (kind === "outbox") await finishReleases(q, counters.releases, RELEASES_PER_PASS);
  return q.adoptRows > 0 ? await adoptPage(q, kind, counters.cursor, true) : [];
}

/**
 * Other writers' rows of `kind` past what passes accounted for, as the relay index would show
 * them (pending), with the frontier below which everything is accounted for. A pass (`adopt`)
 * takes them into the index and records how far it got; a plain read only reads.
 */
export async function foreignRows(
  q: QueueContext,
  kind: SeqKind,
  now: number,
  adopt: boolean,
): Promise<ForeignRows> {
  const found = await findForeign(q, kind, now, { record: adopt });
  const rows = found.rows.filter((row) => placeOf(kind, row, 0) !== null);
  const placed = rows.map((row) => ({ ...row, ...relayAttributes(pendingPlace(kind, row)) }));
  if (adopt) {
    await eachConcurrently(rows, ITEM_WRITES_IN_FLIGHT, async (row) => {
      await adoptRow(q, kind, row);
    });
    // This pass takes them as placed: no need to read them back until the index shows them.
    noteRows(q.timers.client, q.tables[kind].name, placed);
  }
  return {
    rows: placed,
    frontier: found.frontier,
    counter: found.counter,
  };
}

/** The counters-table items upkeep reads, in one BatchGetItem. */
async function readCounters(
  q: QueueContext,
  kind: RelayKind,
): Promise<{ cursor: Item | undefined; releases: string[] }> {
  const table = q.tables.counters.name;
  const ids = kind === "outbox" ? [RELEASES.id, adoptionId(kind)] : [adoptionId(kind)];
  const items = new Map<string, Item>();
  await batchGet(
    q.timers.client,
    { [table]: { Keys: ids.map((id) => ({ [COUNTER.id]: S(id) })), ConsistentRead: true } },
    (responses) => {
      for (const item of responses[table] ?? []) items.set(item[COUNTER.id]?.S ?? "", item);
    },
  );
  const cursor = items.get(adoptionId(kind))?.[ADOPTION.cursor]?.S;
  return {
    cursor: cursor === undefined ? undefined : JSON.parse(cursor) as Item,
    releases: [...items.get(RELEASES.id)?.[RELEASES.targets]?.SS ?? []],
  };
}

const adoptionId = (kind: RelayKind) => `${ADOPTION.prefix}${kind}`;

/**
 * One page of `kind`'s scan from `cursor`, adopting what it finds (`adopt`: and recording where
 * it stopped): the rows it found without the index's attributes, as the index would show them
 * once adopted (a pass delivers them at once, whatever the index shows yet).
 */
async function adoptPage(
  q: QueueContext,
  kind: RelayKind,
  cursor: Item | undefined,
  adopt: boolean,
): Promise<Item[]> {
  const page = await q.timers.client.send(
    new ScanCommand({
      TableName: q.tables[kind].name,
      Limit: kind === "timers" ? undefined : q.adoptRows,
      ExclusiveStartKey: cursor,
      ...projected(kind),
    }),
  );
  const rows = (page.Items ?? []).filter((row) =>
    row[RELAY.part] === undefined && placeOf(kind, row, 0) !== null
  );
  if (adopt) {
    await adoptAll(q, kind, rows, false);
    await saveCursor(q, kind, page.LastEvaluatedKey);
  }
  return rows.map((row) => ({ ...row, ...relayAttributes(pendingPlace(kind, row)) }))
    .sort(byIndexOrder);
}

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
    const page = await q.timers.client.send(
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
async function adoptAll(
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
function projected(kind: RelayKind) {
  const names: Record<string, string> = kind === "timers"
    ? { "#e": TIMER.executionId, "#a": TIMER.path, "#f": TIMER.fireAt }
    : kind === "outbox"
    ? { "#s": OUTBOX.seq, "#t": OUTBOX.targetId }
    : { "#s": OUTBOX.seq };
  names["#p"] = RELAY.part;
  return { ProjectionExpression: Object.keys(names).join(", "), ExpressionAttributeNames: names };
}

/**
 * A row without the index's attributes into its pending partition (a timer: at its fire time),
 * unless it was adopted, acknowledged or (a timer) re-scheduled meanwhile. `exact`
 * (adoptRows(), which answers how many it adopted): a transaction with an idempotency token, so
 * that a copy re-sent after a lost answer counts the row its first copy adopted — a plain
 * update's copy would fail its condition and leave the row uncounted.
 */
export async function adoptRow(
  q: QueueContext,
  kind: RelayKind,
  row: Item,
  exact = false,
): Promise<boolean> {
  if (placeOf(kind, row, 0) === null) return false; // nothing to order it by: only a scan finds it
  const input = adopted(q.tables, kind, row);
  if (!exact) {
    try {
      await q.timers.client.send(new UpdateItemCommand(input));
      return true;
    } catch (error) {
      if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
      return false;
    }
  }
  const done = await transactOne(
    q.timers.client,
    { Update: input },
    { operation: "adoptRows", key: `${kind} ${JSON.stringify(plain(rowKey(kind, row)))}` },
    q.resends,
    "the row may or may not have been adopted; adoptRows() again adopts it if it was not",
  );
  return done.applied;
}

/** Records where `kind`'s scan stands (at the end of the table, back to its start). */
async function saveCursor(q: QueueContext, kind: RelayKind, next: Item | undefined): Promise<void> {
  await q.timers.client.send(
    new UpdateItemCommand({
      TableName: q.tables.counters.name,
      Key: { [COUNTER.id]: S(adoptionId(kind)) },
      UpdateExpression: next === undefined ? "REMOVE #c" : "SET #c = :c",
      ExpressionAttributeNames: { "#c": ADOPTION.cursor },
      ...(next === undefined
        ? {}
        : { ExpressionAttributeValues: { ":c": S(JSON.stringify(next)) } }),
    }),
  );
}
