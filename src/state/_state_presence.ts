// What a state item is to every read and write: alive (no ttl, or one ahead) and holding a value
// or a hash field, as server conditions and here.
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { isNamed, type Item } from "../core/_attributes.ts";
import { STATE } from "../core/_layout.ts";
import { isLiveAt } from "../core/_relay_rules.ts";

export { N } from "../core/_attributes.ts";
/** `#t` is `ttl`: alive while there is no ttl or it lies ahead. */
export const LIVE = "(attribute_not_exists(#t) OR #t > :now)";
/** `#v` is `value`, `#h` is `hash`: a key holding neither a value nor a hash field is absent. */
export const HOLDS = "(attribute_exists(#v) OR size(#h) > :zero)";
/** The names and values LIVE and HOLDS use. */
export const PRESENT_NAMES = { "#t": STATE.ttl, "#v": STATE.value, "#h": STATE.hash } as const;
/** `:zero`, the size HOLDS compares with. */
export const ZERO: AttributeValue = { N: "0" };

/** A size stand-in for the ids of the last three hash writes on an item (22 characters each). */
export const WRITE_IDS_SIZE: Item = Object.fromEntries(
  [STATE.writeId, STATE.writeId1, STATE.writeId2].map((name) => [name, { S: "0".repeat(22) }]),
);

/** A conditional write that lost: its `Item` is the item it found (ALL_OLD), if asked. */
export function isConditionFailure(error: unknown): error is Error & { Item?: Item } {
  return isNamed(error, "ConditionalCheckFailedException");
}

/** Whether the item exists and its `ttl` (if any) lies after `now`. */
export function isLive(item: Item | undefined, now: number): item is Item {
  if (!item) return false;
  const ttl = item[STATE.ttl]?.N;
  return isLiveAt(ttl === undefined ? null : Number(ttl), now);
}

/** HOLDS, here: on the server `size()` of a number, boolean or null is no size at all. */
export function holds(item: Item): boolean {
  if (item[STATE.value] !== undefined) return true;
  const hash = item[STATE.hash];
  if (hash === undefined) return false;
  const sized = hash.M ? Object.keys(hash.M) : hash.L ?? hash.S ?? hash.B ?? hash.SS ?? hash.NS ??
    hash.BS;
  return (sized?.length ?? 0) > 0;
}

/** Live and holding something: what every method treats as an existing key. */
export function isPresent(item: Item | undefined, now: number): item is Item {
  return isLive(item, now) && holds(item);
}
