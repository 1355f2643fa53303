// Type-level checks of the state store's typed reads: `deno check` (and `deno test`, which
// type-checks first) fails if a read's type stops flowing the way Deno KV's `get<T>()` does.
import assert from "node:assert/strict";
import type { DynamoDBStateStore, StateStore } from "../../mod.ts";
import { MemoryStateStore } from "../../src/testing.ts";

/** `true` exactly when A and B are the same type. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
/** Compiles only when its type argument is `true`. */
function assertType<T extends true>(_: T): void {}

Deno.test("get<T>(), hget<T>() and hgetall<T>() type what they return; unknown by default", async () => {
  const state: StateStore = new MemoryStateStore();
  await state.set("user", { name: "ada", visits: 3 });
  await state.hset("session", "step", 2);

  const user = await state.get<{ name: string; visits: number }>("user");
  assertType<Equals<typeof user, { name: string; visits: number } | null>>(true);
  assert.equal(user?.name, "ada");

  const step = await state.hget<number>("session", "step");
  assertType<Equals<typeof step, number | null>>(true);
  assert.equal(step, 2);

  const fields = await state.hgetall<number>("session");
  assertType<Equals<typeof fields, Record<string, number>>>(true);
  assert.equal(fields.step, 2);

  // Without a type argument, reads stay `unknown`, as before.
  const plain = await state.get("user");
  assertType<Equals<typeof plain, unknown>>(true);
  const all = await state.hgetall("session");
  assertType<Equals<typeof all, Record<string, unknown>>>(true);

  // Both backends carry the same generic signatures.
  assertType<Equals<DynamoDBStateStore["get"], StateStore["get"]>>(true);
  assertType<Equals<MemoryStateStore["hget"], StateStore["hget"]>>(true);
  assertType<Equals<DynamoDBStateStore["hgetall"], MemoryStateStore["hgetall"]>>(true);

  // @ts-expect-error a number field is not a string
  const wrong: string | null = await state.hget<number>("session", "step");
  assert.equal(wrong, 2);
});
