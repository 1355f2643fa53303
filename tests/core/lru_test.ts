// The bounded caches of the execution store (chains, trace-ring ends): least recently used out
// first, with using the newest key again a no-op (one execution's commits in a row).
import assert from "node:assert/strict";
import { Lru } from "../../src/core/_lru.ts";

const keys = (lru: Lru<string, number>, all: string[]) =>
  all.filter((k) => lru.get(k) !== undefined);

Deno.test("Lru forgets the least recently used key, a read or a write counting as a use", () => {
  const lru = new Lru<string, number>(2);
  lru.set("a", 1);
  lru.set("b", 2);
  assert.equal(lru.get("a"), 1); // a is now the newest
  lru.set("c", 3); // b goes
  assert.equal(lru.get("b"), undefined);
  assert.equal(lru.get("c"), 3);
  assert.equal(lru.get("a"), 1);
});

Deno.test("Lru: using the newest key again keeps it newest and keeps its latest value", () => {
  const lru = new Lru<string, number>(2);
  lru.set("a", 1);
  lru.set("a", 2);
  lru.set("a", 3);
  assert.equal(lru.get("a"), 3);
  lru.set("b", 4);
  lru.set("b", 5);
  lru.set("c", 6); // a is the oldest
  assert.deepEqual(keys(lru, ["a", "b", "c"]), ["b", "c"]);
  assert.equal(lru.get("b"), 5);
});

Deno.test("Lru: a deleted newest key is gone, and set again it is the newest", () => {
  const lru = new Lru<string, number>(2);
  lru.set("a", 1);
  lru.set("b", 2);
  lru.delete("b");
  assert.equal(lru.get("b"), undefined);
  lru.set("b", 3);
  lru.set("c", 4); // a is the oldest
  assert.equal(lru.get("a"), undefined);
  assert.deepEqual([lru.get("b"), lru.get("c")], [3, 4]);
});
