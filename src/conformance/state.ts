/**
 * The state-store conformance suite: the behaviour every {@linkcode StateStore} must show, as
 * `Deno.test` steps, on DynamoDB, the memory twin and any new backend.
 *
 * @module
 */
import assert from "node:assert/strict";
import { StoreClosed } from "../core/errors.ts";
import { DOCUMENT_DEPTH } from "../core/_json.ts";
import type { StateStore } from "../core/types.ts";
import { checkJsonRule, jsonRuleCases, nestedObject, rejection, tooDeep } from "./_shared.ts";

/**
 * A fresh, empty state store and a way to let `seconds` pass for it.
 *
 * @example A harness with a fake clock
 * ```ts
 * import { MemoryStateStore, type StateStoreHarness } from "@harel/dynamodb/testing";
 *
 * let now = Date.now();
 * const harness: StateStoreHarness = {
 *   store: new MemoryStateStore({ now: () => now }),
 *   advance: (seconds) => Promise.resolve(void (now += seconds * 1000)),
 * };
 * ```
 */
export interface StateStoreHarness {
  /** The store under test. */
  store: StateStore;
  /** Lets time pass: a real sleep for a real backend, a clock move for a fake one. */
  advance(seconds: number): Promise<void>;
}

/**
 * Makes a fresh, empty state store with its clock.
 *
 * @example A factory for the memory twin
 * ```ts
 * import { MemoryStateStore, type StateStoreFactory } from "@harel/dynamodb/testing";
 *
 * const factory: StateStoreFactory = () => {
 *   let now = Date.now();
 *   return Promise.resolve({
 *     store: new MemoryStateStore({ now: () => now }),
 *     advance: (seconds) => Promise.resolve(void (now += seconds * 1000)),
 *   });
 * };
 * ```
 */
export type StateStoreFactory = () => Promise<StateStoreHarness>;

/**
 * Runs the state-store conformance suite as steps of the calling test.
 *
 * @example Checking a backend
 * ```ts
 * import { MemoryStateStore, stateStoreConformance } from "@harel/dynamodb/testing";
 *
 * Deno.test("MemoryStateStore conforms", (t) =>
 *   stateStoreConformance(t, () => {
 *     let now = Date.now();
 *     const store = new MemoryStateStore({ now: () => now });
 *     return Promise.resolve({ store, advance: (s) => Promise.resolve(void (now += s * 1000)) });
 *   }));
 * ```
 *
 * @param t The calling test's context.
 * @param factory Makes a fresh, empty store (and its clock) for each step.
 */
export async function stateStoreConformance(
  t: Deno.TestContext,
  factory: StateStoreFactory,
): Promise<void> {
  const step = (name: string, body: (h: StateStoreHarness) => Promise<void>) =>
    t.step(name, async () => {
      const harness = await factory();
      await using _ = harness.store;
      await body(harness);
    });

  await step("set() and get() round-trip every JSON type with its type", async ({ store }) => {
    const values: [string, unknown][] = [
      ["object", { a: 1, nested: { list: [1, "two", null, true] } }],
      ["array", [1, 2, { three: 3 }]],
      ["int", 42],
      ["float", -0.125],
      ["true", true],
      ["false", false],
      ["string-42", "42"],
      ["empty", ""],
      ["null", null],
    ];
    for (const [key, value] of values) await store.set(key, value);
    for (const [key, value] of values) assert.deepEqual(await store.get(key), value, key);
    assert.equal(await store.get("missing"), null);
  });

  await step(
    "an expired key is absent on every read path and for writes",
    async ({ store, advance }) => {
      await store.set("short", { v: 1 }, { ttl: 1 });
      await store.hset("hshort", "f", 1);
      assert.equal(await store.expire("hshort", 1), true);
      assert.equal(await store.exists("short"), true);
      await advance(2.1);
      assert.equal(await store.get("short"), null);
      assert.equal(await store.exists("short"), false);
      assert.deepEqual(await store.keys("*short"), []);
      assert.equal(await store.ttl("short"), null);
      assert.equal(await store.hget("hshort", "f"), null);
      assert.deepEqual({ ...await store.hgetall("hshort") }, {});
      assert.equal(await store.hdel("hshort", "f"), 0);
      assert.equal(await store.expire("short", 100), false);
      assert.equal(await store.delete("short"), false);
      assert.equal(await store.hset("hshort", "new", 2), 1, "an expired hash restarts fresh");
      assert.deepEqual({ ...await store.hgetall("hshort") }, { new: 2 });
      assert.equal(await store.ttl("hshort"), null);
    },
  );

  await step("ttl(), expire() and delete()", async ({ store }) => {
    await store.set("k", 1, { ttl: 100 });
    const left = await store.ttl("k");
    assert.ok(left === 99 || left === 100, `ttl ${left}`);
    await store.set("k", 2);
    assert.equal(await store.ttl("k"), null, "set() replaces the TTL too");
    assert.equal(await store.ttl("missing"), null);
    assert.equal(await store.expire("k", 50), true);
    assert.equal(await store.expire("missing", 50), false);
    assert.equal(await store.exists("missing"), false);
    assert.equal(await store.expire("k", 0), true);
    assert.equal(await store.exists("k"), false);
    await store.set("d", 1);
    assert.equal(await store.delete("d"), true);
    assert.equal(await store.delete("d"), false);
  });

  await step("keys() matches globs, never as a regex", async ({ store }) => {
    for (const key of ["session:1", "session:22", "user.1", "user.x", "userx1", "a+b"]) {
      await store.set(key, 1);
    }
    assert.deepEqual((await store.keys("session:*")).sort(), ["session:1", "session:22"]);
    assert.deepEqual((await store.keys("session:?")).sort(), ["session:1"]);
    assert.deepEqual((await store.keys("user.[0-9]")).sort(), ["user.1"]);
    assert.deepEqual(await store.keys("a+b"), ["a+b"]);
    assert.deepEqual(await store.keys(".*"), []);
    assert.equal((await store.keys()).length, 6);
  });

  await step(
    "hset() counts new fields, hget/hgetall read them, hdel counts exactly",
    async ({ store }) => {
      assert.equal(await store.hset("h", "a", 1), 1);
      assert.equal(await store.hset("h", "b", { deep: [1, 2] }), 1);
      assert.equal(await store.hset("h", "a", "one"), 0);
      assert.equal(await store.hget("h", "a"), "one");
      assert.equal(await store.hget("h", "c"), null);
      assert.deepEqual({ ...await store.hgetall("h") }, { a: "one", b: { deep: [1, 2] } });
      assert.equal(await store.get("h"), null, "a key holding only a hash has no value");
      assert.equal(await store.hdel("h", "a", "zz", "a"), 1);
      assert.equal(await store.hdel("h", "b"), 1);
      assert.equal(await store.hdel("h", "b"), 0);
      assert.equal(await store.hdel("missing", "a"), 0);
      await assert.rejects(store.hdel("h"), TypeError);
    },
  );

  await step(
    "concurrent hsets on different fields all land; concurrent hdels of one field count 1",
    async ({ store }) => {
      await store.hset("existing", "seed", 0);
      for (const key of ["existing", "brand-new"]) {
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) => store.hset(key, `f${i}`, i)),
        );
        assert.deepEqual(results, Array(40).fill(1));
        const all = await store.hgetall(key);
        for (let i = 0; i < 40; i++) assert.equal(all[`f${i}`], i);
      }
      const counts = await Promise.all(
        Array.from({ length: 10 }, () => store.hdel("existing", "f0")),
      );
      assert.equal(counts.reduce((a, b) => a + b, 0), 1);
    },
  );

  await step("special field names are plain names", async ({ store }) => {
    const fields = ["a.b", "#x", ":y", "ttl", "value", "hash", "with space", "[0]", "ü\u{1F600}"];
    for (const [i, field] of fields.entries()) {
      assert.equal(await store.hset("h", field, i), 1, field);
    }
    for (const [i, field] of fields.entries()) assert.equal(await store.hget("h", field), i, field);
    assert.equal(await store.ttl("h"), null);
  });

  await step(
    "hash writes refuse a plain value; set() replaces a hash; bad input is refused",
    async ({ store }) => {
      await store.set("plain", "text");
      await assert.rejects(store.hset("plain", "f", 1), TypeError);
      assert.equal(await store.get("plain"), "text");
      await store.hset("h", "f", 1);
      await store.set("h", [1]);
      assert.deepEqual({ ...await store.hgetall("h") }, {});
      await assert.rejects(store.set("", 1), TypeError);
      await assert.rejects(store.set("k", undefined), TypeError);
      await assert.rejects(store.set("k", 1, { ttl: -1 }), RangeError);
      await assert.rejects(store.hset("k", "", 1), TypeError);
      await assert.rejects(store.hset("k", "f", NaN), TypeError);
      assert.equal(await store.exists("k"), false);
    },
  );
  await step(
    "field names that are Object.prototype members are plain fields",
    async ({ store }) => {
      const names = ["toString", "constructor", "__proto__", "hasOwnProperty", "valueOf"];
      await store.set("legacy", { a: 1 });
      await store.hset("native", "a", 1);
      for (const key of ["legacy", "native"]) {
        for (const name of names) assert.equal(await store.hget(key, name), null, `${key} ${name}`);
        const all = await store.hgetall(key);
        assert.equal(Object.getPrototypeOf(all), null, "hgetall() inherits nothing");
        assert.equal(all.toString, undefined);
      }
      assert.equal(await store.hdel("native", "toString", "constructor"), 0);
      for (const [i, name] of names.entries()) {
        assert.equal(await store.hset(`fresh-${i}`, name, i), 1, name);
        assert.equal(await store.hset("native", name, i), 1, name);
      }
      for (const [i, name] of names.entries()) {
        assert.equal(await store.hget("native", name), i, name);
      }
      const all = await store.hgetall("native");
      assert.deepEqual(Object.keys(all).sort(), ["a", ...names].sort());
      assert.equal(Object.hasOwn(all, "__proto__"), true);
      assert.equal(all["__proto__"], 2);
      assert.equal(await store.hdel("native", ...names), names.length);
      assert.deepEqual({ ...await store.hgetall("native") }, { a: 1 });
    },
  );

  await step(
    "hash values follow set()'s JSON rule, keep big integers and refuse what JSON would change",
    async ({ store }) => {
      const kept: [string, unknown, unknown][] = [
        ["big", 2 ** 60, 2 ** 60],
        ["e21", 1e21, 1e21],
        ["negative-big", -(2 ** 70), -(2 ** 70)],
        ["tiny", 1e-130, 1e-130],
        ["huge", 9.99e125, 9.99e125],
        ["date", new Date(0), "1970-01-01T00:00:00.000Z"],
        ["to-json", { toJSON: () => ({ via: "toJSON" }) }, { via: "toJSON" }],
        ["nested", { a: { b: [1, "", null, { c: false }] }, skip: undefined }, {
          a: { b: [1, "", null, { c: false }] },
        }],
        ["empty-string", "", ""],
      ];
      for (const [field, value] of kept) await store.hset("h", field, value);
      for (const [field, , read] of kept) {
        assert.deepEqual(await store.hget("h", field), read, field);
      }
      const refused: [unknown, ErrorConstructor][] = [
        [new Map([[1, 2]]), TypeError],
        [new Set([1, 2]), TypeError],
        [{ deep: new Set([1]) }, TypeError],
        [10n, TypeError],
        [NaN, TypeError],
        [Infinity, TypeError],
        [[1, -Infinity], TypeError],
        [() => 1, TypeError],
        [undefined, TypeError],
        [1e300, RangeError],
        [5e-324, RangeError],
      ];
      for (const [value, kind] of refused) {
        await assert.rejects(store.hset("refused", "the-field", value), (error: Error) => {
          assert.ok(error instanceof kind, `${error}`);
          assert.match(error.message, /the-field/);
          return true;
        });
      }
      assert.equal(await store.exists("refused"), false, "a refused write sends nothing");
      await assert.rejects(store.set("refused", new Map()), TypeError);
      await assert.rejects(store.set("refused", { s: new Set() }), TypeError);
      assert.equal(await store.exists("refused"), false);

      // A legacy hash holding an id from another system migrates on its first write.
      await store.set("legacy-id", { id: 12345678901234567890, name: "x" });
      assert.equal(await store.hset("legacy-id", "name", "y"), 0);
      assert.equal(await store.hget("legacy-id", "id"), 12345678901234567890);
      assert.equal(await store.hdel("legacy-id", "name"), 1);
      assert.deepEqual({ ...await store.hgetall("legacy-id") }, { id: 12345678901234567890 });
    },
  );

  await step(
    "hset() of an object sets every field at once and counts the new ones; { ttl } sets the key's expiry with them",
    async ({ store, advance }) => {
      assert.equal(await store.hset("s", { a: 1, b: "x" }), 2);
      assert.equal(await store.hset("s", { a: 2, c: true }), 1);
      assert.deepEqual({ ...await store.hgetall("s") }, { a: 2, b: "x", c: true });
      assert.equal(await store.ttl("s"), null);
      assert.equal(await store.expire("s", 1000), true);
      assert.equal(await store.hset("s", { d: null }), 1);
      assert.ok((await store.ttl("s"))! >= 998, "without ttl an existing key keeps its TTL");
      assert.equal(await store.hset("s", { d: 1 }, { ttl: 60 }), 0);
      const renewed = await store.ttl("s");
      assert.ok(renewed === 59 || renewed === 60, `ttl ${renewed}`);
      const session = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i}`, i]));
      assert.equal(await store.hset("fresh", session, { ttl: 30 }), 10);
      assert.deepEqual({ ...await store.hgetall("fresh") }, session);
      const fresh = await store.ttl("fresh");
      assert.ok(fresh === 29 || fresh === 30, `ttl ${fresh}`);
      const named = JSON.parse('{"__proto__": 1, "constructor": 2}');
      assert.equal(await store.hset("named", named, { ttl: 30 }), 2);
      assert.deepEqual(Object.keys(await store.hgetall("named")).sort(), [
        "__proto__",
        "constructor",
      ]);
      // A legacy hash migrates with the new fields and the expiry in the same write.
      await store.set("legacy", { a: 1 });
      assert.equal(await store.hset("legacy", { a: 2, b: 3 }, { ttl: 100 }), 1);
      assert.deepEqual({ ...await store.hgetall("legacy") }, { a: 2, b: 3 });
      assert.ok((await store.ttl("legacy"))! >= 99);
      await store.set("v", 1);
      await assert.rejects(store.hset("v", { a: 1 }), TypeError, "a key holding a value");
      assert.equal(await store.hset("s", { a: 1 }, { ttl: 1 }), 0);
      await advance(2.1);
      assert.equal(await store.hset("s", { z: 1 }), 1, "an expired hash restarts fresh");
      assert.deepEqual({ ...await store.hgetall("s") }, { z: 1 });
      assert.equal(await store.ttl("s"), null, "and without a TTL");
    },
  );

  await step(
    "hset() refuses bad fields and options before anything is written",
    async ({ store }) => {
      const refusals: [unknown, unknown, RegExp][] = [
        [{}, undefined, /empty object/],
        [{ "": 1 }, undefined, /must not be empty/],
        [{ f: NaN }, undefined, /f/],
        [{ f: 1 }, { ttl: Date.now() }, /milliseconds/],
        [{ f: 1 }, { ttl: 0 }, /more than 0/],
        [{ f: 1 }, { ttl: -1 }, /seconds/],
        [{ f: 1 }, { tll: 5 }, /tll/],
        [{ f: 1 }, 5, /options must be an object/],
        [new Map([["f", 1]]), undefined, /object of fields/],
        [["f"], undefined, /object of fields/],
        [null, undefined, /object of fields/],
        [Object.fromEntries(Array.from({ length: 231 }, (_, i) => [`f${i}`, i])), undefined, /230/],
      ];
      const hset = store.hset.bind(store) as (
        k: string,
        f: unknown,
        o?: unknown,
      ) => Promise<number>;
      for (const [fields, options, message] of refusals) {
        await assert.rejects(hset("k", fields, options), message, String(message));
      }
      assert.equal(await store.exists("k"), false, "a refused write sends nothing");
    },
  );

  await step("an emptied hash is deleted, as in Redis", async ({ store }) => {
    await store.hset("h", "a", 1);
    await store.hset("h", "b", 2);
    assert.equal(await store.expire("h", 1000), true);
    assert.equal(await store.hdel("h", "a"), 1);
    assert.equal(await store.exists("h"), true);
    assert.equal(await store.hdel("h", "b", "a"), 1);
    assert.equal(await store.exists("h"), false);
    assert.deepEqual(await store.keys("h"), []);
    assert.equal(await store.ttl("h"), null);
    assert.equal(await store.expire("h", 100), false);
    assert.equal(await store.delete("h"), false);
    assert.deepEqual({ ...await store.hgetall("h") }, {});
    assert.equal(await store.hset("h", "c", 3), 1, "a later hset starts afresh");
    assert.equal(await store.ttl("h"), null, "without the old TTL");
    assert.deepEqual({ ...await store.hgetall("h") }, { c: 3 });

    await store.set("legacy", { a: 1 });
    assert.equal(await store.hdel("legacy", "a"), 1);
    assert.equal(await store.exists("legacy"), false);
    assert.equal(await store.get("legacy"), null);
  });

  await step(
    "TTLs DynamoDB cannot store or over 10 years, null options and items over 400 KB are refused before sending",
    async ({ store }) => {
      await store.set("k", 1, null);
      await store.set("k2", 2, undefined);
      assert.equal(await store.get("k"), 1);
      assert.equal(await store.ttl("k"), null);
      await assert.rejects(store.set("k", 3, { ttl: 1e300 }), RangeError);
      await assert.rejects(store.expire("k", 1e300), /seconds/);
      await assert.rejects(store.expire("k", Infinity), RangeError);
      assert.equal(await store.get("k"), 1);
      assert.equal(await store.ttl("k"), null);
      // Ten years is the longest TTL; more is a unit mix-up, named as such.
      assert.equal(await store.expire("k", 315_360_000), true);
      assert.ok((await store.ttl("k"))! >= 315_360_000 - 2);
      const epoch = Math.floor(Date.now() / 1000) + 60;
      await assert.rejects(store.expire("k", epoch), /absolute epoch time in seconds/);
      await assert.rejects(store.set("k", 4, { ttl: epoch }), /options\.ttl .*EXPIREAT/);
      await assert.rejects(store.set("k", 4, { ttl: Date.now() + 60_000 }), /milliseconds/);
      await assert.rejects(store.expire("k", 315_360_001), /at most 315360000 \(10 years\)/);
      assert.equal(await store.get("k"), 1, "a refused set wrote nothing");

      const big = "x".repeat(410 * 1024);
      await assert.rejects(store.set("big", big), /400 KB/);
      await assert.rejects(store.hset("big", "f", big), /400 KB/);
      assert.equal(await store.exists("big"), false);
      const half = "y".repeat(250 * 1024);
      assert.equal(await store.hset("big", "a", half), 1);
      await assert.rejects(store.hset("big", "b", half), /400 KB/);
      assert.deepEqual(Object.keys(await store.hgetall("big")), ["a"]);
    },
  );

  await step(
    "hash values as a DynamoDB Map holds them: holes as null, 30 levels, no empty key",
    async ({ store }) => {
      const holes: unknown[] = [1];
      holes[2] = 3; // [1, <hole>, 3]
      assert.equal(await store.hset("h", "holes", holes), 1);
      assert.deepEqual(await store.hget("h", "holes"), [1, null, 3]);
      let deep: unknown = 1;
      for (let i = 0; i < 30; i++) deep = [deep];
      assert.equal(await store.hset("h", "deep", deep), 1);
      await assert.rejects(store.hset("h", "deeper", [deep]), RangeError);
      await assert.rejects(store.hset("h", "empty", { "": 1 }), TypeError);
      assert.deepEqual(Object.keys(await store.hgetall("h")).sort(), ["deep", "holes"]);
    },
  );

  await step(
    "values follow the one JSON rule of commit(): classes refused, toJSON applied, cycles and depth named",
    async ({ store }) => {
      for (const rule of jsonRuleCases()) {
        await checkJsonRule(rule, (value) => store.set("s", value), () => store.get("s"));
        await checkJsonRule(
          rule,
          (value) => store.hset("h", "f", value),
          () => store.hget("h", "f"),
        );
        await store.delete("s");
        await store.delete("h");
      }
      await store.set("deep", nestedObject(DOCUMENT_DEPTH));
      assert.deepEqual(await store.get("deep"), nestedObject(DOCUMENT_DEPTH));
      await assert.rejects(
        store.set("deeper", nestedObject(DOCUMENT_DEPTH + 1)),
        (e) => e instanceof RangeError && tooDeep(DOCUMENT_DEPTH).test(e.message),
      );
      assert.equal(await store.exists("deeper"), false);
    },
  );

  await step("a closed store refuses every call with StoreClosed", async ({ store }) => {
    await store.hset("h", "f", 1);
    await store.close();
    for (
      const call of [() => store.get("k"), () => store.set("k", 1), () => store.hset("h", "f", 2)]
    ) {
      assert.ok((await rejection(call())) instanceof StoreClosed);
    }
  });
}
