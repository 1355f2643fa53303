// What the status feed writes: the index entry an execution another writer committed needs,
// with an UpdateItem conditioned on the item being as the record (or the scan) showed it.
import type { _Record as StreamRecord } from "@aws-sdk/client-dynamodb-streams";
import { ScanCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import {
  type DynamoDBSender,
  eachConcurrently,
  isNamed,
  type Item,
  S,
} from "../../dynamo/_dynamo.ts";
import { WRITES_IN_FLIGHT } from "../../core/_lanes.ts";
import { EXECUTION } from "../../core/_layout.ts";
import { parseJson } from "../../core/_json.ts";
import { STATUSES } from "../../core/documents.ts";
import type { Status } from "../../core/documents.ts";
import type { ExecutionTables } from "../../dynamo/tables.ts";
import { statusKey } from "../listing/_status_index.ts";

/** Rows a round's scan for rows the stream never showed examines at most (one Scan page). */
const BACKFILL_ROWS = 1000;

/** What the entries are written with. */
export interface EntryContext {
  readonly client: DynamoDBSender;
  readonly tables: ExecutionTables;
  /** Epoch milliseconds (the store's clock): a time written for an entry with none. */
  readonly now: () => number;
}

/**
 * What a record asks of the index: the item at `version` holding `data` belongs in `key` since
 * `at`. The data too: an id deleted and written again starts over at the same version.
 */
interface Entry {
  version: string;
  data: string;
  key: string;
  at: string;
  /** When the record's commit was made (epoch seconds), when a record tells. */
  committed?: string;
}

/**
 * Whether a record is no work for the status feed (not counted, no call): a REMOVE, or a change
 * whose item is in the status index (this module's commit, or the feed's own write-back).
 */
export function isIndexed(record: StreamRecord): boolean {
  const image = record.dynamodb?.NewImage as Item | undefined;
  return record.eventName === "REMOVE" || image?.[EXECUTION.statusShard] !== undefined;
}

/**
 * When a record's change was made, epoch seconds (undefined: unknown): its rounded-down
 * `ApproximateCreationDateTime`, never before the `updated_at` of the item it replaced.
 */
export function createdAt(record: StreamRecord, old?: Item): string | undefined {
  const at = record.dynamodb?.ApproximateCreationDateTime as Date | number | undefined;
  const ms = at instanceof Date ? at.getTime() : typeof at === "number" ? at * 1000 : NaN;
  if (!Number.isFinite(ms)) return undefined;
  const previous = Number(old?.[EXECUTION.updatedAt]?.N);
  return String(Math.max(Math.floor(ms / 1000), Number.isFinite(previous) ? previous : 0));
}

/**
 * Puts the executions another writer committed (no `status_shard`) back into the index: each at
 * its newest record's version, only if the item is still at it and without the attribute, with
 * `updated_at` the record's time. Resolves to how many were written.
 */
export async function putBack(
  ctx: EntryContext,
  records: StreamRecord[],
  signal: AbortSignal | undefined,
): Promise<number> {
  const now = String(Math.floor(ctx.now() / 1000));
  const entries = new Map<string, Entry | null>();
  for (const record of records) {
    const id = record.dynamodb?.Keys?.[EXECUTION.id]?.S;
    const image = record.dynamodb?.NewImage as Item | undefined;
    if (id === undefined || image === undefined) continue;
    const old = record.dynamodb?.OldImage as Item | undefined;
    // What the item held before: our commit's entry, else this page's record before it.
    const before = entryOf(old) ?? entries.get(id) ?? null;
    entries.set(id, wanted(id, image, before, now, createdAt(record, old)));
  }
  let written = 0;
  const pending = [...entries].filter((pair): pair is [string, Entry] => pair[1] !== null);
  await eachConcurrently(pending, WRITES_IN_FLIGHT, async ([id, entry]) => {
    if (await writeEntry(ctx, id, entry)) written++;
  }, () => signal?.aborted === true);
  return written;
}

/** The entry an item stored, if it has one. */
function entryOf(item: Item | undefined): Entry | null {
  const key = item?.[EXECUTION.statusShard]?.S;
  const at = item?.[EXECUTION.statusAt]?.N;
  const version = item?.[EXECUTION.version]?.N;
  const data = item?.[EXECUTION.data]?.S;
  return key === undefined || at === undefined || version === undefined || data === undefined
    ? null
    : { version, data, key, at };
}

/**
 * The entry an item without one needs (null: it has one, or cannot be read): its status's
 * partition since it entered it when known, else since `committed` (the record's time), else `now`.
 */
function wanted(
  id: string,
  item: Item,
  before: Entry | null,
  now: string,
  committed?: string,
): Entry | null {
  if (item[EXECUTION.statusShard] !== undefined) return null;
  const version = item[EXECUTION.version]?.N;
  const data = item[EXECUTION.data]?.S;
  const status = statusOf(data);
  if (version === undefined || status === null) return null;
  const key = statusKey(status, id);
  const at = before?.key === key ? before.at : committed ?? now;
  return { version, data: data!, key, at, ...committed === undefined ? {} : { committed } };
}

/** The status an execution's `data` names, or null when it is not readable. */
export function statusOf(data: string | undefined): Status | null {
  if (data === undefined) return null;
  const parsed = parseJson(data, false)?.value as { status?: unknown } | null | undefined;
  const status = typeof parsed === "object" && parsed !== null ? parsed.status : undefined;
  return STATUSES.includes(status as Status) ? status as Status : null;
}

/** Writes one entry if the item is still as the record shows it and without one; whether it did. */
async function writeEntry(ctx: EntryContext, id: string, entry: Entry): Promise<boolean> {
  const names: Record<string, string> = {
    "#ss": EXECUTION.statusShard,
    "#sa": EXECUTION.statusAt,
    "#v": EXECUTION.version,
    "#d": EXECUTION.data,
  };
  const values: Item = {
    ":ss": S(entry.key),
    ":sa": { N: entry.at },
    ":v": { N: entry.version },
    ":d": S(entry.data),
  };
  let update = "SET #ss = :ss, #sa = :sa";
  if (entry.committed !== undefined) {
    update += ", #ua = :ua";
    names["#ua"] = EXECUTION.updatedAt;
    values[":ua"] = { N: entry.committed };
  }
  try {
    await ctx.client.send(
      new UpdateItemCommand({
        TableName: ctx.tables.executions.name,
        Key: { [EXECUTION.id]: S(id) },
        UpdateExpression: update,
        ConditionExpression: "#v = :v AND #d = :d AND attribute_not_exists(#ss)",
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (error) {
    // Committed again since (a later record brings it back), deleted, or in the index already.
    if (isNamed(error, "ConditionalCheckFailedException")) return false;
    // Another writer's item too close to 400 KB to take the entry: only `scan: true` lists it,
    // and the feed goes on past it.
    if (isNamed(error, "ValidationException") && /maximum allowed size/i.test(String(error))) {
      return false;
    }
    throw error;
  }
}

/**
 * One page of the scan for executions without an index entry, each put back since now: where
 * the scan goes on (undefined: done), the rows examined and the entries written.
 */
export async function backfillPage(
  ctx: EntryContext,
  start: Item,
  signal?: AbortSignal,
): Promise<{ next: Item | undefined; scanned: number; handled: number }> {
  const out = await ctx.client.send(
    new ScanCommand({
      TableName: ctx.tables.executions.name,
      FilterExpression: "attribute_not_exists(#ss)",
      ProjectionExpression: "#id, #v, #d",
      ExpressionAttributeNames: {
        "#ss": EXECUTION.statusShard,
        "#id": EXECUTION.id,
        "#v": EXECUTION.version,
        "#d": EXECUTION.data,
      },
      Limit: BACKFILL_ROWS,
      ExclusiveStartKey: Object.keys(start).length === 0 ? undefined : start,
    }),
    { abortSignal: signal },
  );
  let handled = 0;
  const now = String(Math.floor(ctx.now() / 1000));
  const pending = (out.Items ?? []).flatMap((item) => {
    const id = item[EXECUTION.id]?.S;
    const entry = id === undefined ? null : wanted(id, item, null, now);
    return entry === null ? [] : [[id!, entry] as const];
  });
  await eachConcurrently(pending, WRITES_IN_FLIGHT, async ([id, entry]) => {
    if (await writeEntry(ctx, id, entry)) handled++;
  }, () => signal?.aborted === true);
  return { next: out.LastEvaluatedKey, scanned: out.ScannedCount ?? 0, handled };
}
