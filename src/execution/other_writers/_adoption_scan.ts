// Rows other writers add without the relay index's attributes, taken into the index (adopted) as
// a store built with `otherWriters: true` finds them: outbox entries and spawns by their seqs
// (_foreign_seqs.ts), timers by a scan of the timers table that each sweep goes on with where
// the last one stopped (timers have no seq; the same scan, a page at a time, catches outbox and
// spawn rows no counter handed out). Its upkeep of the outbox also finishes the releases a
// crash left half done, read in the same call as the scan's place.
import { ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { ScanCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { batchGet, eachConcurrently, type Item, S } from "../../dynamo/_dynamo.ts";
import { ADOPTION, COUNTER, RELAY, RELEASES } from "../../core/_layout.ts";
import type { RelayKind } from "../../core/types.ts";
import { finishReleases } from "../queue/_holds.ts";
import { pendingPlace, placeOf, relayAttributes } from "../queue/_relay_index.ts";
import type { ForeignRows, QueueContext } from "../queue/_queue_items.ts";
import { byIndexOrder } from "../queue/_index_reads.ts";
import { adoptAll, adoptRow, projected } from "../queue/_adoption.ts";
import { RELEASES_PER_PASS } from "../queue/_holds.ts";
import { findForeign, type SeqKind } from "./_foreign_seqs.ts";

/** How many rows of an outbox or spawns table one pass's adoption scan reads. */
export const ADOPT_ROWS = 100;

/**
 * One pass's upkeep of `kind`'s table: releases (outbox), then one page of the scan for rows
 * without the index's attributes — a whole 1 MB page for timers (they have no seq to be found
 * by), ADOPT_ROWS rows for outbox entries and spawns (whose other writers' rows are found by
 * seq: the scan only catches rows no counter handed out).
 */
export async function upkeep(q: QueueContext, kind: RelayKind): Promise<Item[]> {
  const counters = await readCounters(q, kind);
  if (kind === "outbox") await finishReleases(q, counters.releases, RELEASES_PER_PASS);
  return await adoptPage(q, kind, counters.cursor, true);
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
      Limit: kind === "timers" ? undefined : ADOPT_ROWS,
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
