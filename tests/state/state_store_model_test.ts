// A model-based property test: random sequences of state-store calls, mixed with raw writes of
// what other writers leave in the table (a legacy JSON value in Python's dialect, the seed's
// lazy migration and its REMOVE of a field, a foreign native Map, an expired leftover), run
// against DynamoDB Local and MemoryStateStore and compared step by step.
//
// Fixed seed and 400 runs by default (7-20 s against DynamoDB Local here, by machine load).
// HAREL_PROPERTY_RUNS=5000 runs more; HAREL_PROPERTY_SEED=n picks another seed.
//
// Time: DynamoDB Local runs on the real clock, so every TTL is far ahead (10^6 s) or already
// past (an expired leftover, `expire(k, 0)`): no comparison depends on when a step runs, and
// `ttl()` is compared within 2 seconds.
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type AttributeValue,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { StateStore } from "../../mod.ts";
import { MemoryStateStore } from "../../src/testing.ts";
import {
  legacyFields,
  stateEntries,
  type StateEntry,
  toAttribute,
} from "../../src/state/_state_values.ts";
import { plainAttribute } from "../../src/core/_attributes.ts";
import { freshStateStore, testClient } from "../_support/env.ts";

const RUNS = Number(Deno.env.get("HAREL_PROPERTY_RUNS") ?? 400);
const SEED = Number(Deno.env.get("HAREL_PROPERTY_SEED") ?? 20261130);

const FIELDS = [
  "f",
  "g",
  "toString",
  "constructor",
  "__proto__",
  "hasOwnProperty",
  "a.b",
  "#x",
  ":y",
  "with space",
  "ü😀",
  "value",
  "hash",
  "ttl",
];
const field = fc.constantFrom(...FIELDS);
const keyIndex = fc.constantFrom(0, 1, 2);

/** Values both stores take. */
const storable: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.integer(),
    fc.constantFrom(2 ** 53 + 2, 2 ** 60, -(2 ** 70), 1e21, 1e-100, 9.99e125, 0.1, -0, 1e-130),
    fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e20, max: 1e20 }),
    fc.constantFrom("", "text", "NaN", "Infinity", "ü😀", '{"a":1}'),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(field, tie("value"), { maxKeys: 3 }),
  ),
})).value;

/** A value made fresh for each store (a Map is not shared), printed as its source. */
function maker(label: string, make: () => unknown): () => unknown {
  return Object.assign(make, { [fc.toStringMethod]: () => label });
}

/** Values the stores must refuse (in both, with the same error class). */
const refused = fc.constantFrom(
  maker("NaN", () => NaN),
  maker("Infinity", () => Infinity),
  maker("new Map()", () => new Map([["a", 1]])),
  maker("new Set()", () => new Set([1])),
  maker("10n", () => 10n),
  maker("a function", () => () => 1),
  maker("1e300", () => 1e300),
  maker("5e-324", () => 5e-324),
  maker("undefined", () => undefined),
  maker("{ nested: new Set() }", () => ({ nested: new Set() })),
);
const value = fc.oneof(
  { weight: 6, arbitrary: storable.map((v) => maker(fc.stringify(v), () => structuredClone(v))) },
  { weight: 1, arbitrary: refused },
);

/** Legacy hash fields as a Python writer leaves them: NaN among them. */
const legacyObject = fc.dictionary(
  field,
  fc.oneof({ weight: 5, arbitrary: storable.filter(storableEverywhere) }, {
    weight: 1,
    arbitrary: fc.constant("__NaN__"),
  }),
  { maxKeys: 4 },
);

/** A value whose numbers every store can carry natively (what a seed could migrate). */
function storableEverywhere(v: unknown): boolean {
  if (typeof v === "number") return v === 0 || (Math.abs(v) >= 1e-130 && Math.abs(v) < 1e126);
  if (typeof v === "object" && v !== null) return Object.values(v).every(storableEverywhere);
  return true;
}

type Op =
  | { op: "set"; key: number; value: () => unknown; ttl: "none" | "null" | "far" | "huge" }
  | { op: "get" | "delete" | "exists" | "ttl" | "hgetall"; key: number }
  | { op: "keys" }
  | { op: "expire"; key: number; seconds: number }
  | { op: "hget"; key: number; field: string }
  | { op: "hset"; key: number; field: string; value: () => unknown }
  | { op: "hdel"; key: number; fields: string[] }
  | { op: "legacy"; key: number; fields: Record<string, unknown>; ttl: "none" | "past" }
  | { op: "seedMigration"; key: number }
  | { op: "seedRemove"; key: number; field: string }
  | { op: "foreignMap"; key: number; fields: Record<string, unknown>; bigId: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant("set" as const),
    key: keyIndex,
    value,
    ttl: fc.constantFrom("none" as const, "null" as const, "far" as const, "huge" as const),
  }),
  fc.record({
    op: fc.constantFrom(
      "get" as const,
      "delete" as const,
      "exists" as const,
      "ttl" as const,
      "hgetall" as const,
    ),
    key: keyIndex,
  }),
  fc.record({ op: fc.constant("keys" as const) }),
  fc.record({
    op: fc.constant("expire" as const),
    key: keyIndex,
    seconds: fc.constantFrom(0, -5, 1e6, 1e300),
  }),
  fc.record({ op: fc.constant("hget" as const), key: keyIndex, field }),
  fc.record({ op: fc.constant("hset" as const), key: keyIndex, field, value }),
  fc.record({ op: fc.constant("hset" as const), key: keyIndex, field, value }),
  fc.record({
    op: fc.constant("hdel" as const),
    key: keyIndex,
    fields: fc.array(field, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({
    op: fc.constant("legacy" as const),
    key: keyIndex,
    fields: legacyObject,
    ttl: fc.constantFrom("none" as const, "none" as const, "past" as const),
  }),
  fc.record({ op: fc.constant("seedMigration" as const), key: keyIndex }),
  fc.record({ op: fc.constant("seedRemove" as const), key: keyIndex, field }),
  fc.record({
    op: fc.constant("foreignMap" as const),
    key: keyIndex,
    fields: fc.dictionary(field, storable.filter(storableEverywhere), { maxKeys: 3 }),
    bigId: fc.boolean(),
  }),
);

type Outcome = { ok: unknown } | { error: string };

async function outcome(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: await run() };
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) return { error: error.name };
    throw error;
  }
}

/** One store call; hgetall's result checked for its missing prototype, then made plain. */
async function call(store: StateStore, op: Op, key: (i: number) => string, prefix: string) {
  switch (op.op) {
    case "set": {
      const options = op.ttl === "none"
        ? undefined
        : op.ttl === "null"
        ? null
        : { ttl: op.ttl === "far" ? 1e6 : 1e300 };
      return await store.set(key(op.key), op.value(), options);
    }
    case "get":
      return await store.get(key(op.key));
    case "delete":
      return await store.delete(key(op.key));
    case "exists":
      return await store.exists(key(op.key));
    case "ttl":
      return await store.ttl(key(op.key));
    case "keys":
      return (await store.keys(`${prefix}*`)).sort();
    case "expire":
      return await store.expire(key(op.key), op.seconds);
    case "hget":
      return await store.hget(key(op.key), op.field);
    case "hset":
      return await store.hset(key(op.key), op.field, op.value());
    case "hdel":
      return await store.hdel(key(op.key), ...op.fields);
    case "hgetall": {
      const all = await store.hgetall(key(op.key));
      assert.equal(Object.getPrototypeOf(all), null, "hgetall() inherits nothing");
      return { ...all };
    }
    default:
      throw new Error(`not a store call: ${op.op}`);
  }
}

const mapOf = (fields: Record<string, unknown>): Record<string, AttributeValue> =>
  toAttribute(fields).M!;

/** Plays another writer: the same raw write on the table and on the twin's entries. */
async function rawWrite(
  client: DynamoDBClient,
  table: string,
  entries: Map<string, StateEntry>,
  op: Op,
  pk: string,
): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  switch (op.op) {
    case "legacy": {
      const text = JSON.stringify(op.fields).replaceAll('"__NaN__"', "NaN");
      const item: Record<string, AttributeValue> = { pk: { S: pk }, value: { S: text } };
      const entry: StateEntry = { value: text };
      if (op.ttl === "past") {
        item.ttl = { N: String(now - 100) };
        entry.ttl = now - 100;
      }
      await client.send(new PutItemCommand({ TableName: table, Item: item }));
      entries.set(pk, entry);
      return;
    }
    case "seedMigration": {
      // The seed copies a legacy hash into a Map once and leaves `value` in place.
      const entry = entries.get(pk);
      const legacy = entry?.value === undefined ? undefined : legacyFields(entry.value);
      if (!entry || !legacy || entry.hash) return;
      await client.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { pk: { S: pk } },
          UpdateExpression: "SET #h = if_not_exists(#h, :seed)",
          ConditionExpression: "attribute_exists(#v)",
          ExpressionAttributeNames: { "#h": "hash", "#v": "value" },
          ExpressionAttributeValues: { ":seed": { M: mapOf(legacy) } },
        }),
      );
      entry.hash = new Map(Object.entries(legacy).map(([k, v]) => [k, JSON.stringify(v)]));
      return;
    }
    case "seedRemove": {
      const entry = entries.get(pk);
      if (!entry?.hash) return;
      await client.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { pk: { S: pk } },
          UpdateExpression: "REMOVE #h.#f",
          ConditionExpression: "attribute_type(#h, :m)",
          ExpressionAttributeNames: { "#h": "hash", "#f": op.field },
          ExpressionAttributeValues: { ":m": { S: "M" } },
        }),
      );
      entry.hash.delete(op.field);
      return;
    }
    case "foreignMap": {
      const map = mapOf(op.fields);
      if (op.bigId) {
        map["id"] = { N: "12345678901234567890" };
        map["big"] = { N: "123456789012345678901.5" };
      }
      await client.send(
        new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, hash: { M: map } } }),
      );
      entries.set(
        pk,
        {
          hash: new Map(
            Object.entries(map).map(([k, v]) => [k, JSON.stringify(plainAttribute(v))]),
          ),
        },
      );
      return;
    }
  }
}

function same(op: Op, real: Outcome, model: Outcome, step: string): void {
  if (op.op === "ttl" && "ok" in real && "ok" in model && typeof real.ok === "number") {
    assert.equal(typeof model.ok, "number", step);
    assert.ok(Math.abs(real.ok - (model.ok as number)) <= 2, `${step}: ttl ${real.ok}`);
    return;
  }
  assert.deepEqual(real, model, step);
}

Deno.test("DynamoDBStateStore and MemoryStateStore agree step by step, other writers included", async () => {
  await using state = await freshStateStore();
  using client = testClient();
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
      const prefix = `r${run++}:`;
      const key = (i: number) => `${prefix}k${i}`;
      const twin = new MemoryStateStore();
      const entries = stateEntries.get(twin)!;
      for (const [i, op] of ops.entries()) {
        if (
          "key" in op && ["legacy", "seedMigration", "seedRemove", "foreignMap"].includes(op.op)
        ) {
          await rawWrite(client, state.tableName, entries, op, key(op.key));
          continue;
        }
        const real = await outcome(() => call(state, op, key, prefix));
        const model = await outcome(() => call(twin, op, key, prefix));
        same(op, real, model, `step ${i} of ${fc.stringify(ops)}`);
      }
      // Every key reads the same at the end, whatever the last call was.
      for (const i of [0, 1, 2]) {
        for (const name of ["get", "exists", "ttl", "hgetall"] as const) {
          const op = { op: name, key: i };
          same(
            op,
            await outcome(() => call(state, op, key, prefix)),
            await outcome(() => call(twin, op, key, prefix)),
            `final ${name} k${i} after ${fc.stringify(ops)}`,
          );
        }
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: RUNS > 100 },
  );
});
