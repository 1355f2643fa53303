/**
 * Opaque list cursors: the base64url JSON of the table a listing read, a fingerprint of its
 * filter and where it stopped, so that a cursor is refused by any other listing.
 *
 * @module
 */
import { InvalidCursor } from "./errors.ts";
import { checkKey, LIMITS } from "./_validate.ts";

/** Where a listing of `table` stopped: `query` fingerprints its filter, `after` its place. */
export function encodeCursor(table: string, query: string, after: unknown): string {
  return new TextEncoder().encode(JSON.stringify({ table, query, after })).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}

/** Decodes a cursor of {@linkcode encodeCursor} for `table` and `query`, else InvalidCursor. */
export function decodeCursor(cursor: unknown, table: string, query: string): unknown {
  if (typeof cursor !== "string" || cursor.length === 0) {
    throw new InvalidCursor(`expected a non-empty string, got ${typeof cursor}`);
  }
  let json: string;
  try {
    const bytes = Uint8Array.fromBase64(cursor, {
      alphabet: "base64url",
      lastChunkHandling: "loose",
    });
    json = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new InvalidCursor("it is not base64url text", { cause });
  }
  let key: unknown;
  try {
    key = JSON.parse(json);
  } catch (cause) {
    throw new InvalidCursor("it does not hold JSON", { cause });
  }
  if (
    typeof key !== "object" || key === null || Array.isArray(key) ||
    Object.keys(key).sort().join() !== "after,query,table"
  ) {
    throw new InvalidCursor(
      "it does not hold an executions listing position ({ table, query, after })",
    );
  }
  const { table: from, query: filter, after } = key as Record<string, unknown>;
  if (from !== table) {
    throw new InvalidCursor(
      `it was produced for another listing (table ${JSON.stringify(from)}, not ${
        JSON.stringify(table)
      })`,
    );
  }
  if (filter !== query) {
    throw new InvalidCursor(
      "it was produced for another listing (other filters: status, definitionId, rootsOnly, " +
        "updatedBefore, scan or includeUndated differ); pass the same filters with its cursor",
    );
  }
  return after;
}

/** A position that is an execution id (a listing in id or scan order), else InvalidCursor. */
export function cursorId(after: unknown): string {
  try {
    return checkKey("cursor id", after, LIMITS.partitionKeyBytes);
  } catch (cause) {
    throw new InvalidCursor((cause as Error).message, { cause });
  }
}
