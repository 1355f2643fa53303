// The one JSON rule (src/core/_json.ts) without DynamoDB: what both stores write of a valid value,
// byte for byte as before the rule was one, and what they refuse. Runs with no permissions.
import assert from "node:assert/strict";
import { MemoryStateStore, MemoryStore, newExecution } from "../../src/testing.ts";
import { fitsDigits, numberText, plainValue, toJson } from "../../src/core/_json.ts";
import { toAttribute } from "../../src/state/_state_values.ts";

/** Valid values of every kind, built fresh on each call: [name, value, whether a hash field takes it]. */
function corpus(): [string, unknown, boolean][] {
  const holes: unknown[] = [1];
  holes[3] = "x";
  const bare = Object.create(null);
  bare.b = 1;
  bare.a = [true];
  let deep: unknown = "core";
  for (let i = 0; i < 30; i++) deep = i % 2 ? { [`k${i}`]: deep } : [deep];
  return [
    ["null", null, true],
    ["true", true, true],
    ["false", false, true],
    ["zero", 0, true],
    ["minus zero", -0, true],
    ["fraction", -0.125, true],
    ["tenth", 0.1, true],
    ["safe max", Number.MAX_SAFE_INTEGER, true],
    ["2^53+2", 2 ** 53 + 2, true],
    ["2^60", 2 ** 60, true],
    ["-2^70", -(2 ** 70), true],
    ["1e21", 1e21, true],
    ["30 digits", 123456789012345678901234567890, true],
    ["2^128 (39 digits)", 2 ** 128, true],
    ["1e-130", 1e-130, true],
    ["9.99e125", 9.99e125, true],
    ["1e-7", 1e-7, true],
    ["1e300 (text only)", 1e300, false],
    ["5e-324 (text only)", 5e-324, false],
    ["string", "plain", true],
    ["empty string", "", true],
    ["escapes", 'quote " backslash \\ newline \n tab \t nul \0 del \x7f', true],
    ["unicode", "é 中文 😀 \u2028\u2029", true],
    ["lone surrogates", "a\uD800b\uDC00", true],
    ["empty object", {}, true],
    ["empty array", [], true],
    ["key order", { b: 1, 10: "ten", a: 2, 2: "two", "-1": "m", "01": "z" }, true],
    ["nested", { a: { b: [1, "", null, { c: false }] }, list: [[], [{}]] }, true],
    ["undefined property", { kept: 1, dropped: undefined }, true],
    ["holes", holes, true],
    ["sparse", new Array(3), true],
    ["null prototype", bare, true],
    ["__proto__ key", JSON.parse('{"__proto__": {"x": 1}, "y": 2}'), true],
    ["prototype names", { toString: "s", constructor: 1, hasOwnProperty: null }, true],
    ["date", new Date(0), true],
    ["dates inside", { at: [new Date(86_400_000)] }, true],
    ["toJSON", { toJSON: () => ({ via: "toJSON", n: [1] }) }, true],
    ["toJSON to a string", { toJSON: () => "as text" }, true],
    ["URL", new URL("https://example.com/a?b=c"), true],
    ["30 levels", deep, true],
    ["frozen", Object.freeze({ a: Object.freeze([1, 2]) }), true],
    ["getter", {
      get g() {
        return { got: 1 };
      },
    }, true],
    ["symbol key", { [Symbol("s")]: 1, a: 1 }, true],
    ["non-enumerable", Object.defineProperty({ a: 1 }, "hidden", { value: 2 }), true],
  ];
}

/**
 * What the code before the one walker wrote for each value, recorded from it: the JSON text
 * (`commit`'s toJson and `set`'s plainValue wrote the same), and a hash field's native value.
 */
const BEFORE: [string, string, string | null][] = [
  ["null", "null", '{"NULL":true}'],
  ["true", "true", '{"BOOL":true}'],
  ["false", "false", '{"BOOL":false}'],
  ["zero", "0", '{"N":"0"}'],
  ["minus zero", "0", '{"N":"0"}'],
  ["fraction", "-0.125", '{"N":"-0.125"}'],
  ["tenth", "0.1", '{"N":"0.1"}'],
  ["safe max", "9007199254740991", '{"N":"9007199254740991"}'],
  ["2^53+2", "9007199254740994", '{"N":"9007199254740994"}'],
  ["2^60", "1152921504606847000", '{"N":"1152921504606846976"}'],
  ["-2^70", "-1.1805916207174113e+21", '{"N":"-1180591620717411303424"}'],
  ["1e21", "1e+21", '{"N":"1000000000000000000000"}'],
  ["30 digits", "1.2345678901234568e+29", '{"N":"123456789012345677877719597056"}'],
  ["2^128 (39 digits)", "3.402823669209385e+38", '{"N":"3.402823669209385e+38"}'],
  ["1e-130", "1e-130", '{"N":"1e-130"}'],
  ["9.99e125", "9.99e+125", '{"N":"9.99e+125"}'],
  ["1e-7", "1e-7", '{"N":"1e-7"}'],
  ["1e300 (text only)", "1e+300", null],
  ["5e-324 (text only)", "5e-324", null],
  ["string", '"plain"', '{"S":"plain"}'],
  ["empty string", '""', '{"S":""}'],
  [
    "escapes",
    '"quote \\" backslash \\\\ newline \\n tab \\t nul \\u0000 del \u007f"',
    '{"S":"quote \\" backslash \\\\ newline \\n tab \\t nul \\u0000 del \u007f"}',
  ],
  [
    "unicode",
    '"\u00e9 \u4e2d\u6587 \ud83d\ude00 \u2028\u2029"',
    '{"S":"\u00e9 \u4e2d\u6587 \ud83d\ude00 \u2028\u2029"}',
  ],
  ["lone surrogates", '"a\\ud800b\\udc00"', '{"S":"a\\ud800b\\udc00"}'],
  ["empty object", "{}", '{"M":{}}'],
  ["empty array", "[]", '{"L":[]}'],
  [
    "key order",
    '{"2":"two","10":"ten","b":1,"a":2,"-1":"m","01":"z"}',
    '{"M":{"2":{"S":"two"},"10":{"S":"ten"},"b":{"N":"1"},"a":{"N":"2"},"-1":{"S":"m"},"01":{"S":"z"}}}',
  ],
  [
    "nested",
    '{"a":{"b":[1,"",null,{"c":false}]},"list":[[],[{}]]}',
    '{"M":{"a":{"M":{"b":{"L":[{"N":"1"},{"S":""},{"NULL":true},{"M":{"c":{"BOOL":false}}}]}}},"list":{"L":[{"L":[]},{"L":[{"M":{}}]}]}}}',
  ],
  ["undefined property", '{"kept":1}', '{"M":{"kept":{"N":"1"}}}'],
  ["holes", '[1,null,null,"x"]', '{"L":[{"N":"1"},{"NULL":true},{"NULL":true},{"S":"x"}]}'],
  ["sparse", "[null,null,null]", '{"L":[{"NULL":true},{"NULL":true},{"NULL":true}]}'],
  ["null prototype", '{"b":1,"a":[true]}', '{"M":{"b":{"N":"1"},"a":{"L":[{"BOOL":true}]}}}'],
  [
    "__proto__ key",
    '{"__proto__":{"x":1},"y":2}',
    '{"M":{"__proto__":{"M":{"x":{"N":"1"}}},"y":{"N":"2"}}}',
  ],
  [
    "prototype names",
    '{"toString":"s","constructor":1,"hasOwnProperty":null}',
    '{"M":{"toString":{"S":"s"},"constructor":{"N":"1"},"hasOwnProperty":{"NULL":true}}}',
  ],
  ["date", '"1970-01-01T00:00:00.000Z"', '{"S":"1970-01-01T00:00:00.000Z"}'],
  [
    "dates inside",
    '{"at":["1970-01-02T00:00:00.000Z"]}',
    '{"M":{"at":{"L":[{"S":"1970-01-02T00:00:00.000Z"}]}}}',
  ],
  ["toJSON", '{"via":"toJSON","n":[1]}', '{"M":{"via":{"S":"toJSON"},"n":{"L":[{"N":"1"}]}}}'],
  ["toJSON to a string", '"as text"', '{"S":"as text"}'],
  ["URL", '"https://example.com/a?b=c"', '{"S":"https://example.com/a?b=c"}'],
  [
    "30 levels",
    '{"k29":[{"k27":[{"k25":[{"k23":[{"k21":[{"k19":[{"k17":[{"k15":[{"k13":[{"k11":[{"k9":[{"k7":[{"k5":[{"k3":[{"k1":["core"]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}',
    '{"M":{"k29":{"L":[{"M":{"k27":{"L":[{"M":{"k25":{"L":[{"M":{"k23":{"L":[{"M":{"k21":{"L":[{"M":{"k19":{"L":[{"M":{"k17":{"L":[{"M":{"k15":{"L":[{"M":{"k13":{"L":[{"M":{"k11":{"L":[{"M":{"k9":{"L":[{"M":{"k7":{"L":[{"M":{"k5":{"L":[{"M":{"k3":{"L":[{"M":{"k1":{"L":[{"S":"core"}]}}}]}}}]}}}]}}}]}}}]}}}]}}}]}}}]}}}]}}}]}}}]}}}]}}}]}}}]}}}',
  ],
  ["frozen", '{"a":[1,2]}', '{"M":{"a":{"L":[{"N":"1"},{"N":"2"}]}}}'],
  ["getter", '{"g":{"got":1}}', '{"M":{"g":{"M":{"got":{"N":"1"}}}}}'],
  ["symbol key", '{"a":1}', '{"M":{"a":{"N":"1"}}}'],
  ["non-enumerable", '{"a":1}', '{"M":{"a":{"N":"1"}}}'],
];

Deno.test("the one walker writes every valid value byte for byte as the two walkers did", async (t) => {
  const values = corpus();
  assert.deepEqual(values.map(([name]) => name), BEFORE.map(([name]) => name));
  for (const [i, [name, value, hashable]] of values.entries()) {
    await t.step(name, () => {
      const [, text, native] = BEFORE[i]!;
      assert.equal(toJson("v", value), text, "commit's documents and set()'s values");
      assert.equal(JSON.stringify(plainValue("v", value)), text);
      if (!hashable) return;
      assert.equal(JSON.stringify(plainValue("v", value, true)), text, "the memory twin's hash");
      assert.equal(JSON.stringify(toAttribute(plainValue("v", value, true))), native, "hset()");
    });
  }
});

Deno.test("DynamoDB's number limits are one table: digits, magnitudes and N's text", () => {
  assert.equal(fitsDigits("-0.00120e5"), true);
  assert.equal(fitsDigits("1".repeat(38) + "000"), true);
  assert.equal(fitsDigits("1".repeat(39)), false);
  assert.equal(numberText(2 ** 60), "1152921504606846976");
  assert.equal(numberText(2 ** 128), "3.402823669209385e+38", "39 digits: the shortest form");
  assert.throws(() => plainValue("v", 1e126, true), /v is 1e\+126; a DynamoDB number must be 0/);
  assert.throws(() => plainValue("v", -1e-131, true), RangeError);
  assert.equal(toJson("v", [1e126, 1e-131]), "[1e+126,1e-131]", "JSON text carries them");
});

/** A user's class, without and with a toJSON(). */
class Money {
  amount = 5;
}
class Priced {
  amount = 5;
  toJSON(): unknown {
    return { amount: this.amount, currency: "EUR" };
  }
}

/** Every way a value is written: commit's documents, set() and hset() of both twins. */
const WRITERS: [string, (value: unknown) => Promise<unknown>][] = [
  ["commit", async (value) => {
    const store = new MemoryStore();
    const exe = newExecution({ definition_id: "d", context: { v: value } });
    await store.commit(exe);
    return (await store.load(exe.id))!.context.v;
  }],
  ["set", async (value) => {
    const state = new MemoryStateStore();
    await state.set("k", { v: value });
    return (await state.get<{ v: unknown }>("k"))!.v;
  }],
  ["hset", async (value) => {
    const state = new MemoryStateStore();
    await state.hset("h", "f", { v: value });
    return (await state.hget<{ v: unknown }>("h", "f"))!.v;
  }],
];

Deno.test("commit(), set() and hset() follow one rule for class instances, toJSON and boxed values", async (t) => {
  const stored: [string, () => unknown, unknown][] = [
    ["a class with toJSON()", () => new Priced(), { amount: 5, currency: "EUR" }],
    ["a Date", () => new Date(0), "1970-01-01T00:00:00.000Z"],
    ["a boxed string, number and boolean", () => [
      new String("s"),
      new Number(1),
      new Boolean(false),
    ], ["s", 1, false]],
    ["a toJSON() that returns undefined, as a property", () => ({
      a: 1,
      gone: { toJSON: () => undefined },
    }), { a: 1 }],
  ];
  const refused: [string, () => unknown, RegExp][] = [
    ["a class instance", () => new Money(), /\.v is a Money, which JSON would store/],
    ["a Map inside an array", () => [1, new Map()], /\.v\[1\] is a Map/],
    ["a toJSON() returning a Map", () => ({ toJSON: () => new Map() }), /\.v is a Map/],
    ["a toJSON() returning its class instance", () => {
      const self = new Money() as Money & { toJSON?: () => unknown };
      self.toJSON = () => self;
      return self;
    }, /\.v is a Money/],
    ["a boxed BigInt", () => Object(1n), /\.v is 1n \(a BigInt\)/],
    ["a symbol", () => Symbol("s"), /\.v is a symbol/],
    ["a Uint8Array", () => new Uint8Array(2), /\.v is a Uint8Array/],
    ["an Error", () => new Error("x"), /\.v is a Error/],
  ];
  for (const [writer, write] of WRITERS) {
    for (const [what, make, expected] of stored) {
      await t.step(`${writer}: ${what} is stored as JSON.stringify sees it`, async () => {
        assert.deepEqual(await write(make()), expected);
      });
    }
    for (const [what, make, message] of refused) {
      await t.step(`${writer}: ${what} is refused naming the path`, async () => {
        await assert.rejects(write(make()), (error: Error) => {
          assert.ok(error instanceof TypeError, `${error}`);
          assert.match(error.message, message);
          return true;
        });
      });
    }
  }
});

Deno.test("toJSON() and getters run once, with JSON's key, so what is checked is what is written", async (t) => {
  for (const [writer, write] of WRITERS) {
    await t.step(writer, async () => {
      const keys: string[] = [];
      let reads = 0;
      const value = {
        at: { toJSON: (key: string) => (keys.push(key), keys.length === 1 ? "ok" : new Map()) },
        get flips() {
          return ++reads === 1 ? 1 : 1n;
        },
      };
      assert.deepEqual(await write(value), { at: "ok", flips: 1 });
      assert.deepEqual(keys, ["at"]);
      assert.equal(reads, 1);
    });
  }
});

Deno.test("a document's text with a backslash before ud800 is no lone surrogate, and its getters run once", () => {
  let reads = 0;
  const value = {
    note: "C:\\ud800\\file",
    get flips() {
      return ++reads === 1 ? 1 : 1n;
    },
  };
  assert.equal(toJson("exe", value, true), '{"note":"C:\\\\ud800\\\\file","flips":1}');
  assert.equal(reads, 1);
  assert.throws(
    () => toJson("exe", { note: value.note, deep: [{ at: "\ud800" }] }, true),
    /exe\.deep\[0\]\.at holds a lone UTF-16 surrogate/,
  );
});

Deno.test("a getter runs once wherever it sits, in a plain document or beside a toJSON()", async (t) => {
  for (const [writer, write] of WRITERS) {
    for (const after of ["nothing", "a Date"]) {
      await t.step(`${writer}, the getter first, then ${after}`, async () => {
        let reads = 0;
        const value: Record<string, unknown> = {
          get flips() {
            return ++reads === 1 ? 1 : 1n;
          },
        };
        if (after === "a Date") value.at = new Date(0);
        const expected = after === "a Date" ? { flips: 1, at: new Date(0).toJSON() } : { flips: 1 };
        assert.deepEqual(await write(value), expected);
        assert.equal(reads, 1);
      });
    }
  }
});

Deno.test("an error thrown by a toJSON() or a getter reaches the caller unchanged", async (t) => {
  for (const [writer, write] of WRITERS) {
    await t.step(writer, async () => {
      const thrown = new Error("the caller's own");
      await assert.rejects(
        write({
          toJSON: () => {
            throw thrown;
          },
        }),
        (error) => error === thrown,
      );
      assert.equal(thrown.message, "the caller's own");
    });
  }
});

Deno.test("documents nest at most 100 levels (harel's) or 500 (set), counted from the stored document", async (t) => {
  const nested = (levels: number) => {
    let value: unknown = {};
    for (let i = 1; i < levels; i++) value = { d: value };
    return value;
  };
  const store = new MemoryStore();
  const state = new MemoryStateStore();
  const documents: [string, number, (value: unknown) => Promise<unknown>][] = [
    [
      "commit (the context is the second level)",
      99,
      (context) => store.commit(newExecution({ definition_id: "d", context: context as never })),
    ],
    ["set", 500, (value) => state.set("k", value)],
  ];
  for (const [writer, levels, write] of documents) {
    await t.step(writer, async () => {
      await write(nested(levels));
      for (const deeper of [levels + 1, 5_000, 100_000]) {
        await assert.rejects(write(nested(deeper)), (error: Error) => {
          assert.ok(error instanceof RangeError, `${error}`);
          const limit = writer === "set" ? 500 : 100;
          assert.match(
            error.message,
            new RegExp(`\\.d nests deeper than ${limit} levels of objects`),
          );
          return true;
        });
      }
    });
  }
});
