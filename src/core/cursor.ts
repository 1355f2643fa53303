/**
 * Opaque list cursors: the base64url JSON of the table a listing read and the last key it
 * returned, so that a cursor is refused by any other listing.
 *
 * @module
 */
import { InvalidCursor } from "./errors.ts";
import { checkKey, LIMITS } from "./_validate.ts";

/** Encodes the key of the last execution a page of `table` returned. */
export function encodeCursor(table: string, id: string): string {
  return new TextEncoder().encode(JSON.stringify({ table, id })).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}

/**
 * Decodes a cursor made by {@linkcode encodeCursor} for `table`. Anything else (not base64url,
 * not JSON, another shape, a cursor of another table) is an {@linkcode InvalidCursor}.
 */
export function decodeCursor(cursor: unknown, table: string): string {
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
    Object.keys(key).sort().join() !== "id,table"
  ) {
    throw new InvalidCursor("it does not hold an executions listing position ({ table, id })");
  }
  const from = (key as { table: unknown }).table;
  if (from !== table) {
    throw new InvalidCursor(
      `it was produced for another listing (table ${JSON.stringify(from)}, not ${
        JSON.stringify(table)
      })`,
    );
  }
  try {
    return checkKey("cursor id", (key as { id: unknown }).id, LIMITS.partitionKeyBytes);
  } catch (cause) {
    throw new InvalidCursor((cause as Error).message, { cause });
  }
}
