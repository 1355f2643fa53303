// A relay pass over the outbox, in three steps (#38). Read: the waiting entries whose retry is due
// and the lowest pending ones, through the relay index (#24), a chunk at a time until `limit` can
// go out; then, by key and strongly, those rows, their targets' holds and every predecessor
// (_outbox_bodies.ts). Decide: `decideOutbox`, pure, on what the table said. Write: entries set
// apart behind their target's head, heads demoted behind a lower one, releases, each conditioned
// on the rows being where the read found them.
import { ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import type { QueueBatch } from "../../core/_queue_batch.ts";
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { chunks, eachConcurrently } from "../../dynamo/_dynamo.ts";
import { transactItems } from "../../dynamo/_lost_answers.ts";
import { HOLD, OUTBOX } from "../../core/_layout.ts";
import type { EntryRow, OutboxDecision } from "../../core/_outbox_decide.ts";
import { MergedPartitions, mergePage } from "./_index_reads.ts";
import { bringBackHeld, readHolds, STILL_HEAD, STILL_HEAD_NAMES, unlistHeld } from "./_holds.ts";
import { moveInput, partition } from "./_relay_index.ts";
import { type Candidate, candidateOf, OutboxRead } from "./_outbox_bodies.ts";
import type { Item } from "../../dynamo/_dynamo.ts";
import type { QueueContext } from "./_queue_items.ts";
import { headToHeld, holdKey, setApartItems } from "./_transitions.ts";

/** How many entries of one target a move takes in one transaction (with the head's check). */
const MOVE_CHUNK = 97;

/**
 * The `limit` lowest deliverable outbox entries, read through the relay index. A relay pass
 * (`pass`) also sets apart what it found held; a plain read (`pendingOutbox`) writes nothing.
 * Examines at most max(1000, 4 × limit) index entries beyond what it delivers.
 */
export async function outboxFromIndex(
  q: QueueContext,
  limit: number,
  now: number,
  pass: boolean,
  foreign?: Item[],
): Promise<QueueBatch<"outbox">> {
  const { client } = q;
  const table = q.tables.outbox.name;
  const page = mergePage(limit);
  const read = new OutboxRead(q);
  // Heads whose retry is due first: they decide whether their targets are still held.
  const waiting = new MergedPartitions(client, table, "w", page, { upTo: now });
  const due: Candidate[] = [];
  for (let item; due.length < limit && (item = await waiting.next());) due.push(candidateOf(item));
  await read.offer(due);
  let decision = read.decide(now, limit, false);
  const pending = new MergedPartitions(client, table, "p", page, { extra: foreign });
  const budget = limit === Infinity ? Infinity : Math.max(1000, 4 * limit);
  let examined = 0, exhausted = false;
  while (!exhausted && decision.deliver.length < limit && examined < budget) {
    const want = limit === Infinity ? 1000 : Math.max(25, limit - decision.deliver.length);
    const chunk: Candidate[] = [];
    while (chunk.length < want) {
      const item = await pending.next();
      if (item === undefined) {
        exhausted = true;
        break;
      }
      chunk.push(candidateOf(item));
    }
    examined += chunk.length;
    await read.offer(chunk);
    decision = read.decide(now, limit, false);
  }
  if (pass) await writeDecision(q, decision, read);
  return await read.batch(decision, pass);
}

/** Writes what a pass decided: entries set apart, heads demoted, releases, gone entries unlisted. */
async function writeDecision(
  q: QueueContext,
  decision: OutboxDecision,
  read: OutboxRead,
): Promise<void> {
  // How many entries each hold lists already (at most LISTED_HELD_MAX).
  const listed = new Map([...read.holds].map(([target, hold]) => [target, hold.held.length]));
  await eachConcurrently(
    [...decision.setApart],
    ITEM_WRITES_IN_FLIGHT,
    ([target, { head, rows }]) => setApart(q, target, head, rows, listed),
  );
  await eachConcurrently(
    [...decision.demote].flatMap(([target, { head, rows }]) =>
      rows.map((row) => ({ target, head, row }))
    ),
    ITEM_WRITES_IN_FLIGHT,
    ({ target, head, row }) =>
      guarded(q, [
        headCheck(q, head),
        { Update: moveInput(q.tables.outbox.name, keyOf(row), row.part, heldPlaceOf(row)) },
        headToHeld(q, target, row.id, listable(listed, target, 1)),
      ]),
  );
  await eachConcurrently(
    [...decision.unlist],
    ITEM_WRITES_IN_FLIGHT,
    ([target, ids]) => unlistHeld(q, target, ids),
  );
  await eachConcurrently([...decision.release], ITEM_WRITES_IN_FLIGHT, (t) => bringBackHeld(q, t));
}

/**
 * Moves a held target's entries to its partition, a transaction per chunk that also checks the
 * head still holds it: if not (delivered or dropped meanwhile, or by a writer keeping no holds),
 * the target is released instead. An entry that moved meanwhile is left out.
 */
async function setApart(
  q: QueueContext,
  target: string,
  head: string,
  rows: EntryRow[],
  listed: Map<string, number>,
): Promise<void> {
  for (let chunk of chunks(rows, MOVE_CHUNK)) {
    for (let attempt = 0; chunk.length > 0 && attempt < 3; attempt++) {
      const list = listable(listed, target, chunk.length);
      const items = setApartItems(
        q.tables,
        target,
        head,
        chunk.map((row) => ({ seq: row.id, from: row.part ?? "" })),
        list,
      );
      // No room on the list: the hold says so, and the target's unlisted entries wait for them.
      if (!list) items.push(spillItem(q, target));
      const done = await transactItems(
        q.client,
        items,
        { operation: "relayBatch", key: `held target ${target}` },
        q.resends,
        "held entries may have moved to their target's partition; the next pass reads the rest",
      );
      if (done.applied) break;
      if (done.reasons[0]?.Code === "ConditionalCheckFailed") {
        await bringBackHeld(q, target); // its head no longer holds it
        return;
      }
      chunk = chunk.filter((_, i) => done.reasons[i + 1]?.Code !== "ConditionalCheckFailed");
    }
  }
  // A release that raced these moves may have missed them: look again.
  if ((await readHolds(q, [target])).get(target)?.seqs.includes(head) !== true) {
    await bringBackHeld(q, target);
  }
}

const keyOf = (row: EntryRow) => ({ [OUTBOX.seq]: { N: row.id } });

/** A check that the entry `seq` still holds its target (waiting for a retry, or dead). */
function headCheck(q: QueueContext, seq: string): TransactWriteItem {
  return {
    ConditionCheck: {
      TableName: q.tables.outbox.name,
      Key: { [OUTBOX.seq]: { N: seq } },
      ConditionExpression: STILL_HEAD,
      ExpressionAttributeNames: STILL_HEAD_NAMES,
    },
  };
}

function heldPlaceOf(row: EntryRow) {
  return { part: partition("h", row.target), order: { N: row.id } };
}

/**
 * How many held entries a hold lists by key at most: with its heads and `recent` list, the hold
 * item stays under 4 KB (a seq of 16 digits takes 9 bytes). Past that a target's further held
 * entries are found through the index alone, and the hold's `spill` says so: until a release has
 * found none left in the index (30 s after the last such move), the target's entries its list
 * does not name wait, so that none goes out ahead of an earlier one the index does not show yet.
 */
export const LISTED_HELD_MAX = 150;

/** The hold update that records entries set apart without room on its list (`spill`: now). */
function spillItem(q: QueueContext, target: string): TransactWriteItem {
  return {
    Update: {
      TableName: q.tables.counters.name,
      Key: holdKey(target),
      UpdateExpression: "SET #s = :s",
      ExpressionAttributeNames: { "#s": HOLD.spill },
      ExpressionAttributeValues: { ":s": { N: String(Math.floor(q.now() / 1000)) } },
    },
  };
}

/** Whether `count` more held entries of `target` fit its hold's list (and count them in). */
function listable(listed: Map<string, number>, target: string, count: number): boolean {
  const now = listed.get(target) ?? 0;
  if (now + count > LISTED_HELD_MAX) return false;
  listed.set(target, now + count);
  return true;
}

/** A transaction whose failed conditions mean "changed meanwhile": the next pass looks again. */
async function guarded(q: QueueContext, items: TransactWriteItem[]): Promise<void> {
  await transactItems(
    q.client,
    items,
    { operation: "relayBatch", key: `outbox ${items.length} items` },
    q.resends,
    "the rows may have moved; the next pass reads where they are",
  );
}
