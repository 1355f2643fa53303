// DynamoDBStore's outbox queue: candidates from the relay index, rows and holds read by key
// (strongly), and the writes of a plan, each conditioned on the row being where it was read.
import type { TransactWriteItem, Update } from "@aws-sdk/client-dynamodb";
import { GETS_IN_FLIGHT, ITEM_WRITES_IN_FLIGHT, WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import {
  batchGet,
  batchWrite,
  chunks,
  conditionalUpdate,
  eachConcurrently,
  isNamed,
  type Item,
  N,
  S,
} from "../../dynamo/_dynamo.ts";
import {
  type Resends,
  sendTransaction,
  transactItems,
  unansweredWrite,
} from "../../dynamo/_lost_answers.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import { COUNTER, FAILURE, HOLD, OUTBOX, outboxFromItem, RELAY } from "../../core/_layout.ts";
import { LIMITS } from "../../core/_validate.ts";
import { numberText } from "../../core/_json.ts";
import { instrument } from "../../core/_telemetry.ts";
import { keepStoredText } from "../../core/_stored_event.ts";
import { plainMap } from "../../core/_attributes.ts";
import type { ExecutionTables } from "../../core/table_specs.ts";
import type {
  CandidateCursor,
  OutboxApplied,
  OutboxCandidate,
  OutboxHold,
  OutboxQueue,
  OutboxRow,
  OutboxWrites,
  RelayLease,
  Release,
  SetApart,
} from "../../core/relay_queues.ts";
import { takeLease } from "./_relay_lease.ts";
import type { RelayFailure, RelayKind } from "../../core/types.ts";
import { createdTime } from "../../core/_event_time.ts";
import { targetKey } from "../commit/_outbox_chain.ts";
import { failed, partition, rowAt, seqShard } from "./_relay_index.ts";
import { MergedPartitions, mergePage, queryPartition } from "./_index_reads.ts";

/** What the outbox queue needs of its store. */
export interface OutboxContext {
  readonly client: DynamoDBSender;
  readonly tables: ExecutionTables;
  readonly resends: Resends;
  /** The store's clock, epoch milliseconds. */
  readonly now: () => number;
  /** Refuses a call on a closed store (`method`: what was called). */
  readonly open: (method: string) => void;
}

/** How many held entries a hold lists by key at most: with its heads, it stays under 4 KB. */
export const LISTED_HELD_MAX = 150;

/** How long after entries were last set apart unlisted a release trusts the index to show them. */
export const SPILL_SETTLE_SECONDS = 30;

/** Entries of one target a move takes in one transaction (with the head's check and the hold). */
const MOVE_CHUNK = 97;

/** The condition that an outbox entry still holds its target: there, and waiting or dead. */
const STILL_HEAD = "attribute_exists(#k) AND (attribute_exists(#hd) OR attribute_exists(#hr))";
const STILL_HEAD_NAMES = { "#k": OUTBOX.seq, "#hd": FAILURE.deadAt, "#hr": FAILURE.retryAt };

/** What the queue modules share: the store's context and its outbox queue. */
export interface QueueContext extends OutboxContext {
  readonly outbox: OutboxQueue;
  /** `otherWriters: true`: a round of `kind`'s feed first, the rows it adopted. */
  readonly round?: (kind: RelayKind) => Promise<Item[]>;
}

/** The outbox as the relay reads and writes it, on DynamoDB. */
export class OutboxTable implements OutboxQueue {
  constructor(readonly ctx: OutboxContext) {}

  now(): number {
    return this.ctx.now() / 1000;
  }

  lease(seconds: number): Promise<RelayLease | null> {
    this.ctx.open("outboxQueue.lease");
    return takeLease(this.ctx, "outbox", seconds);
  }

  candidates(now: number): CandidateCursor {
    this.ctx.open("outboxQueue.candidates");
    const { client, tables } = this.ctx;
    const table = tables.outbox.name;
    let waiting: MergedPartitions | undefined, pending: MergedPartitions | undefined;
    return {
      next: async (count) => {
        waiting ??= new MergedPartitions(client, table, "w", mergePage(count), { upTo: now });
        const found: OutboxCandidate[] = [];
        for (let item; found.length < count && (item = await waiting.next());) {
          found.push(candidateOf(item));
        }
        pending ??= new MergedPartitions(client, table, "p", mergePage(count));
        for (let item; found.length < count && (item = await pending.next());) {
          found.push(candidateOf(item));
        }
        return found;
      },
    };
  }

  async rows(ids: readonly string[]): Promise<Map<string, OutboxRow>> {
    this.ctx.open("outboxQueue.rows");
    const table = this.ctx.tables.outbox.name;
    const rows = new Map<string, OutboxRow>();
    const keys = [...new Set(ids)].map((id) => ({ [OUTBOX.seq]: { N: id } }));
    await eachConcurrently(
      chunks(keys, LIMITS.batchGetKeys),
      GETS_IN_FLIGHT,
      (chunk) =>
        batchGet(this.ctx.client, { [table]: { Keys: chunk, ConsistentRead: true } }, (found) => {
          for (const item of found[table] ?? []) rows.set(item[OUTBOX.seq]?.N ?? "", rowOf(item));
        }),
    );
    return rows;
  }

  async holds(targets: readonly string[]): Promise<Map<string, OutboxHold>> {
    this.ctx.open("outboxQueue.holds");
    const table = this.ctx.tables.counters.name;
    const holds = new Map<string, OutboxHold>();
    const keys = [...new Set(targets)].map(holdKey);
    await eachConcurrently(
      chunks(keys, LIMITS.batchGetKeys),
      GETS_IN_FLIGHT,
      (chunk) =>
        batchGet(this.ctx.client, { [table]: { Keys: chunk, ConsistentRead: true } }, (found) => {
          for (const item of found[table] ?? []) {
            const target = item[COUNTER.id]!.S!.slice(HOLD.prefix.length);
            const spill = item[HOLD.spill]?.N;
            // The feed's lists, another writer's seqs and ours: an entry waits for the highest.
            const recent = [...item[HOLD.recent]?.NS ?? [], ...item[HOLD.recentOurs]?.NS ?? []];
            holds.set(target, {
              heads: bySeq(item[HOLD.heads]?.NS),
              held: bySeq(item[HOLD.held]?.NS),
              spill: spill === undefined ? null : Number(spill),
              ...recent.length > 0 && { recent: bySeq(recent) },
            });
          }
        }),
    );
    return holds;
  }

  async apply(writes: OutboxWrites): Promise<OutboxApplied> {
    this.ctx.open("outboxQueue.apply");
    const applied: OutboxApplied = { failed: [], recheck: [] };
    const each = <T>(items: T[] | undefined, write: (item: T) => Promise<void>) =>
      eachConcurrently(items ?? [], ITEM_WRITES_IN_FLIGHT, write);
    await each(writes.setApart, async (move) => {
      if (await this.#setApart(move)) applied.recheck.push(move.target);
    });
    await each(writes.demote, async (move) => {
      if (await this.#setApart(move, true)) applied.recheck.push(move.target);
    });
    await each(
      writes.unlist,
      async ({ target, ids }) =>
        void await this.#update(holdUpdate(this.ctx, target, "DELETE", "held", ids)),
    );
    await each(writes.release, (release) => this.#release(release));
    applied.failed = await Promise.all(
      (writes.fail ?? []).map((f) => this.#fail(f.row, f.failure)),
    );
    const table = this.ctx.tables.outbox.name;
    await eachConcurrently(
      chunks(writes.ack ?? [], LIMITS.batchWriteItems),
      WRITES_IN_FLIGHT,
      (batch) =>
        batchWrite(
          this.ctx.client,
          table,
          batch.map((id) => ({ DeleteRequest: { Key: seqKey(id) } })),
        ),
    );
    return applied;
  }

  /**
   * Moves entries behind `move.head` (heads too: `demote`), a transaction per chunk that also
   * checks the head still fails and lists them on the hold while it has room. True when the
   * target's hold must be read again: the head no longer holds it, or a release may have raced.
   */
  async #setApart({ target, head, rows }: SetApart, demote = false): Promise<boolean> {
    const outbox = this.ctx.tables.outbox.name;
    for (let chunk of chunks(rows, MOVE_CHUNK)) {
      for (let attempt = 0, list = true; chunk.length > 0 && attempt < 4; attempt++) {
        const ids = chunk.map((row) => row.id);
        const items: TransactWriteItem[] = [
          { ConditionCheck: headCheck(outbox, head, STILL_HEAD) },
          ...chunk.map((row) => ({ Update: move(outbox, row, partition("h", target)) })),
          { Update: listHeld(this.ctx, target, ids, list, demote) },
        ];
        const done = await transactItems(
          this.ctx.client,
          items,
          {
            operation: "relayOutbox",
            key: `held target ${target}`,
          },
          this.ctx.resends,
          "entries may have moved behind their head; the next pass reads where",
        );
        if (done.applied) break;
        if (done.reasons[0]?.Code === "ConditionalCheckFailed") return true; // the head is gone
        if (done.reasons.at(-1)?.Code === "ConditionalCheckFailed") list = false; // no room
        chunk = chunk.filter((_, i) => done.reasons[i + 1]?.Code !== "ConditionalCheckFailed");
      }
    }
    return true;
  }

  /**
   * A release: heads delivered deleted with the first entry brought back (so a crash leaves the
   * target found by the next pass), the rest brought back, entries set apart unlisted looked for
   * in the index, then the heads that no longer hold the target taken out of its hold.
   */
  async #release({ target, acks, back, gone, lowest, spill }: Release): Promise<void> {
    const { client, tables } = this.ctx;
    const outbox = tables.outbox.name;
    const from = partition("h", target);
    const [first, ...rest] = back;
    if (acks.length) {
      const items: TransactWriteItem[] = acks.map((id) => ({
        Delete: { TableName: outbox, Key: seqKey(id) },
      }));
      if (first) items.push({ Update: move(outbox, first, pendingOf(first)) });
      const known = "the delivered entry may still be there; it is delivered again if it is";
      const done = await transactItems(
        client,
        items,
        { operation: "ackOutbox", key: target },
        this.ctx.resends,
        known,
      );
      // The first entry moved meanwhile (another release): the heads go all the same.
      if (!done.applied) {
        await batchWrite(
          client,
          outbox,
          acks.map((id) => ({ DeleteRequest: { Key: seqKey(id) } })),
        );
      }
    } else if (first) rest.unshift(first);
    await eachConcurrently(
      rest,
      ITEM_WRITES_IN_FLIGHT,
      async (row) => void await this.#update(move(outbox, row, pendingOf(row))),
    );
    if (spill !== null) {
      let found = 0;
      for (let start: Item | undefined;;) {
        const page = await queryPartition(
          client,
          outbox,
          lowest < Infinity ? { part: from, below: N(lowest) } : { part: from },
          undefined,
          start,
        );
        found += page.Items?.length ?? 0;
        await eachConcurrently(
          page.Items ?? [],
          ITEM_WRITES_IN_FLIGHT,
          async (item) =>
            void await this.#update(
              move(
                outbox,
                { id: item[OUTBOX.seq]!.N!, part: from },
                pendingOf({ id: item[OUTBOX.seq]!.N! }),
              ),
            ),
        );
        if (!(start = page.LastEvaluatedKey)) break;
      }
      // Cleared once a look at the whole partition (no head holds it) finds none, settled.
      if (found === 0 && lowest === Infinity && this.now() - spill > SPILL_SETTLE_SECONDS) {
        await this.#update({
          ...holdUpdate(this.ctx, target, "REMOVE", "spill"),
          ConditionExpression: "#s = :v",
          ExpressionAttributeValues: { ":v": N(spill) },
        });
      }
    }
    await eachConcurrently(gone, ITEM_WRITES_IN_FLIGHT, async (id) => {
      try {
        await sendTransaction(
          client,
          [
            { ConditionCheck: headCheck(outbox, id, `NOT (${STILL_HEAD})`) },
            { Update: holdUpdate(this.ctx, target, "DELETE", "heads", [id]) },
          ],
          unansweredWrite(
            { operation: "release", key: target },
            this.ctx.resends.lost,
            "a head no longer holding its target may still be listed; the next release takes it out",
          ),
        );
      } catch (error) {
        if (!isNamed(error, "TransactionCanceledException")) throw error; // it fails again
      }
    });
  }

  /**
   * Records a failed attempt: the row to waiting or dead (a row near 400 KB without the error
   * text); a failed entry becomes a head of its target in the same transaction.
   */
  async #fail(row: OutboxRow, failure: RelayFailure): Promise<boolean> {
    const now = this.now();
    const update = failed(
      rowAt(this.ctx.tables.outbox.name, seqKey(row.id)),
      "outbox",
      failure,
      now,
    );
    const record = async () => {
      if (failure.unreadable) return await this.#update(update);
      const done = await transactItems(
        this.ctx.client,
        [
          { Update: update },
          { Update: holdUpdate(this.ctx, row.target, "ADD", "heads", [row.id]) },
        ],
        { operation: "recordFailure", key: row.id },
        this.ctx.resends,
        "the failure may or may not be recorded; the entry comes again if it was not",
      );
      return done.applied;
    };
    try {
      return await record();
    } catch (error) {
      if (!(isNamed(error, "ValidationException") && /size/i.test(String(error)))) throw error;
      update.ExpressionAttributeValues![":e"] = S(
        "(error not recorded: the item is at DynamoDB's 400 KB limit)",
      );
      return await record();
    }
  }

  /** A conditional update: false when its condition failed (the row changed meanwhile). */
  #update(input: Update): Promise<boolean> {
    return conditionalUpdate(this.ctx.client, input);
  }
}

/** An index entry as a candidate; a row with no readable target is a lane of its own. */
export function candidateOf(item: Item): OutboxCandidate {
  const id = item[OUTBOX.seq]?.N ?? "";
  const prev = item[OUTBOX.prevSeq]?.N;
  return { id, target: targetOf(item), ...(prev === undefined ? {} : { prev: Number(prev) }) };
}

function targetOf(item: Item): string {
  const target = item[OUTBOX.targetId];
  if (target?.S !== undefined) return targetKey(target.S);
  return target?.NULL ? targetKey(null) : `!${item[OUTBOX.seq]?.N}`;
}

/** A stored row as the pipeline reads it; a seq no JS number holds (another writer's) is unreadable. */
export function rowOf(item: Item): OutboxRow {
  const id = item[OUTBOX.seq]?.N ?? "";
  const number = (name: string) => {
    const n = Number(item[name]?.N);
    return item[name]?.N === undefined ? null : Number.isFinite(n) ? n : 0;
  };
  let entry: OutboxRow["entry"];
  try {
    if (numberText(Number(id)) !== id) {
      throw new RangeError(`seq ${id} has more digits than a number holds: it cannot be delivered`);
    }
    entry = outboxFromItem(item);
    // Another writer's row (no created_at): its event passed on as stored (the SQS relay).
    if (item[OUTBOX.createdAt] === undefined) keepStoredText(entry.event, item[OUTBOX.event]?.S);
  } catch (error) {
    entry = {
      error: error instanceof Error ? error.message : String(error),
      raw: plainMap(item, {}, true),
    };
  }
  const after = item[OUTBOX.after]?.NS;
  return {
    ...candidateOf(item),
    seq: Number(id),
    attempts: number(FAILURE.attempts) ?? 0,
    retryAt: number(FAILURE.retryAt),
    deadAt: number(FAILURE.deadAt),
    unreadable: item[FAILURE.unreadable]?.BOOL === true,
    part: item[RELAY.part]?.S ?? "",
    sourceId: item[OUTBOX.sourceId]?.S ?? null,
    ...(after ? { after: after.map(Number) } : {}),
    createdAt: number(OUTBOX.createdAt) ??
      ("error" in entry ? null : createdTime(entry.event.created_time)),
    entry,
  };
}

const bySeq = (seqs: string[] | undefined) => [...seqs ?? []].sort((a, b) => Number(a) - Number(b));

const seqKey = (id: string): Item => ({ [OUTBOX.seq]: { N: id } });

/** The key of a target's hold item in the counters table. */
export const holdKey = (target: string): Item => ({ [COUNTER.id]: S(`${HOLD.prefix}${target}`) });

/** Where an entry goes back to: its pending partition, by its seq. */
export const pendingOf = (row: { id: string }) => ({
  part: partition("p", seqShard(row.id)),
  order: { N: row.id },
});

/** The update moving an entry to `to` (a partition, or a place) if it is still where it was read. */
export function move(
  table: string,
  row: { id: string; part: string },
  to: string | { part: string; order: { N: string } },
): Update {
  const place = typeof to === "string" ? { part: to, order: { N: row.id } } : to;
  return {
    TableName: table,
    Key: seqKey(row.id),
    UpdateExpression: "SET #p = :p, #o = :o",
    ConditionExpression: "#p = :from",
    ExpressionAttributeNames: { "#p": RELAY.part, "#o": RELAY.order },
    ExpressionAttributeValues: { ":p": S(place.part), ":o": place.order, ":from": S(row.part) },
  };
}

function headCheck(table: string, id: string, condition: string) {
  return {
    TableName: table,
    Key: seqKey(id),
    ConditionExpression: condition,
    ExpressionAttributeNames: STILL_HEAD_NAMES,
  };
}

/** An update of one set (or `spill`) of a target's hold item. */
export function holdUpdate(
  ctx: Pick<OutboxContext, "tables">,
  target: string,
  verb: "ADD" | "DELETE" | "REMOVE",
  set: "heads" | "held" | "spill",
  ids: string[] = [],
): Update {
  return {
    TableName: ctx.tables.counters.name,
    Key: holdKey(target),
    UpdateExpression: verb === "REMOVE" ? "REMOVE #s" : `${verb} #s :s`,
    ExpressionAttributeNames: { "#s": HOLD[set] },
    ...(verb === "REMOVE" ? {} : { ExpressionAttributeValues: { ":s": { NS: ids } } }),
  };
}

/**
 * The hold update of entries set apart: listed while the hold has room (else its `spill` says
 * when the index alone found them); a demoted head also leaves the heads.
 */
function listHeld(
  ctx: OutboxContext,
  target: string,
  ids: string[],
  list: boolean,
  demote: boolean,
): Update {
  const names: Record<string, string> = {};
  const values: Item = {};
  const parts: string[] = [];
  if (list) {
    names["#l"] = HOLD.held;
    values[":l"] = { NS: ids };
    values[":room"] = N(LISTED_HELD_MAX - ids.length);
    parts.push("ADD #l :l");
  } else {
    names["#s"] = HOLD.spill;
    values[":t"] = N(Math.floor(ctx.now() / 1000));
    parts.push("SET #s = :t");
  }
  if (demote) {
    names["#h"] = HOLD.heads;
    values[":h"] = { NS: ids };
    parts.push("DELETE #h :h");
  }
  return {
    TableName: ctx.tables.counters.name,
    Key: holdKey(target),
    UpdateExpression: parts.join(" "),
    ...(list ? { ConditionExpression: "attribute_not_exists(#l) OR size(#l) <= :room" } : {}),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

// Every read and write of a pass in a span `DynamoDBStore.outboxQueue.{method}` (see _telemetry.ts).
instrument(OutboxTable, { name: "DynamoDBStore.outboxQueue" });
