// What a relay table's feed round does with the records it read: other writers' rows, written
// without the relay index's attributes, are adopted into it (one conditional update each). Outbox
// rows also feed their target's `recent` list, and one with no `prev_seq` gets its predecessor
// (core/_feed_chain.ts), so a pass delivers a target's entries in seq order. Each write's
// condition decides.
import type { _Record as StreamRecord } from "@aws-sdk/client-dynamodb-streams";
import {
  type AttributeValue,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { plainMap } from "../../core/_attributes.ts";
import { unreadableId } from "../queue/_dead_letters.ts";
import { projected } from "../queue/_adoption.ts";
import { ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { LIMITS } from "../../core/_validate.ts";
import {
  batchGet,
  chunks,
  conditionalUpdate,
  eachConcurrently,
  isNamed,
  type Item,
  N,
  S,
  updateIfMatch,
} from "../../dynamo/_dynamo.ts";
import { COUNTER, FAILURE, HOLD, OUTBOX, RELAY, TIMER } from "../../core/_layout.ts";
import type { RelayKind } from "../../core/types.ts";
import { chainRound, type FedRow, type Recent, RECENT_MAX } from "../../core/_feed_chain.ts";
import {
  adopted,
  keyOrder,
  partition,
  pendingPlace,
  placeOf,
  relayAttributes,
  rowKey,
  rowShard,
} from "../queue/_relay_index.ts";
import {
  candidateOf,
  holdKey,
  type OutboxContext as QueueContext,
} from "../queue/_outbox_table.ts";

/**
 * What a handler reports: how many writes it made, and the rows it adopted (as the relay index
 * shows them once adopted: a pass in the same call offers them, whatever the index shows yet).
 */
export interface Handled {
  writes: number;
  adopted: Item[];
}

/** The NEW images of a page's INSERT and MODIFY records, the last of each key (REMOVEs: none). */
export function newImages(kind: RelayKind, records: readonly StreamRecord[]): Item[] {
  const last = new Map<string, Item>();
  for (const record of records) {
    const image = record.dynamodb?.NewImage as Item | undefined;
    if (record.eventName === "REMOVE" || image === undefined) continue;
    const key = kind === "timers"
      ? `${image[TIMER.executionId]?.S}\u0000${image[TIMER.path]?.S}`
      : image[OUTBOX.seq]?.N ?? "";
    last.delete(key);
    last.set(key, image);
  }
  return [...last.values()];
}

/**
 * Whether a record is no work for `kind`'s feed: a REMOVE, or a row in the relay index already
 * (outbox: chained too).
 */
export function isNoWork(kind: RelayKind, record: StreamRecord): boolean {
  if (record.eventName === "REMOVE") return true;
  const image = record.dynamodb?.NewImage as Item | undefined;
  if (image === undefined) return true;
  if (kind !== "outbox") return image[RELAY.part] !== undefined;
  // A commit's new entry, chained by its source, goes to its target's `recent` all the same:
  // another writer's entry after it may be of the same source.
  const ours = record.eventName === "INSERT" && image[OUTBOX.sourceId] !== undefined;
  return image[RELAY.part] !== undefined && image[OUTBOX.prevSeq] !== undefined && !ours;
}

/**
 * Adopts (outbox: and chains) the rows of these images that need it; a row no pass can use (no
 * target, no time, too large to adopt) is set aside by key with why, and the feed goes on.
 */
export async function handleImages(
  q: QueueContext,
  kind: RelayKind,
  images: Item[],
): Promise<Handled> {
  const handled: Handled = { writes: 0, adopted: [] };
  const usable: Item[] = [];
  for (const row of images) {
    const why = row[RELAY.part] === undefined ? unusable(kind, row) : null;
    if (why === null) usable.push(row);
    else {
      handled.writes++;
      await setAside(q, kind, row, why);
    }
  }
  if (kind === "outbox") {
    const chained = await chainOutbox(q, usable);
    return { writes: handled.writes + chained.writes, adopted: chained.adopted };
  }
  const rows = usable.filter((row) => row[RELAY.part] === undefined);
  await eachConcurrently(rows, ITEM_WRITES_IN_FLIGHT, async (row) => {
    handled.writes++;
    if (await adopt(q, kind, row, adopted(q.tables, kind, row)) !== null) {
      handled.adopted.push(placed(kind, row));
    }
  });
  return handled;
}

/** Why a row another writer wrote can never be relayed, or null. */
function unusable(kind: RelayKind, row: Item): string | null {
  if (kind === "outbox") {
    const target = row[OUTBOX.targetId];
    return target?.S !== undefined || target?.NULL ? null : "no target_id (a string, or NULL)";
  }
  if (kind === "timers" && !Number.isFinite(Number(row[TIMER.fireAt]?.N))) {
    return "fire_at is not a number";
  }
  return null;
}

/**
 * Adopts a row with `update`: the row as the write left it (its attributes when the update asks
 * for them), or null when the update did not apply. One too large to take the index's attributes
 * is set aside.
 */
async function adopt(
  q: QueueContext,
  kind: RelayKind,
  row: Item,
  update: Parameters<typeof conditionalUpdate>[1],
): Promise<Item | null> {
  try {
    return await updateIfMatch(q.client, update);
  } catch (error) {
    if (!isTooLarge(error)) throw error;
    await setAside(q, kind, row, "too large to adopt (DynamoDB's 400 KB item limit)");
    return null;
  }
}

const isTooLarge = (error: unknown) =>
  isNamed(error, "ValidationException") && /size/i.test(String(error));

/**
 * Sets another writer's row aside as dead and unreadable, by key, with why. A row with no room
 * for that keeps only its dead place, and its why goes to a counters item of its own; a row with
 * no room at all is said once, and left.
 */
async function setAside(q: QueueContext, kind: RelayKind, row: Item, why: string): Promise<void> {
  const place: Record<string, AttributeValue> = {
    ":p": S(partition("d", rowShard(kind, row))),
    ":o": keyOrder(kind, row) ?? N(0),
  };
  const marks: Record<string, AttributeValue> = {
    ":d": N(Math.floor(q.now() / 1000)),
    ":u": { BOOL: true },
    ":e": S(`unreadable: ${why}`),
  };
  const update = (values: Record<string, AttributeValue>) => ({
    TableName: q.tables[kind].name,
    Key: rowKey(kind, row),
    UpdateExpression: `SET ${Object.keys(values).map((v) => `${NAMES[v]} = ${v}`).join(", ")}`,
    ConditionExpression: "attribute_not_exists(#p)",
    ExpressionAttributeNames: Object.fromEntries(
      Object.keys(values).map((v) => [NAMES[v]!, ATTRIBUTES[v]!]),
    ),
    ExpressionAttributeValues: values,
  });
  try {
    await conditionalUpdate(q.client, update({ ...place, ...marks }));
    return;
  } catch (error) {
    if (!isTooLarge(error)) throw error;
  }
  try {
    await q.client.send(
      new PutItemCommand({
        TableName: q.tables.counters.name,
        Item: { [COUNTER.id]: S(unreadableId(kind, row)), [FAILURE.lastError]: marks[":e"]! },
      }),
    );
    await conditionalUpdate(q.client, update(place));
  } catch (error) {
    if (!isTooLarge(error)) throw error;
    console.warn(
      `harel: another writer's ${kind} row ${
        JSON.stringify(plainMap(rowKey(kind, row), {}, true))
      } is too large to be relayed or set aside (${why}): left as it is`,
    );
  }
}

const NAMES: Record<string, string> = {
  ":p": "#p",
  ":o": "#o",
  ":d": "#d",
  ":u": "#u",
  ":e": "#e",
};
const ATTRIBUTES: Record<string, string> = {
  ":p": RELAY.part,
  ":o": RELAY.order,
  ":d": FAILURE.deadAt,
  ":u": FAILURE.unreadable,
  ":e": FAILURE.lastError,
};

/** Rows an adoption backfill reads a page of (keys and what orders them: a page stays small). */
export const BACKFILL_ROWS = 1000;

/** A page of the one-off scan of `kind`'s table for rows without the index's attributes. */
export async function backfillPage(
  q: QueueContext,
  kind: RelayKind,
  start: Item,
  signal?: AbortSignal,
): Promise<{ next: Item | undefined; scanned: number; handled: Handled }> {
  const page = await q.client.send(
    new ScanCommand({
      TableName: q.tables[kind].name,
      Limit: BACKFILL_ROWS,
      ExclusiveStartKey: Object.keys(start).length === 0 ? undefined : start,
      ...projected(kind),
    }),
    { abortSignal: signal },
  );
  const rows = (page.Items ?? []).filter((row) =>
    kind === "outbox"
      ? row[RELAY.part] === undefined || row[OUTBOX.prevSeq] === undefined
      : row[RELAY.part] === undefined
  );
  return {
    next: page.LastEvaluatedKey,
    scanned: page.ScannedCount ?? 0,
    handled: await handleImages(q, kind, rows),
  };
}

/** A row as the index shows it once adopted (pending, at its seq or fire time). */
const placed = (kind: RelayKind, row: Item): Item => ({
  ...keysOf(kind, row),
  ...relayAttributes(pendingPlace(kind, row)),
});

/** What a pass needs of a row it is offered (never its body: memory follows `limit`). */
function keysOf(kind: RelayKind, row: Item): Item {
  const keep = kind === "outbox" ? [OUTBOX.targetId, OUTBOX.prevSeq] : [TIMER.fireAt];
  const kept: Item = { ...rowKey(kind, row) };
  for (const name of keep) if (row[name] !== undefined) kept[name] = row[name];
  return kept;
}

/**
 * The outbox's handler: each unchained entry gets its predecessor among its target's unchained
 * ones and the entries of ours between the two to wait for (another writer's is adopted in the
 * same update); each feeds its target's `recent` lists, a commit's chained entry too.
 */
async function chainOutbox(q: QueueContext, all: Item[]): Promise<Handled> {
  const images = all.filter((row) =>
    (row[OUTBOX.prevSeq] === undefined || row[OUTBOX.sourceId] !== undefined) &&
    row[OUTBOX.targetId] !== undefined && !row[RELAY.part]?.S?.startsWith("d") &&
    placeOf("outbox", row, 0) !== null
  );
  const handled: Handled = { writes: 0, adopted: [] };
  if (images.length === 0) return handled;
  const fed: FedRow[] = images.map((row) => {
    const { id, target } = candidateOf(row);
    return { id, seq: Number(id), target, unchained: row[OUTBOX.prevSeq] === undefined };
  });
  // Each target's `recent` lists gain this round's seqs in one write, which answers with them.
  const recent = new Map<string, Recent>();
  // A seq no counter handed out (not a whole number) orders nothing (chainRound).
  const round = Map.groupBy(fed.filter((row) => Number.isInteger(row.seq)), (row) => row.target);
  await eachConcurrently([...round], ITEM_WRITES_IN_FLIGHT, async ([target, rows]) => {
    handled.writes++;
    recent.set(target, await addRecent(q, target, "ADD", recentOf(rows)));
  });
  const chaining = chainRound(fed, recent);
  await eachConcurrently(images, ITEM_WRITES_IN_FLIGHT, async (row) => {
    const id = row[OUTBOX.seq]!.N!;
    const prev = chaining.prev.get(id);
    if (prev === undefined) return; // chained already: it only fed `recent`
    const foreign = row[RELAY.part] === undefined;
    const after = chaining.after.get(id) ?? [];
    handled.writes++;
    const made = await adopt(q, "outbox", row, chained(q, row, { prev, after }, foreign));
    if (made === null) return;
    // Another writer's row as its adoption left it, read by key in the write: the pass need not
    // read it again; a large one is read by key when offered (memory follows `limit`).
    if (foreign && (made[OUTBOX.event]?.S?.length ?? Infinity) <= KNOWN_BODY) {
      handled.adopted.push(made);
      return;
    }
    const links = { [OUTBOX.prevSeq]: N(prev), ...afterAttribute(after) };
    const row2 = { ...keysOf("outbox", row), ...links };
    const at = { [RELAY.part]: row[RELAY.part]!, [RELAY.order]: row[RELAY.order]! };
    handled.adopted.push(foreign ? placed("outbox", row2) : { ...row2, ...at });
  });
  // A list past twice RECENT_MAX is cut back to its highest RECENT_MAX; an unchained entry still
  // there stays (an entry above it waits for it), up to RECENT_CAP.
  await eachConcurrently([...round.keys()], ITEM_WRITES_IN_FLIGHT, async (target) => {
    const kept = chaining.recent.get(target)!;
    const seen = recentOf(round.get(target)!, recent.get(target));
    const over = (list: number[], keep: number[]) =>
      list.length > 2 * RECENT_MAX ? list.filter((seq) => !keep.includes(seq)) : [];
    const gone = {
      unchained: await goneOf(q, seen.unchained, over(seen.unchained, kept.unchained)),
      ours: over(seen.ours, kept.ours),
    };
    if (gone.unchained.length + gone.ours.length === 0) return;
    handled.writes++;
    await addRecent(q, target, "DELETE", gone);
  });
  return handled;
}

/** The largest event body of an adopted row a round keeps for the pass (memory stays bounded). */
const KNOWN_BODY = 3000;

/** The most seqs a target's `recent` list of unchained entries keeps while they are there. */
export const RECENT_CAP = 128;

/**
 * Of `cut`, the lowest of `list`, those no longer there (read by key, strongly), and the lowest
 * still there past {@linkcode RECENT_CAP}.
 */
async function goneOf(q: QueueContext, list: number[], cut: number[]): Promise<number[]> {
  if (cut.length === 0) return [];
  const table = q.tables.outbox.name;
  const there = new Set<number>();
  for (const keys of chunks(cut.map((seq) => ({ [OUTBOX.seq]: N(seq) })), LIMITS.batchGetKeys)) {
    await batchGet(q.client, {
      [table]: {
        Keys: keys,
        ConsistentRead: true,
        ProjectionExpression: "#s",
        ExpressionAttributeNames: { "#s": OUTBOX.seq },
      },
    }, (found) => {
      for (const item of found[table] ?? []) there.add(Number(item[OUTBOX.seq]!.N));
    });
  }
  const left = list.filter((seq) => !cut.includes(seq) || there.has(seq));
  const over = new Set(left.sort((a, b) => a - b).slice(0, Math.max(0, left.length - RECENT_CAP)));
  return cut.filter((seq) => !there.has(seq) || over.has(seq));
}

/** Rows' seqs as `recent` lists, with those of `before`. */
function recentOf(rows: FedRow[], before: Recent = { unchained: [], ours: [] }): Recent {
  const seqs = (unchained: boolean) =>
    rows.filter((r) => r.unchained === unchained).map((r) => r.seq);
  return {
    unchained: [...new Set([...before.unchained, ...seqs(true)])],
    ours: [...new Set([...before.ours, ...seqs(false)])],
  };
}

/** The `after_seqs` attribute of a chained entry (none when it waits for none). */
function afterAttribute(after: number[]): Item {
  return after.length === 0 ? {} : { [OUTBOX.after]: { NS: after.map(String) } };
}

/**
 * The update that chains an entry: another writer's is adopted too (pending place, `prev_seq`
 * and `after_seqs`, unless adopted meanwhile); one of ours gets them unless it has a `prev_seq`.
 */
function chained(
  q: QueueContext,
  row: Item,
  links: { prev: number; after: number[] },
  foreign: boolean,
) {
  const names: Record<string, string> = { "#v": OUTBOX.prevSeq };
  const values: Item = { ":v": N(links.prev) };
  let set = "#v = :v";
  if (links.after.length > 0) {
    names["#w"] = OUTBOX.after;
    values[":w"] = afterAttribute(links.after)[OUTBOX.after]!;
    set += ", #w = :w";
  }
  if (foreign) {
    const input = adopted(q.tables, "outbox", row);
    input.UpdateExpression += `, ${set}`;
    Object.assign(input.ExpressionAttributeNames, names);
    Object.assign(input.ExpressionAttributeValues, values);
    // A row the pass may decide on from the answer comes back whole; a large one, read by key.
    const small = (row[OUTBOX.event]?.S?.length ?? Infinity) <= KNOWN_BODY;
    return small ? { ...input, ReturnValues: "ALL_NEW" as const } : input;
  }
  return {
    TableName: q.tables.outbox.name,
    Key: { [OUTBOX.seq]: row[OUTBOX.seq]! },
    UpdateExpression: `SET ${set}`,
    ConditionExpression: "attribute_not_exists(#v) AND attribute_exists(#k)",
    ExpressionAttributeNames: { ...names, "#k": OUTBOX.seq },
    ExpressionAttributeValues: values,
  };
}

/** Adds seqs to (or deletes them from) a target's `recent` lists: the lists before, lowest first. */
async function addRecent(
  q: QueueContext,
  target: string,
  verb: "ADD" | "DELETE",
  seqs: Recent,
): Promise<Recent> {
  const names: Record<string, string> = {};
  const values: Item = {};
  const clauses: string[] = [];
  for (
    const [list, name, attribute] of [
      [seqs.unchained, ":r", HOLD.recent],
      [seqs.ours, ":o", HOLD.recentOurs],
    ] as const
  ) {
    if (list.length === 0) continue;
    names[`#${name.slice(1)}`] = attribute;
    values[name] = { NS: list.map(String) };
    clauses.push(`#${name.slice(1)} ${name}`);
  }
  const out = await q.client.send(
    new UpdateItemCommand({
      TableName: q.tables.counters.name,
      Key: holdKey(target),
      UpdateExpression: `${verb} ${clauses.join(", ")}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      // Both lists, though the write may change one.
      ReturnValues: "ALL_OLD",
    }),
  );
  const list = (attribute: string) =>
    (out.Attributes?.[attribute]?.NS ?? []).map(Number).sort((a, b) => a - b);
  return { unchained: list(HOLD.recent), ours: list(HOLD.recentOurs) };
}
