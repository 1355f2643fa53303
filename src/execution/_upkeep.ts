// A relay pass's upkeep of the relay index (#24), a bounded amount each pass: adopting rows
// written without the index's attributes (the seed, the Python store) and putting back rows whose
// place another writer's change made wrong, by a scan that goes on where the last pass stopped
// (`adoptRows` rows a pass; a whole 1 MB page a pass while other writers' seqs keep appearing);
// and finishing releases a crash left half done. What it costs a pass never grows with the
// table; what it costs in all is about one read of each row per cycle of the scan.
import { ITEM_WRITES_IN_FLIGHT } from "../core/_lanes.ts";
import { type AttributeValue, ScanCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { batchGet, eachConcurrently, isNamed, type Item, N, S } from "../dynamo/_dynamo.ts";
import { ADOPTION, COUNTER, FAILURE, OUTBOX, RELAY, RELEASES, TIMER } from "../core/_layout.ts";
import type { RelayKind } from "../core/types.ts";
import { finishReleases, holdsTarget, readHolds, replace } from "./_holds.ts";
import { moveInput, partOf, pendingPlace, placeOf, rowKey } from "./_relay_index.ts";
import { candidateOf } from "./_outbox_queue.ts";
import { plain, type QueueReads } from "./_queue_items.ts";
import { transactOne } from "../dynamo/_lost_answers.ts";
import { counterState, probesOf } from "./_foreign_seqs.ts";

/** How many stale release marks one pass finishes. */
const RELEASES_PER_PASS = 10;

/** How many targets of held entries a page checks are still held (two reads each). */
const HELD_CHECKS_PER_PAGE = 4;

/** The counters that tell how many seqs other writers took (their rows lack the index). */
const SEQ_COUNTERS = ["outbox", "spawn"];

/** Where a table's adoption scan stands (see _layout.ts ADOPTION). */
interface Adoption {
  cursor: Item | undefined;
  /** Other writers' seqs when the current cycle began (undefined: no cycle yet). */
  cycle: number | undefined;
  /** Other writers' seqs the last whole cycle covered (-1: none yet). */
  covered: number;
}

/** One pass's upkeep of `kind`'s table: releases (outbox), then one page of adoption. */
export async function upkeep(q: QueueReads, kind: RelayKind, now: number): Promise<void> {
  const counters = await readCounters(q, kind);
  if (kind === "outbox") await finishReleases(q, counters.releases, RELEASES_PER_PASS);
  if (q.adoptRows > 0) await adoptPage(q, kind, now, counters.adoption, counters.foreign);
}

/** The counters-table items upkeep reads, in one BatchGetItem. */
async function readCounters(
  q: QueueReads,
  kind: RelayKind,
): Promise<{ adoption: Adoption; foreign: number; releases: string[] }> {
  const table = q.tables.counters.name;
  const ids = [`${ADOPTION.prefix}${kind}`, ...SEQ_COUNTERS, RELEASES.id];
  const items = new Map<string, Item>();
  await batchGet(
    q.timers.client,
    { [table]: { Keys: ids.map((id) => ({ [COUNTER.id]: S(id) })), ConsistentRead: false } },
    (responses) => {
      for (const item of responses[table] ?? []) items.set(item[COUNTER.id]?.S ?? "", item);
    },
  );
  let foreign = 0;
  for (const id of SEQ_COUNTERS) {
    const counter = items.get(id);
    const state = counterState(counter);
    foreign += probesOf(state, 1000).seqs.length;
  }
  const state = items.get(ids[0]!);
  const cursor = state?.[ADOPTION.cursor]?.S;
  return {
    adoption: {
      cursor: cursor === undefined ? undefined : JSON.parse(cursor) as Item,
      cycle: numberOrUndefined(state?.[ADOPTION.cycle]),
      covered: numberOrUndefined(state?.[ADOPTION.covered]) ?? -1,
    },
    foreign,
    releases: [...items.get(RELEASES.id)?.[RELEASES.targets]?.SS ?? []],
  };
}

function numberOrUndefined(value: AttributeValue | undefined): number | undefined {
  const n = Number(value?.N);
  return value?.N === undefined || !Number.isFinite(n) ? undefined : n;
}

/**
 * One page of the adoption scan, from where the last pass stopped (see {@linkcode tidy}): at most
 * `adoptRows` rows, or a whole 1 MB page while other writers' seqs keep appearing (`foreign`
 * beyond what the last whole cycle covered).
 */
async function adoptPage(
  q: QueueReads,
  kind: RelayKind,
  now: number,
  state: Adoption,
  foreign: number,
): Promise<void> {
  const table = q.tables[kind].name;
  // Other writers' seqs beyond what the last whole cycle covered (none yet: any at all).
  const fast = foreign > Math.max(state.covered, 0);
  const page = await q.timers.client.send(
    new ScanCommand({
      TableName: table,
      Limit: fast ? undefined : q.adoptRows,
      ExclusiveStartKey: state.cursor,
      ...projected(kind),
    }),
  );
  await tidy(q, kind, now, page.Items ?? []);
  await saveAdoption(q, kind, state, foreign, page.LastEvaluatedKey);
}

/**
 * Adopts every row of `kind`'s table written without the relay index's attributes (and puts
 * back what is misplaced): one scan of the whole table, for `ensureTables()` and
 * `adoptRows()`. Returns how many rows it adopted.
 */
export async function adoptTable(
  q: QueueReads,
  kind: RelayKind,
  now: number,
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
    adopted += await tidy(q, kind, now, page.Items ?? [], exact);
    start = page.LastEvaluatedKey;
  } while (start);
  return adopted;
}

/**
 * What an adoption page does with its rows: rows without `relay_part` go to their pending
 * partition (a pass reading them there moves those waiting or dead where they belong); rows in a
 * dead partition no longer dead, or in a waiting one no longer waiting, go back (an outbox
 * entry's target is then released); held entries whose target no longer holds them (their head
 * delivered or dropped by a writer that keeps no holds) are released. Returns how many rows it
 * adopted.
 */
async function tidy(
  q: QueueReads,
  kind: RelayKind,
  now: number,
  rows: Item[],
  exact = false,
): Promise<number> {
  const held = new Map<string, number>(); // target → the lowest held entry the page shows
  const released = new Set<string>(); // targets whose head the page found no longer failing
  let adopted = 0;
  await eachConcurrently(rows, ITEM_WRITES_IN_FLIGHT, async (row) => {
    const from = row[RELAY.part]?.S;
    if (from === undefined) {
      if (await adopt(q, kind, row, exact)) adopted++;
      return;
    }
    const part = partOf(from);
    if (part === "h") {
      const { target, seq } = candidateOf(row);
      return void held.set(target, Math.min(held.get(target) ?? Infinity, seq));
    }
    const dead = row[FAILURE.deadAt] !== undefined;
    const place = placeOf(kind, row, now);
    if (place && ((part === "d" && !dead) || (part === "w" && !dead && !row[FAILURE.retryAt]))) {
      await conditionally(q, moveInput(q.tables[kind].name, rowKey(kind, row), from, place));
      // It no longer holds its target (retried by a writer that keeps no holds): release it.
      if (kind === "outbox") released.add(candidateOf(row).target);
    }
  });
  for (const target of await unheld(q, held)) released.add(target);
  await eachConcurrently([...released], ITEM_WRITES_IN_FLIGHT, (target) => replace(q, target));
  return adopted;
}

/**
 * Of the targets of held entries (target → its lowest held seq seen), those whose lowest head
 * does not hold that entry back any more: no hold, a head above it, or a head that is gone or no
 * longer failing (delivered or retried by a writer that keeps no holds). Two reads in all, for
 * at most {@linkcode HELD_CHECKS_PER_PAGE} of them.
 */
async function unheld(q: QueueReads, all: Map<string, number>): Promise<string[]> {
  // A safety net for rare events: a few targets a page, drawn at random so that every target
  // is drawn sooner or later, whatever the pages' bounds.
  const held = new Map(
    [...all].sort(() => Math.random() - 0.5).slice(0, HELD_CHECKS_PER_PAGE),
  );
  if (held.size === 0) return [];
  // Eventually consistent (half the price): a target found unheld only costs a release that
  // re-checks it strongly.
  const holds = await readHolds(q, held.keys(), false);
  const table = q.tables.outbox.name;
  const heads = new Map<string, Item>();
  const keys = [...new Set([...holds.values()].map((h) => h.seqs[0]!))].map((n) => ({
    [OUTBOX.seq]: { N: n },
  }));
  for (let i = 0; i < keys.length; i += 100) {
    await batchGet(
      q.timers.client,
      { [table]: { Keys: keys.slice(i, i + 100), ConsistentRead: false } },
      (responses) => {
        for (const row of responses[table] ?? []) heads.set(row[OUTBOX.seq]?.N ?? "", row);
      },
    );
  }
  return [...held].filter(([target, lowest]) => {
    const hold = holds.get(target);
    return !hold || !(hold.lowest < lowest) || !holdsTarget(heads.get(hold.seqs[0]!));
  }).map(([target]) => target);
}

/** The attributes an adoption page reads of a row of `kind`'s table. */
function projected(kind: RelayKind) {
  const names: Record<string, string> = kind === "timers"
    ? { "#e": TIMER.executionId, "#a": TIMER.path, "#f": TIMER.fireAt }
    : kind === "outbox"
    ? { "#s": OUTBOX.seq, "#t": OUTBOX.targetId }
    : { "#s": OUTBOX.seq };
  Object.assign(names, { "#p": RELAY.part, "#r": FAILURE.retryAt, "#d": FAILURE.deadAt });
  return { ProjectionExpression: Object.keys(names).join(", "), ExpressionAttributeNames: names };
}

/**
 * A row without the index's attributes into its pending partition (a timer: at its fire time).
 * `exact` (adoptRows(), which answers how many it adopted): a transaction with an idempotency
 * token, so that a copy re-sent after a lost answer counts the row its first copy adopted — a
 * plain update's copy would fail its condition and leave the row uncounted.
 */
async function adopt(q: QueueReads, kind: RelayKind, row: Item, exact: boolean): Promise<boolean> {
  if (placeOf(kind, row, 0) === null) return false; // nothing to order it by: only a scan finds it
  const input = moveInput(q.tables[kind].name, rowKey(kind, row), null, pendingPlace(kind, row));
  if (kind === "timers") {
    // Not if it was re-scheduled meanwhile: its new fire time orders it.
    input.ConditionExpression += " AND #f = :f";
    Object.assign(input.ExpressionAttributeNames, { "#f": TIMER.fireAt });
    Object.assign(input.ExpressionAttributeValues, { ":f": row[TIMER.fireAt]! });
  } else {
    input.ConditionExpression += " AND attribute_exists(#k)"; // not an acknowledged row back
    Object.assign(input.ExpressionAttributeNames, { "#k": OUTBOX.seq });
  }
  if (!exact) return await conditionally(q, input);
  const done = await transactOne(
    q.timers.client,
    { Update: input },
    { operation: "adoptRows", key: `${kind} ${JSON.stringify(plain(rowKey(kind, row)))}` },
    q.resends,
    "the row may or may not have been adopted; adoptRows() again adopts it if it was not",
  );
  return done.applied;
}

/** An update that is skipped when the row changed meanwhile: whether it applied. */
async function conditionally(
  q: QueueReads,
  input: ConstructorParameters<typeof UpdateItemCommand>[0],
): Promise<boolean> {
  try {
    await q.timers.client.send(new UpdateItemCommand(input));
    return true;
  } catch (error) {
    if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
    return false;
  }
}

/** Records where the scan stands: the next page, or (at the end) a cycle completed. */
async function saveAdoption(
  q: QueueReads,
  kind: RelayKind,
  state: Adoption,
  foreign: number,
  next: Item | undefined,
): Promise<void> {
  const cycle = state.cycle ?? foreign;
  const names: Record<string, string> = { "#c": ADOPTION.cursor, "#y": ADOPTION.cycle };
  const values: Item = { ":y": N(cycle) };
  let update = "SET #c = :c, #y = :y";
  if (next !== undefined) values[":c"] = S(JSON.stringify(next));
  else {
    // A whole cycle read: it covered every row other writers' seqs had when it began.
    if (state.cursor === undefined && state.covered === cycle && cycle === foreign) return;
    names["#v"] = ADOPTION.covered;
    values[":v"] = N(cycle);
    values[":y"] = N(foreign);
    update = "SET #v = :v, #y = :y REMOVE #c";
  }
  await q.timers.client.send(
    new UpdateItemCommand({
      TableName: q.tables.counters.name,
      Key: { [COUNTER.id]: S(`${ADOPTION.prefix}${kind}`) },
      UpdateExpression: update,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    }),
  );
}
