/**
 * Type-level tests of the documents' generics: `deno check tests/` fails when a payload type
 * stops flowing (each `Equal` below must be `true`), and the run checks the same values.
 */
import assert from "node:assert/strict";
import { type Event, type Execution, newEvent, newExecution } from "../../src/testing.ts";

/** `true` only when A and B are the same type (not merely assignable). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
/** Compiles only for `true`. */
function expectType<T extends true>(_proof: T): void {}

Deno.test("newExecution() types the context from what it was given", () => {
  const exe = newExecution({ definition_id: "x", context: { total: 42 } });
  expectType<Equal<typeof exe.context.total, number>>(true);
  expectType<Equal<typeof exe, Execution<{ total: number }>>>(true);
  assert.equal(exe.context.total, 42);
});

Deno.test("newEvent() types the payload from what it was given", () => {
  const paid = newEvent("paid", { amount: 3 });
  expectType<Equal<typeof paid.data.amount, number>>(true);
  expectType<Equal<typeof paid, Event<{ amount: number }>>>(true);
  assert.equal(paid.data.amount, 3);
});

Deno.test("the defaults keep untyped code compiling as before", () => {
  const exe = newExecution({ definition_id: "x" });
  expectType<Equal<typeof exe, Execution>>(true);
  expectType<Equal<typeof exe.context, Record<string, unknown>>>(true);
  const event = newEvent("ping");
  expectType<Equal<typeof event, Event>>(true);
  expectType<Equal<typeof event.data, Record<string, unknown>>>(true);
  // A typed document still goes wherever a plain one does (stores take `Execution`).
  const typed: Execution = newExecution({ definition_id: "x", context: { total: 1 } });
  const plain: Event = newEvent("paid", { amount: 3 });
  exe.deferred.push(plain);
  assert.equal(typed.context.total, 1);
});

Deno.test("newExecution() still checks the known fields", () => {
  // @ts-expect-error: "BOGUS" is not a Status
  const bad = newExecution({ definition_id: "x", status: "BOGUS" });
  // @ts-expect-error: definition_id is required
  newExecution({ context: {} });
  assert.equal(bad.status, "BOGUS");
});
