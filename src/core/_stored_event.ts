// The stored text of another writer's outbox event, kept beside the parsed event: the parse is
// lossy (integers past 2^53, `42.0`, `-0.0`, key order), so a relay passes the text on as written.
import type { Event } from "./documents.ts";

const STORED = new WeakMap<object, string>();

/** Remembers `text` as the stored form of `event` (a row another writer committed). */
export function keepStoredText(event: Event, text: string | undefined): void {
  if (text !== undefined) STORED.set(event, text);
}

/** The text another writer stored for `event`, when the relay read it from such a row. */
export function storedText(event: object): string | undefined {
  return STORED.get(event);
}
