// What both conformance suites share: awaiting a refusal, and the cases of the one JSON rule
// (core/_json.ts) that commit's documents, set() and hset() all follow.
import assert from "node:assert/strict";
import type { ExecutionStore, ListOptions } from "../core/types.ts";

export async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new assert.AssertionError({ message: "expected a rejection" });
}

/** One JSON rule for both stores: what each writer stores of a value at `v`, or refuses. */
export interface JsonRuleCase {
  name: string;
  value: unknown;
  stored?: unknown;
  refused?: [typeof TypeError, RegExp];
}

/** The cases of the one JSON rule, fresh: commit's documents, set() and hset() agree on each. */
export function jsonRuleCases(): JsonRuleCase[] {
  class Money {
    amount = 5;
  }
  const cycle: Record<string, unknown> = { a: 1 };
  cycle.self = cycle;
  return [
    { name: "a class instance", value: new Money(), refused: [TypeError, /\.v is a Money/] },
    { name: "a Date", value: new Date(0), stored: "1970-01-01T00:00:00.000Z" },
    { name: "a toJSON()", value: { toJSON: () => ({ via: [1] }) }, stored: { via: [1] } },
    { name: "a Map in an array", value: [1, new Map()], refused: [TypeError, /\.v\[1\] is a Map/] },
    { name: "a cycle", value: cycle, refused: [TypeError, /\.v\.self refers back to itself/] },
  ];
}

/** Writes `value` at `v` and checks it reads back, or is refused and nothing is written. */
export async function checkJsonRule(
  { name, value, stored, refused }: JsonRuleCase,
  write: (value: { v: unknown }) => Promise<unknown>,
  read: () => Promise<unknown>,
): Promise<void> {
  if (refused === undefined) {
    await write({ v: value });
    assert.deepEqual(await read(), { v: stored }, name);
    return;
  }
  const error = await rejection(write({ v: value }));
  assert.ok(error instanceof refused[0] && refused[1].test(error.message), `${name}: ${error}`);
  assert.equal(await read(), null, `${name}: nothing is written`);
}

/** Every id a listing returns, page after page, and the pages' sizes. */
export async function walk(
  store: ExecutionStore,
  options: ListOptions,
): Promise<{ seen: string[]; sizes: number[] }> {
  const seen: string[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.listExecutions({ ...options, cursor });
    seen.push(...page.items.map((s) => s.id));
    sizes.push(page.items.length);
    cursor = page.nextCursor;
  } while (cursor);
  return { seen, sizes };
}

/** `{ d: { d: ... {} } }`, `levels` objects deep. */
export function nestedObject(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) value = { d: value };
  return value;
}

/** A value nested deeper than `levels`, refused naming the path. */
export function tooDeep(levels: number): RegExp {
  return new RegExp(`\\.d nests deeper than ${levels} levels`);
}
