// Held targets (#24): which outbox entries hold their target (its heads: waiting for a retry, or
// dead), and releasing a target — its held entries back to the pending partitions, in order —
// when a head is delivered, retried, dropped or found gone. A target's hold is one small item in
// the counters table, read by key: what a pass pays for it follows the targets it delivers to,
// never how many targets are held.
import { GETS_IN_FLIGHT, ITEM_WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import {
  batchGet,
  chunks,
  eachConcurrently,
  isNamed,
  type Item,
  N,
  S,
} from "../../dynamo/_dynamo.ts";
import { sendTransaction, transactItems, unansweredWrite } from "../../dynamo/_lost_answers.ts";
import { COUNTER, FAILURE, HOLD, OUTBOX, RELAY, RELEASES } from "../../core/_layout.ts";
import { LIMITS } from "../../core/_validate.ts";
import { type Bookkept, isHead } from "../../core/_relay_rules.ts";
import { partition } from "./_relay_index.ts";
import { release as decideRelease, type ReleaseRow } from "../../core/_queue_transitions.ts";
import { queryPartition } from "./_index_reads.ts";
import type { QueueContext } from "./_queue_items.ts";
import { deleteSeqs } from "./_seq_deletes.ts";
import {
  addHead,
  addHeld,
  bringBackInput,
  holdKey,
  removeHeads,
  STILL_HEAD,
  STILL_HEAD_NAMES,
  unlistHeld as unlisted,
} from "./_transitions.ts";
export { addHead, addHeld, holdKey, removeHeads, STILL_HEAD, STILL_HEAD_NAMES };

/** A mark older than this (seconds) is a release that did not finish: a pass finishes it. */
export const STALE_RELEASE_SECONDS = 60;

/** The entries holding one target: their seqs as stored, and the lowest as a number. */
export interface Heads {
  seqs: string[];
  lowest: number;
}

/** The heads a hold item lists, lowest first (`undefined`: none, the target is not held). */
export function headsOf(item: Item | undefined): Heads | undefined {
  const seqs = [...item?.[HOLD.heads]?.NS ?? []].sort((a, b) => Number(a) - Number(b));
  return seqs.length === 0 ? undefined : { seqs, lowest: Number(seqs[0]) };
}

/** The holds of these targets (strongly consistent unless the store, or the caller, says otherwise). */
export async function readHolds(
  q: QueueContext,
  targets: Iterable<string>,
  consistent = true,
  held?: Map<string, string[]>,
  spills?: Map<string, number>,
): Promise<Map<string, Heads>> {
  const table = q.tables.counters.name;
  const holds = new Map<string, Heads>();
  const keys = [...new Set(targets)].map(holdKey);
  await eachConcurrently(
    chunks(keys, LIMITS.batchGetKeys),
    ITEM_WRITES_IN_FLIGHT,
    (chunk) =>
      batchGet(
        q.client,
        { [table]: { Keys: chunk, ConsistentRead: consistent } },
        (responses) => {
          for (const item of responses[table] ?? []) {
            const heads = headsOf(item);
            const id = item[COUNTER.id]?.S ?? "";
            if (heads) holds.set(id.slice(HOLD.prefix.length), heads);
            const listed = [...item[HOLD.held]?.NS ?? []];
            if (held && listed.length) held.set(id.slice(HOLD.prefix.length), listed);
            const spill = item[HOLD.spill]?.N;
            if (spills && spill !== undefined) {
              spills.set(
                id.slice(HOLD.prefix.length),
                Number(spill),
              );
            }
          }
        },
      ),
  );
  return holds;
}

/** Takes entries no longer held (delivered, or gone) off `target`'s list of held entries. */
export async function unlistHeld(q: QueueContext, target: string, seqs: string[]): Promise<void> {
  if (seqs.length === 0) return;
  await q.client.send(new UpdateItemCommand(unlisted(q, target, seqs).Update!));
}

/**
 * Releases `target` with `change` (what makes a head stop holding it: a retry, a drop; nothing
 * for a delivered head, already acknowledged): marks the release, applies the change (one
 * transaction with an idempotency token), brings the held entries back, then unmarks it. A crash
 * anywhere leaves the mark, and a pass finishes it. The head leaves the hold only once what it
 * held is back (see {@linkcode bringBackHeld}): until then the target stays held, so that no pass
 * delivers a later entry while an earlier one is still on its way back. `false` when a condition
 * of the change failed (nothing was applied). `mark`: one {@linkcode markReleases} made.
 */
export async function release(
  q: QueueContext,
  target: string,
  change: TransactWriteItem[],
  write: { operation: string; key: string; known: string },
  mark?: string,
): Promise<boolean> {
  const marked = mark ?? (await markReleases(q, [target]))[0]!;
  const done = change.length
    ? await transactItems(q.client, change, write, q.resends, write.known)
    : { applied: true };
  if (done.applied) await bringBackHeld(q, target);
  await updateReleases(q, "DELETE", [marked]);
  return done.applied;
}

/** Marks releases of `targets` about to start (one write): their marks, in the same order. */
export async function markReleases(q: QueueContext, targets: string[]): Promise<string[]> {
  const marks = targets.map((target) => `${target}@${Math.floor(q.now() / 1000)}`);
  if (marks.length) await updateReleases(q, "ADD", marks);
  return marks;
}

/** The targets whose heads among `seqs` this store handed out, marked for their release. */
export interface DeliveredHeads {
  targets: string[];
  marks: string[];
}

/**
 * The targets of the heads among `seqs` that this store handed out, with the release marks made
 * when they were handed out ({@linkcode markHandedOut}). No guarantee rests on this memory: a
 * head acknowledged by another store instance (another isolate, a custom relay) leaves its mark,
 * and a pass finishes that release a minute on ({@linkcode finishReleases}); this only makes it
 * prompt when the same store acknowledges.
 */
export async function markDelivered(
  q: QueueContext,
  seqs: readonly number[],
): Promise<DeliveredHeads> {
  const byTarget = new Map<string, string | undefined>();
  for (const seq of seqs) {
    const head = q.headsOut.get(seq);
    if (head === undefined) continue;
    q.headsOut.delete(seq);
    byTarget.set(head.target, head.mark ?? byTarget.get(head.target));
  }
  // A head a plain read handed out (pendingOutbox writes nothing) is marked now.
  const unmarked = [...byTarget].filter(([, mark]) => mark === undefined).map(([t]) => t);
  const made = await markReleases(q, unmarked);
  unmarked.forEach((target, i) => byTarget.set(target, made[i]));
  return { targets: [...byTarget.keys()], marks: [...byTarget.values()] as string[] };
}

/**
 * Marks the release of the targets of heads a batch hands out (their retry is due), before
 * anyone can acknowledge them: whoever acknowledges a head, and whatever store instance runs the
 * next pass, the mark is there, and a pass finishes the release once it is a minute old (a head
 * that failed again then holds its target still: the release moves nothing). One write.
 */
export async function markHandedOut(
  q: QueueContext,
  heads: { seq: number; target: string; id: string }[],
  write: boolean,
  setApartBehind: (target: string) => boolean,
): Promise<void> {
  const targets = [...new Set(heads.map((head) => head.target))].filter(setApartBehind);
  const made = write ? await markReleases(q, targets) : [];
  const marks = new Map(targets.map((target, i) => [target, made[i]]));
  for (const { seq, target, id } of heads) {
    q.headsOut.set(seq, { target, id, mark: marks.get(target) });
  }
}

/**
 * Acknowledges delivered entries: `remove` deletes them; then the targets of the heads among them
 * are released, those this store handed out as heads ({@linkcode markDelivered}) and those that
 * became heads after this store handed them out ({@linkcode releaseBecameHeads}).
 */
export async function acknowledgeOutbox(
  q: QueueContext,
  seq: number | number[],
  later?: Map<string, Set<number>>,
): Promise<void> {
  const seqs = [seq].flat();
  const heads = await markDelivered(q, seqs);
  const others = handedOutTargets(q, seqs, heads.targets);
  await deleteSeqs(q.client, q.tables.outbox.name, "seq", seq);
  await releaseDelivered(q, heads);
  if (later === undefined) return await releaseBecameHeads(q, others);
  for (const [target, acked] of others) {
    const all = later.get(target) ?? new Set<number>();
    for (const seq of acked) all.add(seq);
    later.set(target, all);
  }
}

/**
 * A relay pass's acknowledgements: each batch as {@linkcode acknowledgeOutbox}, and the check of
 * whether one of them became a head meanwhile once, when the pass settles: one read of each
 * target's hold a pass, not one a batch (read after every batch's delete, it sees every failure
 * recorded before one).
 */
export function passAcks(
  q: QueueContext,
  open: () => void,
): { ack(seqs: number[]): Promise<void>; settle(): Promise<void> } {
  const later = new Map<string, Set<number>>();
  return {
    ack: async (seqs) => {
      open();
      await acknowledgeOutbox(q, seqs, later);
    },
    settle: async () => {
      const targets = new Map(later);
      later.clear();
      await releaseBecameHeads(q, targets);
    },
  };
}

/**
 * The entries among `seqs` that this store handed out when they were no heads, by target key
 * (leaving out `released`: targets released anyway). A concurrent pass may have made one a head
 * since (its delivery failed there, and entries were set apart behind it): acknowledging it must
 * release its target then, or what was set apart waits unseen ({@linkcode releaseBecameHeads}).
 */
export function handedOutTargets(
  q: QueueContext,
  seqs: readonly number[],
  released: readonly string[],
): Map<string, Set<number>> {
  const byTarget = new Map<string, Set<number>>();
  for (const seq of seqs) {
    const target = q.handedOut.get(seq);
    if (target === undefined) continue;
    q.handedOut.delete(seq);
    if (released.includes(target)) continue;
    byTarget.set(target, (byTarget.get(target) ?? new Set()).add(seq));
  }
  return byTarget;
}

/**
 * Once `acked` (by target) are deleted, releases each target whose hold lists one of them as a
 * head: it became one after it was handed out (a concurrent pass recorded a failed delivery of
 * it), and no pass offers what was set apart behind it. One strongly consistent read of those
 * targets' holds (a failure recorded before the delete is in it; one after finds no row and
 * makes no head).
 */
export async function releaseBecameHeads(
  q: QueueContext,
  acked: Map<string, Set<number>>,
): Promise<void> {
  if (acked.size === 0) return;
  const holds = await readHolds(q, acked.keys());
  const targets = [...acked].filter(([target, seqs]) =>
    holds.get(target)?.seqs.some((id) => seqs.has(Number(id))) === true
  ).map(([target]) => target);
  await eachConcurrently(targets, ITEM_WRITES_IN_FLIGHT, async (target) => {
    await release(q, target, [], {
      operation: "ackOutbox",
      key: target,
      known: "the delivered entry may still hold its target; a later pass releases it",
    });
  });
}

/** Releases the targets {@linkcode markDelivered} marked, once their heads are acknowledged. */
export async function releaseDelivered(q: QueueContext, heads: DeliveredHeads): Promise<void> {
  await eachConcurrently(
    heads.targets.map((target, i) => [target, heads.marks[i]!]),
    ITEM_WRITES_IN_FLIGHT,
    ([target, mark]) =>
      release(q, target!, [], {
        operation: "ackOutbox",
        key: target!,
        known: "the delivered entry may still hold its target; a later pass releases it",
      }, mark).then(() => {}),
  );
}

/**
 * Brings `target`'s held entries back to the pending partitions: those below its lowest head
 * still holding it (every one when none does). Heads that no longer hold it (delivered, retried
 * or dropped, by this module or a writer that does not keep holds) are taken out of the hold
 * last, once every entry they held is back: while they are listed, passes and inline deliveries
 * keep the target held. Idempotent.
 */
export async function bringBackHeld(q: QueueContext, target: string): Promise<void> {
  const heads = (await readHolds(q, [target])).get(target)?.seqs ?? [];
  const headRows = heads.length ? await readOutboxRows(q, heads) : new Map<string, Item>();
  const table = q.tables.outbox.name;
  const part = partition("h", target);
  // The entries the hold lists, by key (the index may not show those held a moment ago); they
  // stay listed until delivered, so that passes deliver them before their target's later ones.
  const listed = new Map<string, string[]>();
  const spills = new Map<string, number>();
  await readHolds(q, [target], true, listed, spills);
  const rows = await readOutboxRows(q, listed.get(target) ?? []);
  const releaseRow = (row: Item | undefined): ReleaseRow | undefined =>
    row && {
      seq: Number(row[OUTBOX.seq]?.N),
      setApart: row[RELAY.part]?.S === part,
      head: holdsTarget(row),
    };
  const { back, lowest, gone } = decideRelease(
    { heads, held: rows.keys() },
    (seq) => releaseRow(headRows.get(seq)),
    (seq) => releaseRow(rows.get(seq)),
  );
  await eachConcurrently(back, ITEM_WRITES_IN_FLIGHT, (seq) => moveBack(q, rows.get(seq)!, part));
  let start: Item | undefined;
  let found = 0;
  do {
    const page = await queryPartition(
      q.client,
      table,
      lowest < Infinity ? { part, below: N(lowest) } : { part },
      undefined,
      start,
    );
    found += page.Items?.length ?? 0;
    await eachConcurrently(
      page.Items ?? [],
      ITEM_WRITES_IN_FLIGHT,
      (row) => moveBack(q, row, part),
    );
    start = page.LastEvaluatedKey;
  } while (start);
  // Entries set apart unlisted: the index showed none left, long enough after the last such move.
  const spill = spills.get(target);
  if (spill !== undefined && found === 0 && q.now() / 1000 - spill > SPILL_SETTLE_SECONDS) {
    await clearSpill(q, target, spill);
  }
  await eachConcurrently(
    gone?.seqs ?? [],
    ITEM_WRITES_IN_FLIGHT,
    (seq) => dropHead(q, target, seq),
  );
}

/**
 * How long after entries were last set apart unlisted a release trusts the index to show them
 * all: then, finding none, it clears the hold's `spill`.
 */
export const SPILL_SETTLE_SECONDS = 30;

/** Takes `spill` off a hold, unless entries were set apart unlisted again meanwhile. */
async function clearSpill(q: QueueContext, target: string, spill: number): Promise<void> {
  try {
    await q.client.send(
      new UpdateItemCommand({
        TableName: q.tables.counters.name,
        Key: holdKey(target),
        UpdateExpression: "REMOVE #s",
        ConditionExpression: "#s = :s",
        ExpressionAttributeNames: { "#s": HOLD.spill },
        ExpressionAttributeValues: { ":s": N(spill) },
      }),
    );
  } catch (error) {
    if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
  }
}

/** A held entry back to its pending partition, unless it moved (or went) meanwhile. */
async function moveBack(q: QueueContext, row: Item, from: string): Promise<void> {
  try {
    await q.client.send(
      new UpdateItemCommand(bringBackInput(q.tables, row[OUTBOX.seq]!.N!, from)),
    );
  } catch (error) {
    if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
  }
}

/**
 * Outbox rows read by their stored seqs (strongly consistent: whether a head still holds its
 * target must not lag a release), by the seq text DynamoDB returns.
 */
export async function readOutboxRows(
  q: QueueContext,
  seqs: readonly string[],
): Promise<Map<string, Item>> {
  const rows = new Map<string, Item>();
  const table = q.tables.outbox.name;
  await eachConcurrently(
    chunks([...new Set(seqs)], LIMITS.batchGetKeys),
    GETS_IN_FLIGHT,
    (chunk) =>
      batchGet(
        q.client,
        { [table]: { Keys: chunk.map((n) => ({ [OUTBOX.seq]: { N: n } })), ConsistentRead: true } },
        (responses) => {
          for (const row of responses[table] ?? []) rows.set(row[OUTBOX.seq]?.N ?? "", row);
        },
      ),
  );
  return rows;
}

/**
 * Whether an outbox row is still one of its target's heads: there, and waiting for a retry (due
 * or not) or dead and readable (the relay's rule, {@linkcode isHead}).
 */
export function holdsTarget(row: Item | undefined): boolean {
  return row !== undefined && isHead(bookkeepingOf(row));
}

/** A stored row's bookkeeping, as the relay's rules read it (an unreadable time: none). */
export function bookkeepingOf(row: Item): Bookkept {
  const time = (name: string) => {
    const n = Number(row[name]?.N);
    return row[name] === undefined ? null : Number.isFinite(n) ? n : 0;
  };
  return {
    retryAt: time(FAILURE.retryAt),
    deadAt: time(FAILURE.deadAt),
    unreadable: row[FAILURE.unreadable]?.BOOL === true,
  };
}

/** Takes a head that no longer holds its target out of the hold, unless it holds it again. */
async function dropHead(q: QueueContext, target: string, seq: string): Promise<void> {
  const check: TransactWriteItem = {
    ConditionCheck: {
      TableName: q.tables.outbox.name,
      Key: { [OUTBOX.seq]: { N: seq } },
      ConditionExpression: `NOT (${STILL_HEAD})`,
      ExpressionAttributeNames: STILL_HEAD_NAMES,
    },
  };
  try {
    await sendTransaction(
      q.client,
      [check, removeHeads(q, target, [seq])],
      unansweredWrite(
        { operation: "release", key: target },
        q.resends.lost,
        "a head no longer holding its target may still be listed; the next release takes it out",
      ),
    );
  } catch (error) {
    if (!isNamed(error, "TransactionCanceledException")) throw error;
  }
}

/** Adds (`ADD`) or removes (`DELETE`) release marks. */
async function updateReleases(
  q: QueueContext,
  verb: "ADD" | "DELETE",
  marks: string[],
): Promise<void> {
  await q.client.send(
    new UpdateItemCommand({
      TableName: q.tables.counters.name,
      Key: { [COUNTER.id]: S(RELEASES.id) },
      UpdateExpression: `${verb} #t :m`,
      ExpressionAttributeNames: { "#t": RELEASES.targets },
      ExpressionAttributeValues: { ":m": { SS: marks } },
    }),
  );
}

/** Finishes releases that a crash left marked (older than a minute): at most `budget` of them. */
export async function finishReleases(
  q: QueueContext,
  marks: string[],
  budget: number,
): Promise<void> {
  const now = q.now() / 1000;
  const stale = marks.filter((mark) => now - Number(mark.split("@")[1]) > STALE_RELEASE_SECONDS);
  await eachConcurrently(stale.slice(0, budget), ITEM_WRITES_IN_FLIGHT, async (mark) => {
    await bringBackHeld(q, mark.split("@")[0]!);
    await updateReleases(q, "DELETE", [mark]);
  });
}

/** How many stale release marks one pass finishes. */
export const RELEASES_PER_PASS = 10;

/**
 * One outbox pass's upkeep: it finishes the releases a crash (or an acknowledgement in another
 * store instance) left marked, a few a pass; the marks read strongly, in one BatchGetItem.
 */
export async function finishCrashedReleases(q: QueueContext): Promise<void> {
  const table = q.tables.counters.name;
  let item: Item | undefined;
  await batchGet(q.client, {
    [table]: { Keys: [{ [COUNTER.id]: S(RELEASES.id) }], ConsistentRead: true },
  }, (responses) => {
    item ??= responses[table]?.[0];
  });
  const marks = [...item?.[RELEASES.targets]?.SS ?? []];
  if (marks.length > 0) await finishReleases(q, marks, RELEASES_PER_PASS);
}
