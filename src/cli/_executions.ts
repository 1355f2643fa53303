// The CLI's `executions`: one page of the listing, and with `--other-writers` first what other
// writers committed that the status index does not show yet, peeked from the stream (nothing
// written). Every row shown counts toward --limit.
import type { DynamoDBSender, Item } from "../dynamo/_dynamo.ts";
import type { ExecutionTables } from "../dynamo/tables.ts";
import type { DynamoDBStore } from "../execution/execution_store.ts";
import type { ExecutionSummary, Status } from "../core/documents.ts";
import type { ListPage, UnreadableExecutionRow } from "../core/types.ts";
import { planListing } from "../execution/listing/_listing.ts";
import { rowOfItem, takes } from "../execution/listing/_summaries.ts";
import { peekOtherWriters } from "../execution/_store_context.ts";
import { lastCommitTime } from "../execution/listing/_status_index.ts";
import { EXECUTION } from "../core/_layout.ts";
import { TableDrift } from "../dynamo/table_check.ts";
import { parseBefore, refusedAsUsage, usage, type Values } from "./_args.ts";
import { onTable } from "./_client.ts";
import { cell, isoSeconds, table } from "./_format.ts";

/** What `executions` lists: the parsed flags. */
export interface ExecutionsCommand {
  limit: number;
  status: Status[] | undefined;
  values: Values;
  json: boolean;
  out: (line: string) => void;
}

/** Runs `executions` with `reader` (a store that does not write: no feed of its own). */
export async function listCommand(
  reader: DynamoDBStore,
  client: DynamoDBSender,
  { limit, status, values, json, out }: ExecutionsCommand,
): Promise<void> {
  const tables = reader.tables;
  const options = {
    status,
    definitionId: values.definition as string | undefined,
    updatedBefore: parseBefore(values.before),
    ...(values.scan ? { scan: true } : {}),
    ...(values["include-undated"] ? { includeUndated: true } : {}),
    cursor: values.cursor as string | undefined ?? null,
  };
  // A scan lists every writer's rows already; the index, only what it was told of.
  const peeking = values["other-writers"] === true && status !== undefined && !values.scan &&
    options.cursor === null;
  const others = peeking
    ? await onTable(tables.executions.name, notIndexed(client, tables, { ...options, limit }))
    : { items: [], unreadable: [] };
  const room = limit - others.items.length - others.unreadable.length;
  const indexed: ListPage = room > 0
    ? await onTable(
      tables.executions.name,
      refusedAsUsage(reader.listExecutions({ ...options, limit: room })),
    )
    : { items: [], nextCursor: null };
  // A feed round elsewhere may have put one of them into the index meanwhile: shown once.
  const peeked = new Set(others.items.map((s) => s.id));
  const page: ListPage = {
    items: [...others.items, ...indexed.items.filter((s) => !peeked.has(s.id))],
    nextCursor: indexed.nextCursor,
    ...(indexed.unreadable || others.unreadable.length
      ? { unreadable: [...others.unreadable, ...indexed.unreadable ?? []] }
      : {}),
  };
  const notShown = room > 0 ? "" : "; the status index's entries: with a larger --limit";
  if (json) {
    const extra = peeking ? { otherWriters: others.items.length + others.unreadable.length } : {};
    return out(JSON.stringify({ ...page, ...extra }, null, 2));
  }
  const unreadable = page.unreadable ?? [];
  out(table(
    ["ID", "DEFINITION", "STATUS", "UPDATED", "ACTIVE PATH", "VERSION", "PARENT"],
    [
      ...page.items.map((s) => [
        cell(s.id),
        cell(s.definition_id),
        cell(s.status),
        s.updated_at === null ? "unknown" : isoSeconds(s.updated_at),
        cell(s.active_path),
        String(s.version),
        cell(s.parent_id),
      ]),
      // A row another writer stored so that it cannot be read: its key and why.
      ...unreadable.map((row) => [cell(row.id), `(unreadable: ${row.error})`, "", "", "", "", ""]),
    ],
  ));
  const shown = page.items.length + unreadable.length;
  const apart = unreadable.length ? ` (${unreadable.length} unreadable)` : "";
  const fromStream = peeking
    ? ` (${others.items.length + others.unreadable.length} committed by other writers, ` +
      "not in the status index yet)"
    : "";
  out(
    page.nextCursor
      ? `${shown} shown${apart}${fromStream}; more with --cursor ${page.nextCursor}`
      : `${shown} shown${apart}${fromStream}${notShown || "; no more"}`,
  );
}

/** What other writers committed that the listing selects and the index misses: newest first. */
async function notIndexed(
  client: DynamoDBSender,
  tables: ExecutionTables,
  options: Parameters<DynamoDBStore["listExecutions"]>[0] & { limit: number },
): Promise<{ items: ExecutionSummary[]; unreadable: UnreadableExecutionRow[] }> {
  const selection = usage(() => planListing(options, tables.executions.name));
  // An unreadable document has no status to select by: `executions --scan` shows it.
  const selects = (item: Item) => {
    const row = rowOfItem(item);
    return "summary" in row && takes(selection, item, row);
  };
  const found = await peekOtherWriters(client, tables, options.limit, selects);
  return {
    items: found.flatMap((item) => {
      const row = rowOfItem(item);
      return "summary" in row ? [row.summary] : [];
    }),
    unreadable: [],
  };
}

/** When another writer last committed `id` (no `updated_at`), from the stream; or null. */
export async function otherWriterCommitTime(
  client: DynamoDBSender,
  tables: ExecutionTables,
  id: string,
): Promise<number | null> {
  const found = await peekOtherWriters(client, tables, 1, (item) => item[EXECUTION.id]?.S === id)
    .catch((error) => {
      if (error instanceof TableDrift) return []; // no stream: nothing to date it by
      throw error;
    });
  return found.length ? lastCommitTime(found[0]!) : null;
}
