/**
 * Opaque list cursors: the base64url JSON of the last key a listing returned.
 *
 * @module
 */
import { InvalidCursor } from "./errors.ts";
import { checkKey, LIMITS } from "./_validate.ts";

/** Encodes the key of the last execution a page returned. */
export function encodeCursor(id: string): string {
  return new TextEncoder().encode(JSON.stringify({ id })).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}

/**
 * Decodes a cursor made by {@linkcode encodeCursor}. Anything else (not base64url, not JSON,
 * another shape, a key of another table) is an {@linkcode InvalidCursor}.
 */
export function decodeCursor(cursor: unknown): string {
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
    Object.keys(key).join() !== "id"
  ) {
    throw new InvalidCursor("it does not hold an executions key ({ id })");
  }
  try {
    return checkKey("cursor id", (key as { id: unknown }).id, LIMITS.partitionKeyBytes);
  } catch (cause) {
    throw new InvalidCursor((cause as Error).message, { cause });
  }
}
