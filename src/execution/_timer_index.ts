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

const encoder = new TextEncoder();

/**
 * FNV-1a (32 bit) over the UTF-8 of `parts`, a 0 byte between each: the shard hash every writer
 * (any process, any language) computes alike.
 */
export function fnv1a(...parts: string[]): number {
  let hash = 0x811c9dc5;
  const mix = (bytes: Uint8Array) => {
    for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  };
  parts.forEach((part, i) => {
    if (i > 0) mix(new Uint8Array(1));
    mix(encoder.encode(part));
  });
  return hash;
}

/**
 * The shard of a timer: {@linkcode fnv1a} of `executionId` and `path`, modulo `shards`.
 * Deterministic, so every writer (any process, any language) agrees.
 */
export function timerShard(executionId: string, path: string, shards: number): number {
  return fnv1a(executionId, path) % shards;
}
