// The queue's transitions as both stores apply them (core/_queue_transitions.ts): what each does
// to a row and to its target's hold, and what a release brings back. Pure: no database, no
// permissions.
import assert from "node:assert/strict";
import {
  acknowledge,
  addHead,
  applyHold,
  bringBack,
  demote,
  drop,
  fail,
  type Hold,
  release,
  type ReleaseRow,
  retry,
  setApart,
  unlistHeld,
} from "../../src/core/_queue_transitions.ts";
import { RETRIED } from "../../src/core/_relay_rules.ts";

const hold = (heads: string[] = [], held: string[] = []): Hold => ({
  heads: new Set(heads),
  held: new Set(held),
});
const plain = (h: Hold) => ({ heads: [...h.heads].sort(), held: [...h.held].sort() });

Deno.test("fail: an entry waits until its retry, and becomes a head of its target", () => {
  const change = fail({ attempts: 2, retryAt: 1060, error: "down" }, 1000, "7");
  assert.equal(change.to, "w");
  assert.deepEqual(change.bookkeeping, {
    attempts: 2,
    lastError: "down",
    retryAt: 1060,
    deadAt: null,
    unreadable: false,
  });
  assert.deepEqual(change.hold, [addHead("7")]);
  assert.equal(change.release, false);
});

Deno.test("dead-letter: an entry out of attempts is dead since now and still holds its target", () => {
  const change = fail({ attempts: 5, retryAt: null, error: "x" }, 1234.5, "7");
  assert.equal(change.to, "d");
  assert.equal(change.bookkeeping?.deadAt, 1234.5);
  assert.deepEqual(applyHold(hold(), change.hold).heads, new Set(["7"]));
});

Deno.test("an entry set aside as unreadable, a spawn's or a timer's failure becomes no head", () => {
  const unreadable = fail({ attempts: 1, retryAt: null, error: "x", unreadable: true }, 1, "7");
  assert.equal(unreadable.to, "d");
  assert.equal(unreadable.bookkeeping?.unreadable, true);
  assert.deepEqual(unreadable.hold, []);
  assert.deepEqual(fail({ attempts: 1, retryAt: 5, error: "x" }, 1).hold, []);
});

Deno.test("retry: a dead entry back to pending as if it never failed, listed first on its hold, its target released", () => {
  const change = retry("7");
  assert.equal(change.to, "p");
  assert.deepEqual(change.bookkeeping, RETRIED);
  assert.deepEqual(plain(applyHold(hold(["7"], ["9"]), change.hold)), {
    heads: ["7"], // it leaves the heads once the release has brought back what it held
    held: ["7", "9"],
  });
  assert.equal(change.release, true);
  assert.deepEqual(retry(), { bookkeeping: RETRIED, to: "p", hold: [], release: false });
});

Deno.test("drop and acknowledge delete the row; a dropped entry, or a head a pass handed out, releases its target", () => {
  assert.deepEqual(drop("7"), { to: null, hold: [], release: true });
  assert.deepEqual(drop(), { to: null, hold: [], release: false });
  assert.equal(acknowledge(true).release, true);
  assert.deepEqual(acknowledge(false), { to: null, hold: [], release: false });
});

Deno.test("hold: entries set apart behind their target's head are listed on its hold, unless it has no room", () => {
  const change = setApart(["8", "9"]);
  assert.equal(change.to, "h");
  assert.equal(change.bookkeeping, undefined); // their bookkeeping stays
  assert.deepEqual(plain(applyHold(hold(["7"]), change.hold)), { heads: ["7"], held: ["8", "9"] });
  assert.deepEqual(setApart(["8"], false).hold, []);
});

Deno.test("demote: a head behind a lower head leaves the heads and is listed as held", () => {
  const change = demote("9");
  assert.equal(change.to, "h");
  assert.deepEqual(plain(applyHold(hold(["7", "9"]), change.hold)), { heads: ["7"], held: ["9"] });
  assert.deepEqual(plain(applyHold(hold(["7", "9"]), demote("9", false).hold)), {
    heads: ["7"],
    held: [],
  });
});

Deno.test("a released entry goes back to pending and stays listed until delivered; unlisting takes it off", () => {
  assert.deepEqual(bringBack(), { to: "p", hold: [], release: false });
  assert.deepEqual(plain(applyHold(hold([], ["8", "9"]), [unlistHeld(["8"])])), {
    heads: [],
    held: ["9"],
  });
});

Deno.test("release: what was set apart below the lowest head still holding the target comes back; heads no longer holding it leave the hold", () => {
  const rows = new Map<string, ReleaseRow>([
    ["3", { seq: 3, setApart: false, head: false }], // retried: pending, no longer a head
    ["5", { seq: 5, setApart: false, head: true }], // still failed
    ["4", { seq: 4, setApart: true, head: false }],
    ["6", { seq: 6, setApart: true, head: false }], // behind 5: stays set apart
    ["2", { seq: 2, setApart: false, head: false }], // already back, listed until delivered
  ]);
  const decided = release(hold(["3", "5", "1"], ["3", "4", "6", "2", "8"]), (id) => rows.get(id));
  assert.deepEqual(decided.back, ["4"]);
  assert.equal(decided.lowest, 5);
  assert.deepEqual(decided.gone, { set: "heads", verb: "remove", seqs: ["3", "1"] }); // 1: gone
});

Deno.test("release: with no head left, everything set apart comes back", () => {
  const rows = new Map<string, ReleaseRow>([
    ["4", { seq: 4, setApart: true, head: false }],
    ["6", { seq: 6, setApart: true, head: false }],
  ]);
  const decided = release(hold(["1"], ["4", "6"]), (id) => rows.get(id));
  assert.deepEqual(decided.back, ["4", "6"]);
  assert.equal(decided.lowest, Infinity);
  assert.deepEqual(decided.gone?.seqs, ["1"]);
  assert.equal(release(hold([], []), () => undefined).gone, undefined);
});
