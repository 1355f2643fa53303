// What a round of a relay table's feed (DynamoDB Streams: the outbox, spawns and timers tables'
// change records, see _table_feed.ts) does with the records it read (#39): other writers' rows,
// written without the relay index's attributes, are adopted into the index, one conditional
// update each, so that the ordinary passes, sweeps and reads handle them like any row. Outbox
// entries are also chained per target (core/_feed_chain.ts): every row the feed sees feeds its
// target's `recent` list, and a row with no `prev_seq` (another writer's, or ours committed right
// after another writer's commit of the same execution) gets its predecessor, so that a pass
// (which makes an unchained entry wait, in mixed mode) delivers a target's entries in seq order
// whatever the index shows. A record is a candidate: each write's condition decides.
import type { _Record as StreamRecord } from "@aws-sdk/client-dynamodb-streams";
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { batchGet, chunks, eachConcurrently, isNamed, type Item, N } from "../../dynamo/_dynamo.ts";
import { COUNTER, HOLD, OUTBOX, RELAY, TIMER } from "../../core/_layout.ts";
import { LIMITS } from "../../core/_validate.ts";
import type { RelayKind } from "../../core/types.ts";
import { chainRound, type FedRow } from "../../core/_feed_chain.ts";
import { pendingPlace, placeOf, relayAttributes } from "../queue/_relay_index.ts";
import type { QueueContext } from "../queue/_queue_items.ts";
import { adopted, holdKey } from "../queue/_transitions.ts";
import { candidateOf } from "../queue/_outbox_bodies.ts";

/**
 * A round's handler of a page of change records: the rows it adopted (as the relay index shows
 * them once adopted: a pass in the same call offers them, whatever the index shows yet).
 */
export type RecordHandler = (records: readonly StreamRecord[]) => Promise<Item[]>;

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

/** The handler of `kind`'s feed: adopts other writers' rows; outbox rows also chained. */
export function adoptionHandler(q: QueueContext, kind: RelayKind): RecordHandler {
  return kind === "outbox" ? (records) => chainOutbox(q, records) : async (records) => {
    const rows = newImages(kind, records).filter((row) =>
      row[RELAY.part] === undefined && placeOf(kind, row, 0) !== null
    );
    const done: Item[] = [];
    await eachConcurrently(rows, ITEM_WRITES_IN_FLIGHT, async (row) => {
      if (await update(q, adopted(q.tables, kind, row))) done.push(placed(kind, row));
    });
    return done;
  };
}

/** A row as the index shows it once adopted (pending, at its seq or fire time). */
const placed = (kind: RelayKind, row: Item): Item => ({
  ...row,
  ...relayAttributes(pendingPlace(kind, row)),
});

/**
 * The outbox's handler: every entry seen feeds its target's `recent` list; the unchained ones
 * get their predecessor (another writer's are adopted in the same update).
 */
async function chainOutbox(q: QueueContext, records: readonly StreamRecord[]): Promise<Item[]> {
  const images = newImages("outbox", records).filter((row) =>
    row[OUTBOX.targetId] !== undefined && placeOf("outbox", row, 0) !== null
  );
  if (images.length === 0) return [];
  const fed: FedRow[] = images.map((row) => {
    const { id, seq, target } = candidateOf(row);
    return { id, seq, target, unchained: row[OUTBOX.prevSeq] === undefined };
  });
  const targets = [...new Set(fed.map((row) => row.target))];
  const recent = await readRecent(q, targets);
  const chaining = chainRound(fed, recent);
  const done: Item[] = [];
  await eachConcurrently(images, ITEM_WRITES_IN_FLIGHT, async (row) => {
    const prev = chaining.prev.get(row[OUTBOX.seq]!.N!);
    if (prev === undefined) return; // chained already: it only fed `recent`
    const foreign = row[RELAY.part] === undefined;
    if (await update(q, chained(q, row, prev, foreign))) {
      if (foreign) done.push({ ...placed("outbox", row), [OUTBOX.prevSeq]: N(prev) });
    }
  });
  await eachConcurrently(targets, ITEM_WRITES_IN_FLIGHT, async (target) => {
    const seqs = chaining.recent.get(target)!;
    if (seqs.join() === (recent.get(target) ?? []).join()) return;
    await q.timers.client.send(
      new UpdateItemCommand({
        TableName: q.tables.counters.name,
        Key: holdKey(target),
        UpdateExpression: "SET #r = :r",
        ExpressionAttributeNames: { "#r": HOLD.recent },
        ExpressionAttributeValues: { ":r": { NS: seqs.map(String) } },
      }),
    );
  });
  return done;
}

/**
 * The update that chains an entry: another writer's is adopted too (pending place and
 * `prev_seq`, unless adopted meanwhile); one of ours gets `prev_seq` unless it has one.
 */
function chained(q: QueueContext, row: Item, prev: number, foreign: boolean) {
  if (foreign) {
    const input = adopted(q.tables, "outbox", row);
    input.UpdateExpression += ", #v = :v";
    Object.assign(input.ExpressionAttributeNames, { "#v": OUTBOX.prevSeq });
    Object.assign(input.ExpressionAttributeValues, { ":v": N(prev) });
    return input;
  }
  return {
    TableName: q.tables.outbox.name,
    Key: { [OUTBOX.seq]: row[OUTBOX.seq]! },
    UpdateExpression: "SET #v = :v",
    ConditionExpression: "attribute_not_exists(#v) AND attribute_exists(#k)",
    ExpressionAttributeNames: { "#v": OUTBOX.prevSeq, "#k": OUTBOX.seq },
    ExpressionAttributeValues: { ":v": N(prev) },
  };
}

/** The targets' `recent` lists, from their hold items (strongly). */
async function readRecent(q: QueueContext, targets: string[]): Promise<Map<string, number[]>> {
  const table = q.tables.counters.name;
  const recent = new Map<string, number[]>();
  await eachConcurrently(
    chunks(targets.map(holdKey), LIMITS.batchGetKeys),
    ITEM_WRITES_IN_FLIGHT,
    (keys) =>
      batchGet(q.timers.client, {
        [table]: {
          Keys: keys,
          ConsistentRead: true,
          ProjectionExpression: "#i, #r",
          ExpressionAttributeNames: { "#i": COUNTER.id, "#r": HOLD.recent },
        },
      }, (responses) => {
        for (const item of responses[table] ?? []) {
          const seqs = (item[HOLD.recent]?.NS ?? []).map(Number).sort((a, b) => a - b);
          recent.set(item[COUNTER.id]!.S!.slice(HOLD.prefix.length), seqs);
        }
      }),
  );
  return recent;
}

/** Sends a conditional update: false when its condition failed (the row changed meanwhile). */
async function update(
  q: QueueContext,
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
