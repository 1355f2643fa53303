// What this store wrote to the relay tables a moment ago, for its own reads of the relay index.
// A global secondary index is eventually consistent on AWS: an entry committed, failed, moved or
// retried a moment ago may not be in its partition yet (and a ghost of where it was may be). Each
// read of an index partition therefore also reads, by key and strongly, the rows this store wrote
// in the last RECENT_MS, and takes those the table says are in that partition: a store reads its
// own writes, whatever the index shows. Writes are seen where they are sent (the store's client),
// so no path can forget to note one. Rows other stores wrote a moment ago are found once the
// index shows them (the next pass): order and exactly-once never rest on the index either way.
import type { Item } from "../../core/_attributes.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import { batchGet, chunks } from "../../dynamo/_dynamo.ts";
import { OUTBOX, RELAY, TIMER } from "../../core/_layout.ts";
import { LIMITS } from "../../core/_validate.ts";

/** How long a write counts as recent: beyond the lag of a healthy index (below a second). */
export const RECENT_MS = 3_000;

/** The most recent keys kept per table (a busy store's older writes are in the index by then). */
const KEPT_PER_TABLE = 300;

/**
 * Where a write left a row: the partition and order it wrote (a Put), gone (a Delete), or not
 * known without a read (an Update).
 */
export type Written = { part: string; order: number; item: Item } | "gone" | "unknown";

/** The keys of one relay table this store wrote recently, oldest first. */
type Recent = Map<string, { key: Item; at: number; written: Written }>;

/** The recent writes of a store's client, by table. */
export class RecentWrites {
  readonly #tables = new Map<string, Recent>();

  constructor(
    private readonly relayTables: ReadonlySet<string>,
    private readonly now: () => number,
  ) {}

  /** Notes the relay-table keys a request writes (any of the write commands). */
  noteRequest(name: string, input: Record<string, unknown>): void {
    const note = (table: unknown, key: Item | undefined, written: Written) => {
      if (typeof table === "string" && this.relayTables.has(table) && key) {
        this.#note(table, key, written);
      }
    };
    const put = (table: unknown, item: Item | undefined) => note(table, keyOf(item), placed(item));
    if (name === "PutItemCommand") put(input.TableName, input.Item as Item);
    else if (name === "UpdateItemCommand") note(input.TableName, input.Key as Item, "unknown");
    else if (name === "DeleteItemCommand") {
      // Gone without a read only when nothing could refuse it; else the table says.
      const sure = input.ConditionExpression === undefined;
      note(input.TableName, input.Key as Item, sure ? "gone" : "unknown");
    } else if (name === "TransactWriteItemsCommand") {
      for (const each of (input.TransactItems ?? []) as Record<string, Record<string, unknown>>[]) {
        if (each.Put) put(each.Put.TableName, each.Put.Item as Item);
        if (each.Update) note(each.Update.TableName, each.Update.Key as Item, "unknown");
        // A transaction may be refused whole: what it deletes is read, not assumed gone.
        if (each.Delete) note(each.Delete.TableName, each.Delete.Key as Item, "unknown");
      }
    } else if (name === "BatchWriteItemCommand") {
      const requests = (input.RequestItems ?? {}) as Record<string, Record<string, unknown>[]>;
      for (const [table, writes] of Object.entries(requests)) {
        for (const write of writes) {
          const putRequest = write.PutRequest as { Item?: Item } | undefined;
          const deleteRequest = write.DeleteRequest as { Key?: Item } | undefined;
          if (putRequest) put(table, putRequest.Item);
          else note(table, deleteRequest?.Key, "gone");
        }
      }
    }
  }

  /** Notes rows this store put in the index itself (an adoption: the row as it left it). */
  noteRows(table: string, rows: Item[]): void {
    for (const row of rows) {
      const key = keyOf(row);
      if (key && this.relayTables.has(table)) this.#note(table, key, placed(row));
    }
  }

  #note(table: string, key: Item, written: Written): void {
    let recent = this.#tables.get(table);
    if (!recent) this.#tables.set(table, recent = new Map());
    const id = JSON.stringify(key);
    recent.delete(id);
    recent.set(id, { key, at: this.now(), written });
    if (recent.size > KEPT_PER_TABLE) recent.delete(recent.keys().next().value!);
  }

  /** The writes of `table` in the last RECENT_MS (older ones are forgotten). */
  writes(table: string): { key: Item; written: Written }[] {
    const recent = this.#tables.get(table);
    if (!recent) return [];
    const since = this.now() - RECENT_MS;
    for (const [id, { at }] of recent) {
      if (at >= since) break;
      recent.delete(id);
    }
    return [...recent.values()];
  }
}

/** Where a Put leaves its row in the relay index ("unknown" without the index's attributes). */
function placed(item: Item | undefined): Written {
  const part = item?.[RELAY.part]?.S;
  const order = Number(item?.[RELAY.order]?.N);
  return item === undefined || part === undefined || Number.isNaN(order)
    ? "unknown"
    : { part, order, item };
}

/** A relay row's key from the whole item (a Put). */
function keyOf(item: Item | undefined): Item | undefined {
  if (!item) return undefined;
  if (item[OUTBOX.seq]) return { [OUTBOX.seq]: item[OUTBOX.seq]! };
  if (item[TIMER.executionId] && item[TIMER.path]) {
    return { [TIMER.executionId]: item[TIMER.executionId]!, [TIMER.path]: item[TIMER.path]! };
  }
  return undefined;
}

/** The registry of each store's client (the gated sender the store's reads use). */
const registries = new WeakMap<object, RecentWrites>();

/** A sender that notes its relay-table writes in `recent` before sending them. */
export function noting(client: DynamoDBSender, recent: RecentWrites): DynamoDBSender {
  const send = client.send as (...args: unknown[]) => Promise<unknown>;
  const sender = {
    send: ((
      command: { constructor: { name: string }; input: Record<string, unknown> },
      ...rest: unknown[]
    ) => {
      recent.noteRequest(command.constructor.name, command.input ?? {});
      return send.call(client, command, ...rest);
    }) as unknown as DynamoDBSender["send"],
  };
  registries.set(sender, recent);
  return sender;
}

/** Notes rows `client`'s store put in the relay index itself (see RecentWrites.noteRows). */
export function noteRows(client: DynamoDBSender, table: string, rows: Item[]): void {
  registries.get(client)?.noteRows(table, rows);
}

/**
 * What this store wrote to `table` in the last RECENT_MS that may be in the index partitions a
 * read wants: the rows it put there as it wrote them (no read: the strong reads that follow, of
 * the bodies and the holds, decide), the keys of the rows it deleted, and, for writes whose
 * result is not known (updates, which a condition may refuse), the rows as the table holds them
 * now, read by key and strongly, with their keys (a key with no row is gone). Nothing, and no
 * call, for a client that notes nothing.
 */
export async function recentRows(
  client: DynamoDBSender,
  table: string,
  wanted: (written: { part: string; order: number }) => boolean,
): Promise<{ put: Item[]; gone: Item[]; keys: Item[]; rows: Item[] }> {
  const writes = registries.get(client)?.writes(table) ?? [];
  const put: Item[] = [], gone: Item[] = [], keys: Item[] = [];
  for (const { key, written } of writes) {
    if (written === "gone") gone.push(key);
    else if (written === "unknown") keys.push(key);
    else if (wanted(written)) put.push(written.item);
  }
  const rows: Item[] = [];
  for (const run of chunks(keys, LIMITS.batchGetKeys)) {
    await batchGet(client, { [table]: { Keys: run, ConsistentRead: true } }, (responses) => {
      rows.push(...responses[table] ?? []);
    });
  }
  return { put, gone, keys, rows };
}
