// What this store wrote to the relay tables a moment ago, for its own reads of the relay index.
// A global secondary index is eventually consistent on AWS: an entry committed, failed, moved or
// retried a moment ago may not be in its partition yet (and a ghost of where it was may be). Each
// read of an index partition therefore also reads, by key and strongly, the rows this store wrote
// in the last RECENT_MS, and takes those the table says are in that partition: a store reads its
// own writes, whatever the index shows. Writes are seen where they are sent (the store's client),
// so no path can forget to note one. Rows other stores wrote a moment ago are found once the
// index shows them (the next pass): order and exactly-once never rest on the index either way.
import type { Item } from "../core/_attributes.ts";
import type { DynamoDBSender } from "../dynamo/_dynamo.ts";
import { batchGet, chunks } from "../dynamo/_dynamo.ts";
import { OUTBOX, TIMER } from "../core/_layout.ts";
import { LIMITS } from "../core/_validate.ts";

/** How long a write counts as recent: far beyond the lag of a healthy index (below a second). */
export const RECENT_MS = 10_000;

/** The most recent keys kept per table (a busy store's older writes are in the index by then). */
const KEPT_PER_TABLE = 1000;

/** The keys of one relay table this store wrote recently, oldest first. */
type Recent = Map<string, { key: Item; at: number }>;

/** The recent writes of a store's client, by table. */
export class RecentWrites {
  readonly #tables = new Map<string, Recent>();

  constructor(
    private readonly relayTables: ReadonlySet<string>,
    private readonly now: () => number,
  ) {}

  /** Notes the relay-table keys a request writes (any of the write commands). */
  noteRequest(name: string, input: Record<string, unknown>): void {
    const note = (table: unknown, key: unknown) => {
      if (typeof table === "string" && this.relayTables.has(table) && key) {
        this.#note(table, key as Item);
      }
    };
    if (name === "PutItemCommand") note(input.TableName, keyOf(input.Item as Item));
    else if (name === "UpdateItemCommand" || name === "DeleteItemCommand") {
      note(input.TableName, input.Key);
    } else if (name === "TransactWriteItemsCommand") {
      for (const each of (input.TransactItems ?? []) as Record<string, Record<string, unknown>>[]) {
        const op = each.Put ?? each.Update ?? each.Delete;
        if (op) note(op.TableName, op.Key ?? keyOf(op.Item as Item));
      }
    } else if (name === "BatchWriteItemCommand") {
      const requests = (input.RequestItems ?? {}) as Record<string, Record<string, unknown>[]>;
      for (const [table, writes] of Object.entries(requests)) {
        for (const write of writes) {
          const put = write.PutRequest as { Item?: Item } | undefined;
          const del = write.DeleteRequest as { Key?: Item } | undefined;
          note(table, put ? keyOf(put.Item) : del?.Key);
        }
      }
    }
  }

  #note(table: string, key: Item): void {
    let recent = this.#tables.get(table);
    if (!recent) this.#tables.set(table, recent = new Map());
    const id = JSON.stringify(key);
    recent.delete(id);
    recent.set(id, { key, at: this.now() });
    if (recent.size > KEPT_PER_TABLE) recent.delete(recent.keys().next().value!);
  }

  /** The keys of `table` written in the last RECENT_MS (older ones are forgotten). */
  keys(table: string): Item[] {
    const recent = this.#tables.get(table);
    if (!recent) return [];
    const since = this.now() - RECENT_MS;
    for (const [id, { at }] of recent) {
      if (at >= since) break;
      recent.delete(id);
    }
    return [...recent.values()].map(({ key }) => key);
  }
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

/**
 * The keys of `table` this store wrote in the last RECENT_MS, and the rows the table holds for
 * them now (read strongly: a key with no row is a row gone). Nothing, and no call, for a client
 * that notes nothing.
 */
export async function recentRows(
  client: DynamoDBSender,
  table: string,
): Promise<{ keys: Item[]; rows: Item[] }> {
  const keys = registries.get(client)?.keys(table) ?? [];
  const rows: Item[] = [];
  for (const run of chunks(keys, LIMITS.batchGetKeys)) {
    await batchGet(client, { [table]: { Keys: run, ConsistentRead: true } }, (responses) => {
      rows.push(...responses[table] ?? []);
    });
  }
  return { keys, rows };
}
