// The relay's rules (src/core/_relay_rules.ts), which both execution stores and the runners
// call: pure, so they are tested here with no DynamoDB and no permissions.
import assert from "node:assert/strict";
import {
  afterFailure,
  errorText,
  failedAttempt,
  holdsAt,
  isDead,
  isDue,
  isHead,
  isLiveAt,
  LAST_ERROR_BYTES,
  lastErrorText,
  markExpiry,
  RETRIED,
  ringDrop,
  setAside,
  utf8Prefix,
} from "../../src/core/_relay_rules.ts";

const retry = { maxAttempts: 4, minSeconds: 10, maxSeconds: 25 };
const bytes = (text: string) => new TextEncoder().encode(text).length;

Deno.test("isDue: a row never failed is due", () => {
  assert.equal(isDue({}, 100), true);
  assert.equal(isDue({ retryAt: null, deadAt: null }, 100), true);
});

Deno.test("isDue: a row waiting for a retry is due from that second on", () => {
  assert.equal(isDue({ retryAt: 101 }, 100), false);
  assert.equal(isDue({ retryAt: 100 }, 100), true);
  assert.equal(isDue({ retryAt: 99.5 }, 100), true);
});

Deno.test("isDue: a dead letter is never due, whatever its retry time", () => {
  assert.equal(isDue({ deadAt: 5 }, 100), false);
  assert.equal(isDue({ deadAt: 0, retryAt: 1 }, 100), false);
});

Deno.test("isDead: a dead_at of 0 is dead; null and undefined are not", () => {
  assert.equal(isDead({ deadAt: 0 }), true);
  assert.equal(isDead({ deadAt: null }), false);
  assert.equal(isDead({}), false);
});

Deno.test("isHead: a failed entry, waiting (due or not) or dead and readable, is a head", () => {
  assert.equal(isHead({ retryAt: 5 }), true);
  assert.equal(isHead({ deadAt: 5 }), true);
  assert.equal(isHead({}), false);
});

Deno.test("isHead: an entry set aside as unreadable is no head: it holds nothing back", () => {
  assert.equal(isHead({ deadAt: 5, unreadable: true }), false);
});

Deno.test("holdsAt: a dead letter holds its target at any time", () => {
  assert.equal(holdsAt({ deadAt: 5 }, 0), true);
  assert.equal(holdsAt({ deadAt: 5 }, 1e12), true);
});

Deno.test("holdsAt: a waiting entry holds its target until its retry is due, then goes first", () => {
  assert.equal(holdsAt({ retryAt: 200 }, 199.9), true);
  assert.equal(holdsAt({ retryAt: 200 }, 200), false);
});

Deno.test("holdsAt: an unreadable dead letter and a healthy entry hold nothing", () => {
  assert.equal(holdsAt({ deadAt: 5, unreadable: true }, 0), false);
  assert.equal(holdsAt({}, 0), false);
});

Deno.test("failedAttempt: the first failure waits minSeconds from the pass's clock", () => {
  assert.deepEqual(failedAttempt(0, new Error("down"), retry, 1_000), {
    attempts: 1,
    retryAt: 1_010,
    error: "Error: down",
  });
});

Deno.test("failedAttempt: the wait doubles with each failure, up to maxSeconds", () => {
  assert.equal(failedAttempt(1, "x", retry, 0).retryAt, 20);
  assert.equal(failedAttempt(2, "x", retry, 0).retryAt, 25);
});

Deno.test("failedAttempt: the maxAttempts-th failure dead-letters the row", () => {
  const dead = failedAttempt(3, "x", retry, 0);
  assert.deepEqual([dead.attempts, dead.retryAt], [4, null]);
});

Deno.test("failedAttempt: times come from the clock given, not from Date.now", () => {
  const far = Date.UTC(2033, 0, 1) / 1000;
  assert.equal(failedAttempt(0, "x", retry, far).retryAt, far + 10);
});

Deno.test("failedAttempt: a backoff of 0 retries on the very next pass; fractions are kept", () => {
  assert.equal(failedAttempt(0, "x", { ...retry, minSeconds: 0 }, 7).retryAt, 7);
  assert.equal(failedAttempt(0, "x", { ...retry, minSeconds: 0.25 }, 7).retryAt, 7.25);
});

Deno.test("setAside: an unreadable row is dead at once, counted as an attempt, saying why", () => {
  assert.deepEqual(setAside(2, "event is not JSON"), {
    attempts: 3,
    retryAt: null,
    error: "unreadable: event is not JSON",
    unreadable: true,
  });
});

Deno.test("errorText: an Error reads as name and message; anything else as its text", () => {
  assert.equal(errorText(new TypeError("bad")), "TypeError: bad");
  assert.equal(errorText("plain"), "plain");
  assert.equal(errorText(42), "42");
  assert.equal(errorText(undefined), "undefined");
});

Deno.test("lastErrorText: 1,000 × é keeps 500 characters, the 1,000 bytes they take", () => {
  const kept = lastErrorText("é".repeat(1000));
  assert.equal(kept.length, 500);
  assert.equal(bytes(kept), LAST_ERROR_BYTES);
});

Deno.test("lastErrorText: a short text is kept whole; an empty one says there was none", () => {
  assert.equal(lastErrorText("HTTP 503"), "HTTP 503");
  assert.equal(lastErrorText(""), "(no message)");
});

Deno.test("lastErrorText: never cuts inside a character (a 4-byte emoji at the limit)", () => {
  const kept = lastErrorText("a".repeat(998) + "😀");
  assert.equal(kept, "a".repeat(998));
  assert.ok(bytes(kept) <= LAST_ERROR_BYTES);
});

Deno.test("utf8Prefix: a lone surrogate becomes U+FFFD instead of breaking the text", () => {
  assert.equal(utf8Prefix("a\ud800b", 100), "a\ufffdb");
});

Deno.test("utf8Prefix: exactly at the limit the text is kept whole", () => {
  assert.equal(utf8Prefix("abc", 3), "abc");
  assert.equal(utf8Prefix("abcd", 3), "abc");
  assert.equal(utf8Prefix("ééé", 5), "éé");
});

Deno.test("ringDrop: a ring of N drops the step N below the one written", () => {
  assert.equal(ringDrop(10, 3), 7);
  assert.equal(ringDrop(2, 3), -1, "not full yet: a negative index names no step");
});

Deno.test("ringDrop: traceMax 0 keeps every step", () => {
  assert.equal(ringDrop(10_000, 0), -1);
});

Deno.test("ringDrop: traceMax 1 drops the previous step", () => {
  assert.equal(ringDrop(5, 1), 4);
});

Deno.test("isLiveAt: alive until the second it names, as DynamoDB's TTL reads it", () => {
  assert.equal(isLiveAt(100, 99.9), true);
  assert.equal(isLiveAt(100, 100), false);
});

Deno.test("isLiveAt: no expiry (null or undefined) lives forever", () => {
  assert.equal(isLiveAt(null, 1e12), true);
  assert.equal(isLiveAt(undefined, 1e12), true);
});

Deno.test("markExpiry: ttlSeconds after the whole second of the write; null never expires", () => {
  assert.equal(markExpiry(60, 1_000.9), 1_060);
  assert.equal(markExpiry(null, 1_000), null);
});

Deno.test("afterFailure: a failed attempt waits until its retry, or is dead since now; both stores keep exactly this", () => {
  assert.deepEqual(afterFailure({ attempts: 2, retryAt: 1060, error: "down" }, 1000), {
    attempts: 2,
    lastError: "down",
    retryAt: 1060,
    deadAt: null,
    unreadable: false,
  });
  assert.deepEqual(
    afterFailure({ attempts: 10, retryAt: null, error: "", unreadable: true }, 1000.5),
    { attempts: 10, lastError: "(no message)", retryAt: null, deadAt: 1000.5, unreadable: true },
  );
  assert.equal(
    afterFailure({ attempts: 1, retryAt: 5, error: "x", unreadable: true }, 1).unreadable,
    false,
    "unreadable only when dead",
  );
  assert.deepEqual(RETRIED, {
    attempts: 0,
    lastError: null,
    retryAt: null,
    deadAt: null,
    unreadable: false,
  });
  assert.ok(Object.isFrozen(RETRIED));
});
