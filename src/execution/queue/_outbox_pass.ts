// A relay pass over the outbox through the relay index (#24): the lowest pending seqs and the
// waiting entries whose retry is due, read from the index a page at a time until `limit` are
// deliverable. What it finds held (behind a waiting or dead entry of its target) it moves to
// its target's partition, once, so that no later pass pays for it; what another writer parked
// or dead-lettered in place it moves to where it belongs, and makes its target's head.
import { ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import type { QueueBatch } from "../../core/_queue_batch.ts";
import type { AttributeValue, TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { chunks, eachConcurrently, type Item } from "../../dynamo/_dynamo.ts";
import { transactItems } from "../../dynamo/_lost_answers.ts";
import { FAILURE, OUTBOX, RELAY } from "../../core/_layout.ts";

import { MergedPartitions, mergePage } from "./_index_reads.ts";
import { type Bookkept, holdsAt, isHead } from "../../core/_relay_rules.ts";
import {
  addHead,
  bookkeepingOf,
  bringBackHeld,
  type Heads,
  readHolds,
  readOutboxRows,
  STILL_HEAD,
  STILL_HEAD_NAMES,
  unlistHeld,
} from "./_holds.ts";
import { moveInput, partition, partOf, type Place, placeOf } from "./_relay_index.ts";
import { type Candidate, candidateOf, readOutboxBodies } from "./_outbox_bodies.ts";
import {
  beyondFrontier,
  earliest,
  type ForeignRows,
  numberOf,
  type QueueContext,
} from "./_queue_items.ts";
import { headToHeld, held as holdItems } from "./_transitions.ts";

/** How many entries of one target a move takes in one transaction (with the head's check). */
const MOVE_CHUNK = 97;

/** A row the index showed, with what the pass decided about it. */
interface Row {
  item: Item;
  candidate: Candidate;
  /** The partition it was read from. */
  from: string;
}

/** What one pass decided, beyond what it delivers. */
interface Decisions {
  /** Rows whose own attributes say they are waiting or dead: moved there (heads, unless unreadable). */
  relocate: { row: Row; place: Place; head: boolean }[];
  /** Waiting rows whose target's hold does not list them yet. */
  unlisted: Row[];
  /** Entries held behind their target's lowest head, by target. */
  held: Map<string, Row[]>;
  /** Heads behind a lower head of their target: held too, and no longer heads. */
  behind: Row[];
  /** Targets whose hold lists an entry that no longer fails. */
  stale: Set<string>;
}

/**
 * The `limit` lowest deliverable outbox entries, read through the relay index. A relay pass
 * (`pass`) also moves what it found held or misplaced; a plain read (`pendingOutbox`) only
 * leaves it out. Examines at most max(1000, 4 × limit) index entries beyond what it delivers.
 */
export async function outboxFromIndex(
  q: QueueContext,
  limit: number,
  now: number,
  pass: boolean,
  foreign?: ForeignRows,
): Promise<QueueBatch<"outbox">> {
  const { client } = q.timers;
  const table = q.tables.outbox.name;
  const page = mergePage(limit);
  const holds = new Map<string, Heads | undefined>();
  const found = new Map<string, string>(); // target → its lowest head found this pass (stored seq)
  // The rows of listed heads this pass read: the relay's rule tells which still hold their target.
  const read = new Map<string, Bookkept>();
  const dueHeads = new Set<string>(); // heads delivered this pass: they go first, hold nothing
  const decisions: Decisions = {
    relocate: [],
    unlisted: [],
    held: new Map(),
    behind: [],
    stale: new Set(),
  };
  const chosen: Row[] = [];
  // Entries each target's hold lists as held behind its heads, by key (see HOLD.held).
  const listedHeld = new Map<string, string[]>();
  let oldestAt: number | null = null;

  /**
   * The head a target is held from (undefined: not held): its lowest listed head that holds it
   * at `now` by the relay's rule ({@linkcode holdsAt}) — or that this pass did not read, or that
   * no longer failed (a release is still bringing back what it held) — or one found this pass.
   * Only a head read due for its retry holds nothing: it goes first, the rest after it.
   */
  const holdFrom = (target: string): string | undefined => {
    const listed = holds.get(target)?.seqs.find((id) => {
      const row = read.get(id);
      return row === undefined || !isHead(row) || holdsAt(row, now);
    });
    const extra = found.get(target);
    if (listed === undefined || extra === undefined) return listed ?? extra;
    return Number(extra) < Number(listed) ? extra : listed;
  };
  const classify = async (rows: Row[]) => {
    const unknown = rows.map((r) => r.candidate.target).filter((t) => !holds.has(t));
    const fetched = await readHolds(q, unknown, true, listedHeld);
    for (const target of unknown) holds.set(target, fetched.get(target));
    for (const row of rows) {
      const { item, candidate: c } = row;
      if (item[FAILURE.deadAt] === undefined) {
        oldestAt = earliest(oldestAt, numberOf(item[OUTBOX.createdAt]));
      }
      const place = placeOf("outbox", item, now);
      if (place && misplaced(partOf(row.from), partOf(place.part))) {
        // Parked or dead-lettered in place, by a writer that keeps no index.
        const head = !item[FAILURE.unreadable]?.BOOL;
        decisions.relocate.push({ row, place, head });
        const before = found.get(c.target);
        if (head && (before === undefined || c.seq < Number(before))) found.set(c.target, c.id);
        continue;
      }
      const listed = holds.get(c.target)?.seqs.includes(c.id) ?? false;
      const bookkeeping = bookkeepingOf(item);
      if (listed) read.set(c.id, bookkeeping);
      if (listed && !isHead(bookkeeping)) {
        // Listed, but no longer failed (retried by an operator whose release is still bringing
        // back what it held, or by a writer that keeps no holds): it holds its target until
        // that is back, so nothing passes an entry on its way back; the release is finished.
        decisions.stale.add(c.target);
      }
      // A head whose retry is due (read here by time): it goes first, then the rest.
      const dueHead = isHead(bookkeeping) && !holdsAt(bookkeeping, now);
      if (dueHead) {
        dueHeads.add(c.id);
        if (!listed) decisions.unlisted.push(row);
      }
      const from = holdFrom(c.target);
      if (from === undefined || c.seq < Number(from)) chosen.push(row);
      else if (dueHead || listed) decisions.behind.push(row);
      else decisions.held.set(c.target, [...decisions.held.get(c.target) ?? [], row]);
    }
  };

  // Heads whose retry is due first: they decide whether their targets are still held.
  const waiting = new MergedPartitions(client, table, "w", page, { upTo: now });
  const due: Row[] = [];
  for (let item; due.length < limit && (item = await waiting.next());) {
    due.push({ item, candidate: candidateOf(item), from: item[RELAY.part]?.S ?? "" });
  }
  await classify(due);
  const pending = new MergedPartitions(client, table, "p", page, { extra: foreign?.rows });
  const budget = limit === Infinity ? Infinity : Math.max(1000, 4 * limit);
  let examined = 0, exhausted = false;
  while (!exhausted && chosen.length < limit && examined < budget) {
    const want = limit === Infinity ? 1000 : Math.max(25, limit - chosen.length);
    const rows: Row[] = [];
    while (rows.length < want) {
      const item = await pending.next();
      if (item === undefined) {
        exhausted = true;
        break;
      }
      const candidate = candidateOf(item);
      // Nothing past the frontier: an earlier seq another writer took may not be found yet.
      if (beyondFrontier(foreign, candidate.seq)) continue;
      rows.push({ item, candidate, from: item[RELAY.part]?.S ?? "" });
    }
    examined += rows.length;
    await classify(rows);
  }
  chosen.push(...await released(q, listedHeld, chosen, holdFrom, pass));
  if (pass) await applyDecisions(q, decisions, holdFrom, listedHeld);
  chosen.push(
    ...await followers(q, chosen, dueHeads, holdFrom, limit - chosen.length, listedHeld),
  );
  const once = [...new Map(chosen.map((row) => [row.candidate.id, row])).values()];
  const ordered = (await behindListed(q, once, listedHeld))
    .sort((a, b) => a.candidate.seq - b.candidate.seq).slice(0, limit);
  const batch = await readOutboxBodies(q, ordered.map((r) => r.candidate), now);
  for (const { candidate: c } of ordered) {
    // A head handed out: its acknowledgement releases its target.
    if (dueHeads.has(c.id)) q.headsOut.set(c.seq, { target: c.target, id: c.id });
  }
  return {
    ...batch,
    oldestAt: earliest(oldestAt, batch.oldestAt),
    held: heldCount(decisions, ordered),
  };
}

/** How many entries the pass met behind a held target and leaves there (RelayItems.held). */
function heldCount(decisions: Decisions, handedOut: Row[]): number {
  const out = new Set(handedOut.map((row) => row.candidate.id));
  const left = [...decisions.held.values()].flat().concat(decisions.behind);
  return new Set(left.map((row) => row.candidate.id).filter((id) => !out.has(id))).size;
}

/**
 * The entries a release brought back that the hold still lists (they stay listed until
 * delivered): read by key, so that they go before their target's later entries even while the
 * index does not show them back yet. Those still held stay; those gone (delivered) are taken off
 * the list by a pass.
 */
async function released(
  q: QueueContext,
  listed: Map<string, string[]>,
  chosen: Row[],
  holdFrom: (target: string) => string | undefined,
  pass: boolean,
): Promise<Row[]> {
  if (listed.size === 0) return [];
  const rows = await readOutboxRows(q, [...listed.values()].flat());
  const taken = new Set(chosen.map((row) => row.candidate.id));
  const back: Row[] = [];
  for (const [target, seqs] of listed) {
    const gone = seqs.filter((seq) => !rows.has(seq));
    if (pass && gone.length) await unlistHeld(q, target, gone);
    const from = holdFrom(target);
    for (const seq of seqs) {
      const item = rows.get(seq);
      if (item === undefined || taken.has(seq)) continue;
      const part = item[RELAY.part]?.S ?? "";
      if (partOf(part) !== "p") continue; // still held (or parked again)
      const candidate = candidateOf(item);
      if (from === undefined || candidate.seq < Number(from)) {
        back.push({ item, candidate, from: part });
      }
    }
  }
  return back;
}

/**
 * The held entries that may follow a head chosen for delivery in the same pass (due for its
 * retry): those of its target below the head it is still held from, lowest first, up to `room`.
 * They go after it in its target's lane, so they wait for it as they would have.
 */
async function followers(
  q: QueueContext,
  chosen: Row[],
  dueHeads: Set<string>,
  holdFrom: (target: string) => string | undefined,
  room: number,
  listed: Map<string, string[]>,
): Promise<Row[]> {
  const targets = new Set(
    chosen.filter(({ candidate: c }) => dueHeads.has(c.id)).map(({ candidate: c }) => c.target),
  );
  // The hold lists them by key: a move a moment ago is there whatever the index shows yet.
  const seqs = [...targets].flatMap((target) => listed.get(target) ?? []);
  const found = await readOutboxRows(q, seqs);
  const rows: Row[] = [];
  for (const target of targets) {
    const from = holdFrom(target);
    const part = partition("h", target);
    for (const seq of listed.get(target) ?? []) {
      const item = found.get(seq);
      if (item === undefined || item[RELAY.part]?.S !== part) continue;
      const candidate = candidateOf(item);
      if (from === undefined || candidate.seq < Number(from)) {
        rows.push({ item, candidate, from: part });
      }
    }
  }
  return rows.sort((a, b) => a.candidate.seq - b.candidate.seq).slice(0, room);
}

/**
 * Leaves out, of each target, what comes after an entry its hold lists as held (by key) that this
 * pass does not deliver: the held ones go first, whatever the index showed of them.
 */
async function behindListed(
  q: QueueContext,
  chosen: Row[],
  listed: Map<string, string[]>,
): Promise<Row[]> {
  const taken = new Set(chosen.map((row) => row.candidate.id));
  const waiting = [...listed].flatMap(([, seqs]) => seqs.filter((seq) => !taken.has(seq)));
  if (waiting.length === 0) return chosen;
  const present = await readOutboxRows(q, waiting);
  const first = new Map<string, number>(); // target → its lowest listed entry left behind
  for (const [target, seqs] of listed) {
    for (const seq of seqs) {
      if (taken.has(seq) || !present.has(seq)) continue;
      first.set(target, Math.min(first.get(target) ?? Infinity, Number(seq)));
    }
  }
  return chosen.filter(({ candidate: c }) => !(c.seq > (first.get(c.target) ?? Infinity)));
}

/**
 * Whether a row read from partition `from` belongs elsewhere by its own attributes: dead but not
 * in a dead partition, or waiting for a retry still to come but in a pending one.
 */
export function misplaced(from: string | null, belongs: string | null): boolean {
  return (belongs === "d" && from !== "d") || (belongs === "w" && from === "p");
}

/** Writes what a pass decided: misplaced rows moved, unlisted heads listed, held rows moved. */
async function applyDecisions(
  q: QueueContext,
  decisions: Decisions,
  holdFrom: (target: string) => string | undefined,
  listedHeld: Map<string, string[]>,
): Promise<void> {
  const listed = new Map([...listedHeld].map(([target, seqs]) => [target, seqs.length]));
  await eachConcurrently(
    decisions.relocate,
    ITEM_WRITES_IN_FLIGHT,
    ({ row, place, head }) =>
      guarded(q, [
        moveItem(q, row, place),
        ...(head ? [addHead(q, row.candidate.target, row.item[OUTBOX.seq]!)] : []),
      ]),
  );
  await eachConcurrently(decisions.unlisted, ITEM_WRITES_IN_FLIGHT, (row) =>
    guarded(q, [
      headCheck(q, row.item[OUTBOX.seq]!),
      addHead(q, row.candidate.target, row.item[OUTBOX.seq]!),
    ]));
  await eachConcurrently(decisions.behind, ITEM_WRITES_IN_FLIGHT, async (row) => {
    const from = holdFrom(row.candidate.target);
    if (from === undefined || Number(from) >= row.candidate.seq) return;
    await guarded(q, [
      headCheck(q, { N: from }),
      moveItem(q, row, heldPlaceOf(row)),
      headToHeld(
        q,
        row.candidate.target,
        row.candidate.id,
        listable(listed, row.candidate.target, 1),
      ),
    ]);
  });
  await eachConcurrently(
    [...decisions.held],
    ITEM_WRITES_IN_FLIGHT,
    ([target, rows]) => holdBack(q, target, rows, holdFrom(target), listed),
  );
  await eachConcurrently(
    [...decisions.stale],
    ITEM_WRITES_IN_FLIGHT,
    (target) => bringBackHeld(q, target),
  );
}

/**
 * Moves a held target's entries to its partition, a transaction per chunk that also checks the
 * lowest head still holds it: if not (delivered or dropped meanwhile, or by a writer keeping no
 * holds), the target is released instead. An entry that changed meanwhile is left out.
 */
async function holdBack(
  q: QueueContext,
  target: string,
  rows: Row[],
  from: string | undefined,
  listed: Map<string, number>,
): Promise<void> {
  if (from === undefined) return;
  const held = rows.filter((row) => row.candidate.seq > Number(from));
  for (let chunk of chunks(held, MOVE_CHUNK)) {
    for (let attempt = 0; chunk.length > 0 && attempt < 3; attempt++) {
      const done = await transactItems(
        q.timers.client,
        holdItems(
          q.tables,
          target,
          from,
          chunk.map((row) => ({ seq: row.candidate.id, from: row.from })),
          listable(listed, target, chunk.length),
        ),
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
  // A release that raced these moves may have missed them (the index lags): look again.
  if ((await readHolds(q, [target])).get(target)?.seqs.includes(from) !== true) {
    await bringBackHeld(q, target);
  }
}

/** The update that moves an index row to `place`, if it is still where the pass found it. */
function moveItem(q: QueueContext, row: Row, place: Place): TransactWriteItem {
  const key = { [OUTBOX.seq]: row.item[OUTBOX.seq]! };
  return { Update: moveInput(q.tables.outbox.name, key, row.from, place) };
}

/** A check that the entry `seq` still holds its target (waiting for a retry, or dead). */
function headCheck(q: QueueContext, seq: AttributeValue): TransactWriteItem {
  return {
    ConditionCheck: {
      TableName: q.tables.outbox.name,
      Key: { [OUTBOX.seq]: { N: seq.N! } },
      ConditionExpression: STILL_HEAD,
      ExpressionAttributeNames: STILL_HEAD_NAMES,
    },
  };
}

function heldPlaceOf(row: Row): Place {
  return { part: partition("h", row.candidate.target), order: { N: row.item[OUTBOX.seq]!.N! } };
}

/**
 * How many held entries a hold lists by key at most (about 100 KB of its 400 KB item). Past that
 * a target's further held entries are found through the index alone: a release a moment after
 * such a move waits for the index to show them (the next pass).
 */
export const LISTED_HELD_MAX = 20_000;

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
    q.timers.client,
    items,
    { operation: "relayBatch", key: `outbox ${items.length} items` },
    q.resends,
    "the rows may have moved; the next pass reads where they are",
  );
}
