// DynamoDBStore's spawn and timer queues: the rows that may be due, found through the relay index
// and read again by key (strongly), and a failed attempt recorded on the row by key.
import { GETS_IN_FLIGHT } from "../../core/_lanes.ts";
import {
  batchGet,
  chunks,
  conditionalUpdate,
  eachConcurrently,
  isNamed,
  type Item,
  S,
} from "../../dynamo/_dynamo.ts";
import { FAILURE, SPAWN, spawnFromItem, TIMER, timerFromItem } from "../../core/_layout.ts";
import { plainMap } from "../../core/_attributes.ts";
import { LIMITS } from "../../core/_validate.ts";
import { instrument } from "../../core/_telemetry.ts";
import type { QueueRow, RelayLease, RowQueue } from "../../core/relay_queues.ts";
import { takeLease } from "./_relay_lease.ts";
import type { RelayFailure, RelayKey } from "../../core/types.ts";
import type { OutboxContext } from "./_outbox_table.ts";
import { failed, locate, rowKey } from "./_relay_index.ts";
import { MergedPartitions, mergePage } from "./_index_reads.ts";

/** A spawn or timer table as the relay reads and writes it, on DynamoDB. */
export class RowTable<K extends "spawns" | "timers"> implements RowQueue<K> {
  constructor(readonly ctx: OutboxContext, readonly kind: K) {}

  now(): number {
    return this.ctx.now() / 1000;
  }

  lease(seconds: number): Promise<RelayLease | null> {
    this.ctx.open(`${this.kind === "spawns" ? "spawnQueue" : "timerQueue"}.lease`);
    return takeLease(this.ctx, this.kind, seconds);
  }

  /**
   * The due waiting rows and the lowest pending ones, `limit` each, then read by key: the index
   * lags, so a row changed a moment ago is judged on the table.
   */
  async due(now: number, limit: number): Promise<QueueRow<K>[]> {
    this.ctx.open(`${this.kind === "spawns" ? "spawnQueue" : "timerQueue"}.due`);
    const { client, tables } = this.ctx;
    const table = tables[this.kind].name;
    const pending = this.kind === "timers" ? { upTo: now } : {};
    const keys: Item[] = [];
    for (
      const source of [
        new MergedPartitions(client, table, "w", mergePage(limit), { upTo: now }),
        new MergedPartitions(client, table, "p", mergePage(limit), pending),
      ]
    ) {
      for (let taken = 0, row; taken < limit && (row = await source.next()); taken++) {
        keys.push(row);
      }
    }
    return await this.read(keys);
  }

  /** The rows of these keys (index entries, or rows another writer's were found by), strongly. */
  async read(keys: Item[]): Promise<QueueRow<K>[]> {
    const { client, tables } = this.ctx;
    const table = tables[this.kind].name;
    const unique = [...new Map(keys.map((row) => [keyText(row), rowKey(this.kind, row)])).values()];
    const rows: QueueRow<K>[] = [];
    await eachConcurrently(
      chunks(unique, LIMITS.batchGetKeys),
      GETS_IN_FLIGHT,
      (chunk) =>
        batchGet(client, { [table]: { Keys: chunk, ConsistentRead: true } }, (found) => {
          for (const item of found[table] ?? []) rows.push(this.#rowOf(item));
        }),
    );
    return rows;
  }

  async fail(key: RelayKey<K>, failure: RelayFailure): Promise<boolean> {
    this.ctx.open(`${this.kind === "spawns" ? "spawnQueue" : "timerQueue"}.fail`);
    const update = failed(locate(this.ctx.tables, this.kind, key), this.kind, failure, this.now());
    try {
      return await conditionalUpdate(this.ctx.client, update);
    } catch (error) {
      // A row another writer left near 400 KB has no room for the error text: record the rest.
      if (!(isNamed(error, "ValidationException") && /size/i.test(String(error)))) throw error;
      update.ExpressionAttributeValues![":e"] = S(
        "(error not recorded: the item is at DynamoDB's 400 KB limit)",
      );
      return await conditionalUpdate(this.ctx.client, update);
    }
  }

  #rowOf(item: Item): QueueRow<K> {
    const number = (name: string) => {
      const n = Number(item[name]?.N);
      return item[name]?.N === undefined ? null : Number.isFinite(n) ? n : 0;
    };
    const timer = this.kind === "timers";
    let body: QueueRow<K>["item"];
    try {
      body = (timer ? timerFromItem(item) : spawnFromItem(item)) as QueueRow<K>["item"];
    } catch (error) {
      body = {
        error: error instanceof Error ? error.message : String(error),
        raw: plainMap(item, {}, true),
      };
    }
    return {
      key: (timer ? timerFromItem(item) : Number(item[SPAWN.seq]?.N)) as RelayKey<K>,
      attempts: number(FAILURE.attempts) ?? 0,
      retryAt: number(FAILURE.retryAt),
      deadAt: number(FAILURE.deadAt),
      at: number(timer ? TIMER.fireAt : SPAWN.createdAt),
      item: body,
    };
  }
}

/** A row's key as text (the seq as stored; a timer's execution and path). */
function keyText(item: Item): string {
  return item[SPAWN.seq]?.N ?? `${item[TIMER.executionId]?.S}\u0000${item[TIMER.path]?.S}`;
}

// Every read and write of a pass in a span `DynamoDBStore.rowQueue.{method}` (see _telemetry.ts).
instrument(RowTable, { name: "DynamoDBStore.rowQueue" });
