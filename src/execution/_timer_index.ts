// The timers table's sparse index of due times: which shard a timer is written to and the
// index's layout. Private: the wire format is the attribute `timer_shard` (a number) next to
// the timer's `execution_id`, `path` and `fire_at`, described in docs/operations.md.

/** The global secondary index on the timers table: `timer_shard` (HASH) + `fire_at` (RANGE). */
export const TIMER_INDEX = {
  name: "timer_shard-fire_at",
  hash: ["timer_shard", "N"],
  range: ["fire_at", "N"],
} as const;

/**
 * How many shards timers spread over by default. An index partition key takes about 1,000
 * writes/s and a timer costs it two (armed, then fired or cancelled), so 16 shards carry
 * about 8,000 timers armed per second; a sweep pays one Query per shard.
 */
export const DEFAULT_TIMER_SHARDS = 16;

/**
 * FNV-1a (32 bit) over the UTF-8 of `parts`, a 0 byte between each: the shard hash every writer
 * (any process, any language) computes alike.
 */
export function fnv1a(...parts: string[]): number {
  let hash = 0x811c9dc5;
  for (let p = 0; p < parts.length; p++) {
    if (p > 0) hash = Math.imul(hash, 0x01000193); // the 0 byte between parts
    hash = mixUtf8(hash, parts[p]!);
  }
  return hash >>> 0;
}

/**
 * `hash` with the UTF-8 bytes of `text` mixed in, one by one, as `TextEncoder` would write them
 * (a lone surrogate as U+FFFD), without encoding it: a commit hashes its id on every call.
 */
function mixUtf8(hash: number, text: string): number {
  const mix = (byte: number) => hash = Math.imul(hash ^ byte, 0x01000193);
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      mix(code);
      continue;
    }
    if (code < 0x800) {
      mix(0xc0 | (code >> 6));
      mix(0x80 | (code & 0x3f));
      continue;
    }
    if ((code & 0xfc00) === 0xd800 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      code = 0x10000 + ((code - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00);
      mix(0xf0 | (code >> 18));
      mix(0x80 | ((code >> 12) & 0x3f));
    } else {
      if ((code & 0xf800) === 0xd800) code = 0xfffd; // a lone surrogate
      mix(0xe0 | (code >> 12));
    }
    mix(0x80 | ((code >> 6) & 0x3f));
    mix(0x80 | (code & 0x3f));
  }
  return hash;
}

/**
 * The shard of a timer: {@linkcode fnv1a} of `executionId` and `path`, modulo `shards`.
 * Deterministic, so every writer (any process, any language) agrees.
 */
export function timerShard(executionId: string, path: string, shards: number): number {
  return fnv1a(executionId, path) % shards;
}
