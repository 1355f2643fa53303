// A commit's size limits counted without building it: the sizes `_commit_size.ts` counts
// are those of the transaction built at its largest (every seq and trace index at its maximum,
// every queued row with room for a relay's bookkeeping, the execution item as the whole item the
// Update leaves), and the limits refuse at exactly the same byte. No DynamoDB, no permissions.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import {
  buildTransaction,
  type CommitPlan,
  planCommit,
  type TxContext,
} from "../../src/execution/commit/_transaction.ts";
import {
  checkCommitLimits,
  commitCount,
  commitItemSizes,
} from "../../src/execution/commit/_commit_size.ts";
import { EXECUTION, FAILURE_PLACEHOLDER, OUTBOX, SEQ_PLACEHOLDER } from "../../src/core/_layout.ts";
import { itemSize, LIMITS } from "../../src/core/_validate.ts";
import { RELAY_PLACEHOLDER } from "../../src/execution/queue/_relay_index.ts";
import { CHAINS_PLACEHOLDER, targetKey } from "../../src/execution/commit/_outbox_chain.ts";
import { executionTables } from "../../src/core/table_specs.ts";
import { type CommitChanges, newEvent, newExecution, STATUSES } from "../../src/testing.ts";

type Item = Record<string, import("@aws-sdk/client-dynamodb").AttributeValue>;

const MAX = Number.MAX_SAFE_INTEGER;

/** `created_at` at its longest (a double's 17 significant digits): what the count assumes. */
const LONGEST_CREATED_AT = { N: "9".repeat(17) };

/**
 * The sizes of the transaction built at its largest, item by item, as the check before counted them
 * measured them (it built this transaction a second time on every commit).
 */
function builtSizes(ctx: TxContext, plan: CommitPlan, createdAt?: "longest"): number[] {
  const { items, roles } = buildTransaction(ctx, plan, {
    outbox: { seqs: plan.emits.map(() => MAX), fresh: false },
    spawns: { seqs: plan.spawns.map(() => MAX), fresh: false },
    head: plan.trace === undefined ? undefined : { last: MAX - 2 },
    chains: Object.fromEntries(plan.emits.map((emit) => [targetKey(emit.target), MAX])),
    status: "changed",
  });
  const executionItem: Item = {
    [EXECUTION.data]: { S: plan.data },
    [EXECUTION.definitionId]: { S: plan.definitionId },
    [EXECUTION.version]: { N: String(MAX) },
    [EXECUTION.outboxHwm]: SEQ_PLACEHOLDER,
    [EXECUTION.spawnHwm]: SEQ_PLACEHOLDER,
    [EXECUTION.traceEnd]: SEQ_PLACEHOLDER,
    [EXECUTION.outboxLast]: CHAINS_PLACEHOLDER,
    [EXECUTION.ttl]: SEQ_PLACEHOLDER,
    [EXECUTION.statusShard]: { S: plan.statusKey },
    [EXECUTION.statusAt]: SEQ_PLACEHOLDER,
    [EXECUTION.updatedAt]: SEQ_PLACEHOLDER,
  };
  return items.map((item: TransactWriteItem, i) => {
    const body: Item = {
      ...(item.Put?.Item ?? item.Update?.Key ?? item.Delete?.Key ?? item.ConditionCheck?.Key),
    };
    if (createdAt === "longest" && body[OUTBOX.createdAt]) {
      body[OUTBOX.createdAt] = LONGEST_CREATED_AT;
    }
    const queued = item.Put && ["outbox", "spawn", "timer"].includes(roles[i]!);
    const extra = item.Update
      ? executionItem
      : queued
      ? { ...FAILURE_PLACEHOLDER, ...RELAY_PLACEHOLDER }
      : {};
    return itemSize({ ...body, ...extra });
  });
}

const context = (over: Partial<TxContext> = {}): TxContext => ({
  tables: executionTables("harel"),
  traceMax: 200,
  processedTtl: null,
  finishedTtl: null,
  now: () => 1_800_000_000_123,
  ...over,
});

const text = fc.oneof(
  fc.string({ unit: "binary-ascii", minLength: 1, maxLength: 30 }),
  fc.string({ unit: "binary", minLength: 1, maxLength: 30 }),
);

/** Any commit of a size DynamoDB takes: its store's options and its changes. */
const anyCommit = fc.record({
  ctx: fc.record({
    traceMax: fc.constantFrom(0, 1, 2, 200, 1_000_000),
    processedTtl: fc.constantFrom(null, 1, 86_400, 315_360_000),
    finishedTtl: fc.constantFrom(null, 3600),
  }),
  id: text,
  definitionId: text,
  status: fc.constantFrom(...STATUSES),
  version: fc.constantFrom(0, 1, 99, 2 ** 40),
  context: fc.dictionary(text, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  emits: fc.array(
    fc.record({ target: fc.option(text, { nil: null }), data: fc.dictionary(text, text) }),
    { maxLength: 4 },
  ),
  spawns: fc.array(
    fc.record({ childId: text, rootPath: fc.string(), context: fc.dictionary(text, text) }),
    {
      maxLength: 3,
    },
  ),
  processedEventId: fc.option(text, { nil: undefined }),
  timers: fc.array(
    fc.record({
      path: text,
      fireAt: fc.option(
        fc.oneof(fc.constantFrom(0, 1.5, 2e9), fc.double({ min: 1e-6, max: 2.5e11, noNaN: true })),
        {
          nil: null,
        },
      ),
    }),
    { maxLength: 4 },
  ),
  trace: fc.option(fc.dictionary(text, text), { nil: undefined }),
});

function plan(given: typeof anyCommit extends fc.Arbitrary<infer T> ? T : never) {
  const ctx = context(given.ctx);
  const exe = newExecution({
    id: given.id,
    definition_id: given.definitionId,
    status: given.status,
    version: given.version,
    context: given.context as Record<string, unknown>,
  });
  const changes: CommitChanges = {
    emits: given.emits.map(({ target, data }) => ({ target, event: newEvent("e", data) })),
    spawns: given.spawns,
    timers: given.timers.map(({ path, fireAt }) =>
      fireAt === null ? { action: "cancel", path } : { action: "schedule", path, fireAt }
    ),
    ...(given.processedEventId === undefined ? {} : { processedEventId: given.processedEventId }),
    ...(given.trace === undefined ? {} : { trace: given.trace }),
  };
  return { ctx, plan: planCommit(ctx, exe, changes) };
}

Deno.test("the counted size of every item is the size of the transaction built at its largest", () => {
  fc.assert(
    fc.property(anyCommit, (given) => {
      const { ctx, plan: p } = plan(given);
      const counted = commitItemSizes(ctx, p);
      assert.deepEqual(counted, builtSizes(ctx, p, "longest"));
      assert.equal(commitCount(ctx, p).total, counted.length);
      // With the entries' actual creation time, never more than the count (at most the digits
      // the time has fewer than a double can have).
      builtSizes(ctx, p).forEach((size, i) => {
        assert.ok(size <= counted[i]! && counted[i]! - size <= 10, `item ${i}`);
      });
    }),
    { seed: 26, numRuns: 400 },
  );
});

/** A commit whose execution item is `extra` bytes from the 400 KB limit, and its plan. */
function executionAt(extra: number) {
  const ctx = context();
  const exe = newExecution({ id: "e", definition_id: "d", context: { blob: "" } });
  const base = commitItemSizes(ctx, planCommit(ctx, exe, {}))[0]!;
  exe.context = { blob: "x".repeat(LIMITS.itemBytes - base + extra) };
  return { ctx, exe };
}

Deno.test("an execution of exactly 400 KB at its largest is taken, a byte more is refused, naming it", () => {
  const { ctx, exe } = executionAt(0);
  const p = planCommit(ctx, exe, {});
  assert.equal(commitItemSizes(ctx, p)[0], LIMITS.itemBytes);
  assert.equal(builtSizes(ctx, p, "longest")[0], LIMITS.itemBytes);
  const over = executionAt(1);
  assert.throws(
    () => planCommit(over.ctx, over.exe, {}),
    (error) =>
      error instanceof RangeError &&
      /^exe would be a 409601-byte item; DynamoDB items hold at most 409600 bytes \(400 KB\)$/
        .test(error.message),
  );
});

Deno.test("an outbox entry of exactly 400 KB at its largest is taken, a byte more is refused, naming it", () => {
  const ctx = context();
  const exe = newExecution({ id: "e", definition_id: "d" });
  const emit = (blob: string) => ({
    target: "t",
    event: { ...newEvent("e"), id: "i", data: { blob } },
  });
  const base = commitItemSizes(ctx, planCommit(ctx, exe, { emits: [emit("")] }))[1]!;
  const fits = emit("x".repeat(LIMITS.itemBytes - base));
  const p = planCommit(ctx, exe, { emits: [fits] });
  assert.equal(commitItemSizes(ctx, p)[1], LIMITS.itemBytes);
  assert.equal(builtSizes(ctx, p, "longest")[1], LIMITS.itemBytes);
  assert.throws(
    () => planCommit(ctx, exe, { emits: [emit("x".repeat(LIMITS.itemBytes - base + 1))] }),
    /^RangeError: commit item 1 would be a 409601-byte item; DynamoDB items hold at most 409600 bytes \(400 KB\)$/,
  );
});

Deno.test("a commit of exactly 4 MB at its largest is taken, a byte more is refused, naming the limit", () => {
  const ctx = context();
  const exe = newExecution({ id: "e", definition_id: "d" });
  const emit = (blob: string) => ({
    target: null,
    event: { ...newEvent("e"), id: "i", data: { blob } },
  });
  // Ten entries of 400 KB, and an eleventh that takes the commit to exactly 4 MB.
  const full = (size: number) => emit("x".repeat(size));
  const base = commitItemSizes(ctx, planCommit(ctx, exe, { emits: [full(0)] }))[1]!;
  const ten = Array.from({ length: 10 }, () => full(LIMITS.itemBytes - base));
  const sum = (sizes: number[]) => sizes.reduce((a, b) => a + b, 0);
  const withLast = (size: number) => planCommit(ctx, exe, { emits: [...ten, full(size)] });
  const room = LIMITS.transactionBytes - sum(commitItemSizes(ctx, withLast(0)));
  const p = withLast(room);
  assert.equal(sum(commitItemSizes(ctx, p)), LIMITS.transactionBytes);
  assert.equal(sum(builtSizes(ctx, p, "longest")), LIMITS.transactionBytes);
  assert.throws(
    () => withLast(room + 1),
    /^RangeError: commit of execution "e" writes 4194305 bytes; a DynamoDB transaction holds at most 4194304 bytes \(4 MB\)$/,
  );
});

Deno.test("a commit of exactly 100 items is taken, 101 are refused, counted by kind", async (t) => {
  const emits = (n: number) =>
    Array.from({ length: n }, () => ({ target: null, event: newEvent("e") }));
  const exe = newExecution({ id: "e", definition_id: "d" });
  // The trace step takes 3 items (2 with traceMax 0 or 1): the ring's next, previous and dropped.
  for (const [traceMax, traceItems] of [[200, 3], [1, 2], [0, 2]] as const) {
    await t.step(`traceMax ${traceMax}`, () => {
      const ctx = context({ traceMax });
      const room = 100 - 1 - 1 - 1 - traceItems; // execution, dedupe mark, timer, trace
      const changes = (n: number): CommitChanges => ({
        emits: emits(n),
        processedEventId: "p",
        timers: [{ action: "cancel", path: "x" }],
        trace: { s: 1 },
      });
      const p = planCommit(ctx, exe, changes(room));
      assert.equal(commitCount(ctx, p).total, 100);
      assert.equal(builtSizes(ctx, p).length, 100);
      assert.throws(
        () => planCommit(ctx, exe, changes(room + 1)),
        new RegExp(
          `needs 101 transaction items \\(1 execution, ${
            room + 1
          } emits, 0 spawns, 1 dedupe mark, ` +
            `1 timers, ${traceItems} trace\\); a DynamoDB transaction holds at most 100`,
        ),
      );
    });
  }
});

Deno.test("checkCommitLimits() refuses in the order the limits were always checked: count, item, total", () => {
  const ctx = context();
  const exe = newExecution({ id: "e", definition_id: "d", context: { blob: "x".repeat(410_000) } });
  const p = planCommit(ctx, newExecution({ id: "e", definition_id: "d" }), {});
  const big = { ...p, data: JSON.stringify(exe) };
  assert.throws(() => checkCommitLimits(ctx, big), /^RangeError: exe would be/);
  const many = {
    ...big,
    emits: Array.from({ length: 100 }, () => ({ target: null, event: "{}" })),
  };
  assert.throws(() => checkCommitLimits(ctx, many), /needs 101 transaction items/);
});
