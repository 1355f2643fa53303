// The arithmetic that tells other writers' seqs from this module's blocks: pure, no DynamoDB.
import assert from "node:assert/strict";
import {
  afterProbe,
  blockRange,
  blockText,
  counterState,
  MISSING_GRACE_SECONDS,
  probesOf,
} from "../../src/execution/other_writers/_seq_rules.ts";

const state = (n: number, seen: number, blocks: [number, number][], missing = new Map()) => ({
  n,
  seen,
  blocks: blocks.map(([first, last]) => ({ first, last, text: blockText(first, last) })),
  missing,
});

Deno.test("a block's text reads back as its range; anything else is no block", () => {
  assert.deepEqual(blockRange(blockText(1001, 2000)), [1001, 2000]);
  assert.equal(blockRange("1001"), null);
  assert.equal(blockRange("a-b"), null);
});

Deno.test("probesOf: every seq past seen that no block holds, up to the counter, lowest first", () => {
  assert.deepEqual(probesOf(state(10, 0, []), 100), {
    seqs: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    upTo: 10,
  });
  // Our blocks are skipped whole, however large: the probes follow the other writers' seqs.
  assert.deepEqual(probesOf(state(2004, 0, [[1, 1000], [1002, 2002]]), 100), {
    seqs: [1001, 2003, 2004],
    upTo: 2004,
  });
  // A block reserved past the counter (never: the counter moved with it) is cut at the counter.
  assert.deepEqual(probesOf(state(5, 3, [[4, 1003]]), 100), { seqs: [], upTo: 5 });
  // Nothing new: nothing to probe, seen stays.
  assert.deepEqual(probesOf(state(7, 7, []), 100), { seqs: [], upTo: 7 });
});

Deno.test("probesOf: at most max probes, seen accounted only up to the last one; missing seqs first", () => {
  assert.deepEqual(probesOf(state(100, 0, []), 3), { seqs: [1, 2, 3], upTo: 3 });
  const missing = new Map([[2, 50], [1, 40]]);
  assert.deepEqual(probesOf(state(6, 4, [], missing), 4), { seqs: [1, 2, 5, 6], upTo: 6 });
  assert.deepEqual(probesOf(state(6, 4, [], missing), 3), { seqs: [1, 2, 5], upTo: 5 });
});

Deno.test("afterProbe: found seqs are done, new misses wait the grace, old misses are given up", () => {
  const before = state(10, 4, [[1, 3]], new Map([[2, 100], [4, 100 - MISSING_GRACE_SECONDS]]));
  const probes = { seqs: [2, 4, 5, 6], upTo: 10 };
  const after = afterProbe(before, probes, new Set([5]), 100);
  assert.equal(after.seen, 10);
  assert.deepEqual([...after.missing], [[2, 100], [6, 100]]);
  assert.deepEqual(after.pruned, ["1-3"], "a block wholly accounted for is no longer needed");
});

Deno.test("counterState reads the counter item as stored, and an absent one as nothing taken", () => {
  assert.deepEqual(counterState(undefined), { n: 0, seen: 0, blocks: [], missing: new Map() });
  const read = counterState({
    id: { S: "outbox" },
    n: { N: "2500" },
    seen: { N: "1000" },
    blocks: { SS: ["1001-2000", "1-1000", "junk"] },
    missing: { M: { "2001": { N: "17.5" } } },
  });
  assert.equal(read.n, 2500);
  assert.deepEqual(read.blocks.map((b) => [b.first, b.last]), [[1, 1000], [1001, 2000]]);
  assert.deepEqual([...read.missing], [[2001, 17.5]]);
});
