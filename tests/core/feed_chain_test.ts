// Order across writers: the outbox feed's chaining rule (src/core/_feed_chain.ts) and the
// pass's rule that an unchained entry waits in mixed mode (a row the mixed queue marks `waits`).
// Pure: no DynamoDB, no permissions.
import assert from "node:assert/strict";
import { chainRound, type FedRow, RECENT_MAX } from "../../src/core/_feed_chain.ts";
import { decideOutbox } from "../../src/core/_outbox_decide.ts";
import type { OutboxRow } from "../../src/core/relay_queues.ts";

const fed = (seq: number, target = "t", unchained = true): FedRow => ({
  id: String(seq),
  seq,
  target,
  unchained,
});

const recent = (lists: Record<string, number[] | [number[], number[]]>) =>
  new Map(
    Object.entries(lists).map(([target, list]) => [
      target,
      Array.isArray(list[0])
        ? { unchained: list[0] as number[], ours: list[1] as number[] }
        : { unchained: list as number[], ours: [] },
    ]),
  );

Deno.test("chaining: each unchained row's predecessor is the highest unchained seq below it to the same target, this round's and `recent`'s; it waits for the chained seqs of ours between the two", () => {
  const chaining = chainRound(
    [fed(1002), fed(1001), fed(1500, "u"), fed(999, "t", false), fed(2000)],
    recent({ t: [[10, 500], [700]], u: [1600] }),
  );
  assert.deepEqual(Object.fromEntries(chaining.prev), {
    "1001": 500, // ours (chained by its own source) is no predecessor
    "1002": 1001, // one Python commit's two entries: b behind a
    "1500": 0, // below everything seen of its target
    "2000": 1002,
  });
  // 1001's source is unknown: it may be that of ours at 700 or 999
  assert.deepEqual(Object.fromEntries(chaining.after), { "1001": [700, 999] });
  assert.deepEqual(chaining.recent.get("t"), {
    unchained: [10, 500, 1001, 1002, 2000],
    ours: [700, 999],
  });
  assert.deepEqual(chaining.recent.get("u"), { unchained: [1500, 1600], ours: [] });
});

Deno.test("chaining: `recent` keeps the highest RECENT_MAX seqs of each list", () => {
  const rows = Array.from({ length: 40 }, (_, i) => fed(100 + i));
  const ours = Array.from({ length: 40 }, (_, i) => fed(200 + i, "t", false));
  const chaining = chainRound([...rows, ...ours], recent({ t: [1, 2, 3] }));
  const { unchained, ours: kept } = chaining.recent.get("t")!;
  assert.equal(unchained.length, RECENT_MAX);
  assert.deepEqual(unchained, Array.from({ length: RECENT_MAX }, (_, i) => 140 - RECENT_MAX + i));
  assert.deepEqual(kept, Array.from({ length: RECENT_MAX }, (_, i) => 240 - RECENT_MAX + i));
  assert.equal(chaining.prev.get("100"), 3);
  assert.equal(chaining.prev.get("139"), 138);
  assert.equal(chaining.after.size, 0);
  assert.equal(chaining.recent.has("other"), false);
});

Deno.test("chaining: a seq no counter handed out (not a whole number) is chained to nothing", () => {
  const chaining = chainRound([fed(1.5), fed(3)], new Map());
  assert.equal(chaining.prev.get("1.5"), 0);
  assert.equal(chaining.prev.get("3"), 0);
  assert.deepEqual(chaining.recent.get("t"), { unchained: [3], ours: [] });
});

const entry = (seq: number, prev: number | undefined, waits = false): OutboxRow => ({
  seq,
  id: String(seq),
  target: "t",
  ...(prev === undefined ? {} : { prev }),
  attempts: 0,
  retryAt: null,
  deadAt: null,
  unreadable: false,
  part: "p0",
  createdAt: null,
  sourceId: null,
  ...(waits ? { waits } : {}),
  entry: { seq, targetId: "t", event: { id: String(seq), kind: "k", data: {} } },
});

Deno.test("an entry not chained yet (waits) waits, and so does the rest of its target; unmarked it goes", () => {
  const read = (waits: boolean) => ({
    now: 0,
    limit: 10,
    offered: ["5", "6", "7"],
    rows: new Map([entry(5, 0), entry(6, undefined, waits), entry(7, 6)].map((r) => [r.id, r])),
    holds: new Map(),
    inline: false,
  });
  assert.deepEqual(decideOutbox(read(true)).deliver.map((r) => r.seq), [5]);
  // 7 goes after 6, in order
  assert.deepEqual(decideOutbox(read(false)).deliver.map((r) => r.seq), [5, 6, 7]);
});

Deno.test("a chained entry whose predecessor (another writer's a = 1001) is still there waits behind it", () => {
  // Pass 2 finds b = 1002 by key while a is not offered (the index lags): b waits.
  const rows = new Map([entry(1001, 0), entry(1002, 1001)].map((r) => [r.id, r]));
  const decision = decideOutbox({
    now: 0,
    limit: 10,
    offered: ["1002"],
    rows,
    holds: new Map(),
    inline: false,
  });
  assert.deepEqual(decision.deliver, []);
});

Deno.test("another writer's entry waits for the entries of ours it names (after), read by key while the index does not offer them", () => {
  // 2003 (Python's) chained behind 1003, and after 1004 (ours, chained by its source): 1004 is
  // not offered (the index lags), so 2003 waits; once 1004 is gone it goes.
  const b = { ...entry(2003, 1003), after: [1004] };
  const decide = (rows: OutboxRow[]) =>
    decideOutbox({
      now: 0,
      limit: 10,
      offered: ["2003"],
      rows: new Map(rows.map((r) => [r.id, r])),
      holds: new Map(),
      inline: false,
    }).deliver.map((r) => r.seq);
  assert.deepEqual(decide([b, entry(1004, 1003)]), []);
  assert.deepEqual(decide([b]), [2003]);
});

Deno.test("an entry of ours waits for the highest entry below it that the feed chained to its target (its hold's `recent`), read by key, whatever the index offers", () => {
  // 3007 and 3008 (Python's) were chained by the feed; 3009 (ours, chained by its own source,
  // another execution) is the only one the lagging index offers: it waits while 3008 is there.
  const ours = entry(3009, 0);
  const hold = { heads: [], held: [], spill: null, recent: ["2006", "3007", "3008"] };
  const decide = (rows: OutboxRow[]) =>
    decideOutbox({
      now: 0,
      limit: 10,
      offered: ["3009"],
      rows: new Map(rows.map((r) => [r.id, r])),
      holds: new Map([["t", hold]]),
      inline: false,
    }).deliver.map((r) => r.seq);
  assert.deepEqual(decide([ours, entry(3008, 3007)]), []);
  assert.deepEqual(decide([ours]), [3009], "once 3008 is gone (3007 went before it)");
  // Below every entry the feed chained, nothing holds it back.
  const low = decideOutbox({
    now: 0,
    limit: 10,
    offered: ["2000"],
    rows: new Map([["2000", entry(2000, 0)], ["3008", entry(3008, 3007)]]),
    holds: new Map([["t", hold]]),
    inline: false,
  });
  assert.deepEqual(low.deliver.map((r) => r.seq), [2000]);
});
