// One rule for reading a stored attribute value (src/core/_attributes.ts `plainAttribute`), which
// the state store's reads and an operator's raw view of a queue row share: pure, no DynamoDB.
import assert from "node:assert/strict";
import { plainAttribute, plainMap } from "../../src/core/_attributes.ts";

Deno.test("plainAttribute: a number reads as the nearest double, or exactly as stored when asked", () => {
  const big = { N: "12345678901234567890123" };
  assert.equal(plainAttribute(big), 1.2345678901234568e22);
  assert.equal(plainAttribute(big, true), "12345678901234567890123");
  assert.equal(plainAttribute({ N: "42" }, true), 42, "a number a double holds stays a number");
});

Deno.test("plainAttribute: maps keep every key as an own property, __proto__ included", () => {
  const value = plainAttribute({ M: { ["__proto__"]: { S: "x" }, a: { N: "1" } } }) as Record<
    string,
    unknown
  >;
  assert.ok(Object.hasOwn(value, "__proto__"));
  assert.equal(value["__proto__"], "x");
  assert.equal(Object.getPrototypeOf(value), Object.prototype, "no prototype was replaced");
});

Deno.test("plainAttribute: sets read as arrays, binary as base64, NULL as null", () => {
  assert.deepEqual(plainAttribute({ SS: ["a", "b"] }), ["a", "b"]);
  assert.deepEqual(plainAttribute({ NS: ["1", "2.5"] }), [1, 2.5]);
  assert.equal(plainAttribute({ B: new Uint8Array([1, 2, 3]) }), "AQID");
  assert.equal(plainAttribute({ NULL: true }), null);
  assert.deepEqual(plainAttribute({ L: [{ BOOL: false }, { S: "s" }] }), [false, "s"]);
});

Deno.test("plainMap: fills the target given (a null-prototype record stays one)", () => {
  const target = plainMap({ a: { N: "1" } }, Object.create(null) as Record<string, unknown>);
  assert.equal(Object.getPrototypeOf(target), null);
  assert.equal(target.a, 1);
});
