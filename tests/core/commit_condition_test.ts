// The commit's condition as one list of clauses: each clause's text, evaluated as
// DynamoDB evaluates it (a small evaluator below: a comparison of two different types, or with
// a missing attribute, is false), says exactly what its own test of the `ALL_OLD` item says;
// the expression is built from the list and a refusal is told from it. No DynamoDB, no
// permissions (tests/execution/retention_test.ts checks the ttl rule against DynamoDB Local).
import assert from "node:assert/strict";
import fc from "fast-check";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { StatusMove } from "../../src/execution/listing/_status_index.ts";
import {
  type Clause,
  commitClauses,
  type ConditionInput,
  conditionOf,
  refusalOf,
} from "../../src/execution/commit/_commit_condition.ts";
import { isExpired } from "../../src/execution/commit/_retention.ts";
import {
  buildTransaction,
  planCommit,
  type TxContext,
} from "../../src/execution/commit/_transaction.ts";
import { executionTables } from "../../src/core/table_specs.ts";
import { newEvent, newExecution } from "../../src/testing.ts";

type Item = Record<string, AttributeValue>;

/**
 * Evaluates a condition the way DynamoDB does, for the syntax the clauses use: AND, OR, NOT,
 * parentheses, attribute_exists, attribute_not_exists, attribute_type and =, <>, <, <=, >, >=
 * between `#name` and `:value` operands.
 */
function evaluate(
  expression: string,
  item: Item | undefined,
  names: Record<string, string>,
  values: Item,
): boolean {
  const tokens = expression.match(/\(|\)|,|<=|>=|<>|=|<|>|[#:][A-Za-z0-9_]+|[A-Za-z_]+/g)!;
  let at = 0;
  const next = () => tokens[at++]!;
  const peek = () => tokens[at];
  const expect = (token: string) => assert.equal(next(), token, expression);
  const operand = (token: string): AttributeValue | undefined => {
    if (token.startsWith("#")) {
      assert.ok(token in names, `${token} is not in the names`);
      return item?.[names[token]!];
    }
    assert.ok(token in values, `${token} is not in the values`);
    return values[token];
  };
  const type = (v: AttributeValue) => Object.keys(v).find((k) => k !== "$unknown")!;
  const compare = (a: AttributeValue | undefined, op: string, b: AttributeValue | undefined) => {
    if (a === undefined || b === undefined || type(a) !== type(b)) return false;
    if (type(a) !== "N" && type(a) !== "S") {
      return op === "=" ? JSON.stringify(a) === JSON.stringify(b) : op === "<>" ? true : false;
    }
    const [x, y] = type(a) === "N" ? [Number(a.N), Number(b.N)] : [a.S!, b.S!];
    return { "=": x === y, "<>": x !== y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y }[op]!;
  };
  const primary = (): boolean => {
    const token = next();
    if (token === "(") {
      const value = or();
      expect(")");
      return value;
    }
    if (token === "NOT") return !primary();
    if (/^attribute_/.test(token)) {
      expect("(");
      const path = next();
      let result: boolean;
      if (token === "attribute_type") {
        expect(",");
        const wanted = operand(next())!.S!;
        const found = operand(path);
        result = found !== undefined && type(found) === wanted;
      } else result = (operand(path) !== undefined) === (token === "attribute_exists");
      expect(")");
      return result;
    }
    const op = next();
    return compare(operand(token), op, operand(next()));
  };
  const and = (): boolean => {
    let value = primary();
    while (peek() === "AND") {
      next();
      value = primary() && value;
    }
    return value;
  };
  const or = (): boolean => {
    let value = and();
    while (peek() === "OR") {
      next();
      value = and() || value;
    }
    return value;
  };
  const result = or();
  assert.equal(at, tokens.length, `${expression}: trailing tokens`);
  return result;
}

/** The aliases an expression reads. */
const aliases = (text: string, sigil: "#" | ":") =>
  new Set(text.match(sigil === "#" ? /#[A-Za-z0-9_]+/g : /:[A-Za-z0-9_]+/g) ?? []);

const NOW = 1_800_000_000.5;

/** Every type another writer may have stored a `ttl` as, and whether it has expired at NOW. */
const TTLS: [string, AttributeValue | undefined, boolean][] = [
  ["none", undefined, false],
  ["a number before now", { N: String(NOW - 100) }, true],
  ["a number equal to now", { N: String(NOW) }, true],
  ["a number after now", { N: String(NOW + 100) }, false],
  ["milliseconds", { N: String(NOW * 1000) }, false],
  ["a number as text, before now", { S: String(NOW - 100) }, false],
  ["text that is no number", { S: "soon" }, false],
  ["a boolean", { BOOL: true }, false],
  ["NULL", { NULL: true }, false],
];

const input = (over: Partial<ConditionInput> = {}): ConditionInput => ({
  expected: 3,
  now: NOW,
  outbox: { seqs: [], fresh: false },
  spawns: { seqs: [], fresh: false },
  head: undefined,
  ...over,
});

const item = (over: Item = {}): Item => ({ id: { S: "e" }, version: { N: "3" }, ...over });

Deno.test("a commit's liveness clause and every read apply one rule to a ttl of any type", async (t) => {
  for (const [kind, ttl, expired] of TTLS) {
    await t.step(`a ttl that is ${kind} has ${expired ? "" : "not "}expired`, () => {
      const old = item(ttl === undefined ? {} : { ttl });
      assert.equal(isExpired(old, NOW), expired);
      const alive = commitClauses(input())[1]!;
      assert.equal(alive.fails(old), expired);
      assert.equal(evaluate(alive.expression, old, alive.names, alive.values), !expired);
      // An insert may replace exactly what has expired.
      const absent = commitClauses(input({ expected: 0 }))[0]!;
      assert.equal(absent.fails(old), !expired);
      assert.equal(evaluate(absent.expression, old, absent.names, absent.values), expired);
    });
  }
});

Deno.test("an update's clauses: the version, liveness, the cached ring end, stale watermarks only", () => {
  const kinds = (clauses: Clause[]) => clauses.map((c) => c.kind);
  assert.deepEqual(kinds(commitClauses(input())), ["version", "version"]);
  assert.deepEqual(kinds(commitClauses(input({ expected: 0 }))), ["version"]);
  assert.deepEqual(
    kinds(commitClauses(input({
      head: { last: 4, cached: true },
      outbox: { seqs: [10, 11], fresh: false },
      spawns: { seqs: [12], fresh: false },
    }))),
    ["version", "version", "traceEnd", "outboxWatermark", "spawnWatermark"],
  );
  // A ring end just read, seqs from a fresh block and an insert check none of them.
  assert.deepEqual(
    kinds(commitClauses(input({
      head: { last: 4 },
      outbox: { seqs: [10], fresh: true },
      spawns: { seqs: [], fresh: false },
    }))),
    ["version", "version"],
  );
  assert.deepEqual(
    kinds(commitClauses(input({ expected: 0, outbox: { seqs: [1], fresh: false } }))),
    ["version"],
  );
});

/** Any condition input, and any item DynamoDB may hold (or none). */
const anyInput: fc.Arbitrary<ConditionInput> = fc.record({
  expected: fc.constantFrom(0, 1, 3, 7),
  now: fc.constant(NOW),
  outbox: fc.record({ seqs: fc.constantFrom<number[]>([], [5], [20, 21]), fresh: fc.boolean() }),
  spawns: fc.record({ seqs: fc.constantFrom<number[]>([], [6], [30]), fresh: fc.boolean() }),
  head: fc.option(
    fc.record({ last: fc.constantFrom(-1, 4, 9), cached: fc.boolean() }),
    { nil: undefined },
  ),
});
const numberOr = (...numbers: number[]) =>
  fc.option(
    fc.oneof(
      fc.constantFrom(...numbers).map((n): AttributeValue => ({ N: String(n) })),
      fc.constantFrom(...numbers).map((n): AttributeValue => ({ S: String(n) })),
    ),
    { nil: undefined },
  );
const anyItem = fc.option(
  fc.record({
    version: numberOr(1, 3, 7),
    ttl: fc.constantFrom(...TTLS.map(([, ttl]) => ttl)),
    outbox_hwm: numberOr(0, 5, 19, 20, 25),
    spawn_hwm: numberOr(0, 6, 30, 31),
    trace_end: numberOr(-1, 4, 9),
  }).map((attrs) => {
    const old: Item = { id: { S: "e" } };
    for (const [name, value] of Object.entries(attrs)) if (value) old[name] = value;
    return old;
  }),
  { nil: undefined },
);

Deno.test("each clause's text is true on exactly the items its test passes, and so is the whole", () => {
  fc.assert(
    fc.property(anyInput, anyItem, (given, old) => {
      const clauses = commitClauses(given);
      for (const clause of clauses) {
        assert.equal(
          evaluate(clause.expression, old, clause.names, clause.values),
          !clause.fails(old),
          `${clause.expression} on ${JSON.stringify(old)}`,
        );
      }
      const { expression, names, values } = conditionOf(clauses);
      assert.equal(
        evaluate(expression, old, names, values),
        clauses.every((clause) => !clause.fails(old)),
      );
    }),
    { seed: 26, numRuns: 2000 },
  );
});

Deno.test("the condition names every alias it reads, and reads every alias it names", () => {
  fc.assert(
    fc.property(anyInput, (given) => {
      const { expression, names, values } = conditionOf(commitClauses(given));
      assert.deepEqual(aliases(expression, "#"), new Set(Object.keys(names)));
      assert.deepEqual(aliases(expression, ":"), new Set(Object.keys(values)));
    }),
    { seed: 26, numRuns: 300 },
  );
});

Deno.test("a refusal is told by the clauses in order: a lost race, then the ring end, then watermarks", async (t) => {
  const cases: [string, Partial<ConditionInput>, Item | undefined, unknown][] = [
    ["an insert meets a live item", { expected: 0 }, item(), { reason: "version", found: 3 }],
    ["an insert meets a live item with a text ttl", { expected: 0 }, item({ ttl: { S: "1" } }), {
      reason: "version",
      found: 3,
    }],
    ["an update meets another version", {}, item({ version: { N: "4" } }), {
      reason: "version",
      found: 4,
    }],
    ["an update meets no item", {}, undefined, { reason: "version", found: null }],
    ["an update meets an expired item: absent", {}, item({ ttl: { N: String(NOW - 1) } }), {
      reason: "version",
      found: null,
    }],
    [
      "a lost race wins over a stale ring end and watermarks",
      { head: { last: 4, cached: true }, outbox: { seqs: [5], fresh: false } },
      item({ version: { N: "9" }, trace_end: { N: "8" }, outbox_hwm: { N: "50" } }),
      { reason: "version", found: 9 },
    ],
    [
      "a stale ring end wins over watermarks",
      { head: { last: 4, cached: true }, outbox: { seqs: [5], fresh: false } },
      item({ trace_end: { N: "5" }, outbox_hwm: { N: "50" } }),
      { reason: "traceEnd" },
    ],
    [
      "an outbox watermark at the first seq",
      { outbox: { seqs: [5, 6], fresh: false }, spawns: { seqs: [7], fresh: false } },
      item({ outbox_hwm: { N: "5" }, spawn_hwm: { N: "6" } }),
      { reason: "watermark", outbox: true, spawns: false },
    ],
    [
      "both watermarks, one of them missing",
      { outbox: { seqs: [5], fresh: false }, spawns: { seqs: [7], fresh: false } },
      item({ outbox_hwm: { N: "9" } }),
      { reason: "watermark", outbox: true, spawns: true },
    ],
    [
      "an item no clause refuses (it changed in between): a lost race",
      { outbox: { seqs: [5], fresh: false } },
      item({ outbox_hwm: { N: "1" } }),
      { reason: "version", found: 3 },
    ],
  ];
  for (const [name, over, old, expected] of cases) {
    await t.step(name, () => {
      assert.deepEqual(refusalOf(commitClauses(input(over)), old, NOW), expected);
    });
  }
});

Deno.test("the commit's Update reads every alias it names, its condition built from the clauses", () => {
  const ctx: TxContext = {
    tables: executionTables("t"),
    traceMax: 5,
    processedTtl: null,
    finishedTtl: 3600,
    now: () => NOW * 1000,
  };
  fc.assert(
    fc.property(
      fc.constantFrom(0, 2),
      fc.constantFrom("RUNNING", "DONE") as fc.Arbitrary<"RUNNING" | "DONE">,
      fc.nat(2),
      fc.nat(1),
      fc.boolean(),
      fc.record({ fresh: fc.boolean(), cached: fc.boolean() }),
      fc.constantFrom("same", "changed", "unknown") as fc.Arbitrary<StatusMove>,
      (version, status, emits, spawns, traced, { fresh, cached }, move) => {
        const exe = newExecution({ definition_id: "d", status, version });
        const plan = planCommit(ctx, exe, {
          emits: Array.from({ length: emits }, () => ({ target: "t", event: newEvent("e") })),
          spawns: Array.from(
            { length: spawns },
            () => ({ childId: "c", rootPath: "r", context: {} }),
          ),
          ...(traced ? { trace: { step: 1 } } : {}),
        });
        const built = buildTransaction(ctx, plan, {
          outbox: { seqs: Array.from({ length: emits }, (_, i) => 10 + i), fresh },
          spawns: { seqs: Array.from({ length: spawns }, (_, i) => 20 + i), fresh },
          head: traced ? { last: 3, cached } : undefined,
          chains: version === 0 || emits > 0 ? {} : undefined,
          status: move,
        });
        const update = built.items[0]!.Update!;
        const text = `${update.UpdateExpression} ${update.ConditionExpression}`;
        assert.deepEqual(
          aliases(text, "#"),
          new Set(Object.keys(update.ExpressionAttributeNames!)),
        );
        assert.deepEqual(
          aliases(text, ":"),
          new Set(Object.keys(update.ExpressionAttributeValues!)),
        );
        assert.equal(update.ConditionExpression, conditionOf(built.clauses).expression);
        assert.deepEqual(
          built.clauses.map((c) => c.kind),
          commitClauses({
            expected: version,
            now: NOW,
            outbox: { seqs: plan.emits.map((_, i) => 10 + i), fresh },
            spawns: { seqs: plan.spawns.map((_, i) => 20 + i), fresh },
            head: traced ? { last: 3, cached } : undefined,
            statusKept: move === "unknown" ? plan.statusKey : undefined,
          }).map((c) => c.kind),
        );
      },
    ),
    { seed: 26, numRuns: 300 },
  );
});
