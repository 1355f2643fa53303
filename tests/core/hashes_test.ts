// The hashes and byte counts a commit computes without BigInt or TextEncoder: each gives,
// for every input, what the reference computation (the code before, kept here) gives. Their
// outputs are stored (`outbox_last` keys, `relay_part` `h{key}`, `outbox_hold:{key}` items, the
// status and timer shards), so a different value would split a target's chain from the one
// another deploy wrote. No DynamoDB, no permissions.
import assert from "node:assert/strict";
import fc from "fast-check";
import { targetKey } from "../../src/execution/commit/_outbox_chain.ts";
import { fnv1a } from "../../src/core/_fnv1a.ts";
import { utf8Length } from "../../src/core/_validate.ts";

/** targetKey as it was written: 64-bit FNV-1a over the UTF-16 units of the JSON, with BigInt. */
function targetKeyBigInt(target: string | null): string {
  const text = JSON.stringify(target);
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, "0");
}

/** fnv1a as it was written: 32-bit FNV-1a over TextEncoder's bytes, a 0 byte between parts. */
function fnv1aEncoded(...parts: string[]): number {
  const encoder = new TextEncoder();
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
 * Strings of every kind a caller may pass: ASCII, any code point (surrogate pairs), and any
 * UTF-16 unit at all (lone surrogates, which only a target or a shard hash may meet).
 */
const anyString = fc.oneof(
  fc.string({ unit: "binary-ascii", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) }),
  fc.string({ unit: fc.constantFrom("\ud800", "\udfff", "\ud83d", "\ude00", "é", "\u2028") }),
);
const RUNS = { seed: 26, numRuns: 3000 };

Deno.test("targetKey() gives the stored keys as before, byte for byte", () => {
  // Keys stored by earlier deploys: they must keep naming the same targets.
  assert.equal(targetKey("peer"), "e2eb639cc4fa4c11");
  assert.equal(targetKey(null), "5b9bc4ba528108e4");
  assert.equal(targetKey("null"), targetKeyBigInt("null"));
  assert.notEqual(targetKey("null"), targetKey(null));
  for (const target of ["", "é", "😀", "\ud800", "\udc00x", "a".repeat(5000), '"\\\n']) {
    assert.equal(targetKey(target), targetKeyBigInt(target), JSON.stringify(target));
  }
});

Deno.test("targetKey() equals the BigInt FNV-1a for any target, non-ASCII and lone surrogates included", () => {
  fc.assert(
    fc.property(fc.option(anyString, { nil: null }), (target) => {
      assert.equal(targetKey(target), targetKeyBigInt(target));
    }),
    RUNS,
  );
});

Deno.test("targetKey() is 16 lowercase hex digits, also when the hash has leading zeros", () => {
  // Search a target whose hash starts with a zero digit (1 in 16): padding must be kept.
  let found = 0;
  for (let i = 0; found < 3 && i < 10_000; i++) {
    const key = targetKey(`t${i}`);
    assert.match(key, /^[0-9a-f]{16}$/);
    assert.equal(key, targetKeyBigInt(`t${i}`));
    if (key.startsWith("0")) found++;
  }
  assert.equal(found, 3);
});

Deno.test("fnv1a() equals the hash of TextEncoder's bytes for any parts, lone surrogates as U+FFFD", () => {
  assert.equal(fnv1a(), 0x811c9dc5);
  assert.equal(fnv1a(""), fnv1aEncoded(""));
  assert.equal(fnv1a("a", "b"), fnv1aEncoded("a", "b"));
  assert.notEqual(fnv1a("a", "b"), fnv1a("ab"));
  fc.assert(
    fc.property(fc.array(anyString, { maxLength: 3 }), (parts) => {
      assert.equal(fnv1a(...parts), fnv1aEncoded(...parts));
    }),
    RUNS,
  );
});

Deno.test("utf8Length() counts the bytes TextEncoder writes, at every length", () => {
  const encoder = new TextEncoder();
  fc.assert(
    fc.property(anyString, (text) => {
      assert.equal(utf8Length(text), encoder.encode(text).length);
    }),
    RUNS,
  );
  // Around where the count moves from a loop to the scratch buffer, and past that buffer.
  for (const length of [31, 32, 33, 16_383, 16_384, 16_385, 100_000]) {
    for (const unit of ["a", "é", "中", "\ud800"]) {
      const text = unit.repeat(length - 1) + "😀";
      assert.equal(utf8Length(text), encoder.encode(text).length, `${length} × ${unit}`);
    }
  }
});
