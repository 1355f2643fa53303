// The largest a commit's transaction can get, counted without building it: every seq and trace
// index at its maximum, each queued row with room for what a relay records on it, the execution
// item as the whole item the Update leaves behind. Each item's size is a constant of its shape
// (measured once, on an item of that shape with empty strings) plus the UTF-8 length of the
// strings the commit brings. `tests/core/commit_size_test.ts` holds it equal to the size of the
// transaction built at those maximums.
import { type Item, N, S } from "../../core/_attributes.ts";
import {
  EXECUTION,
  FAILURE_PLACEHOLDER,
  OUTBOX,
  outboxItem,
  processedItem,
  SEQ_PLACEHOLDER,
  spawnItem,
  TIMER,
  timerKey,
  traceItem,
  traceKey,
} from "../../core/_layout.ts";
import {
  attributeSize,
  checkItemBytes,
  itemSize,
  LIMITS,
  utf8Length,
} from "../../core/_validate.ts";
import { CHAINS_PLACEHOLDER } from "./_outbox_chain.ts";
import { RELAY_PLACEHOLDER } from "../queue/_relay_index.ts";

/** What sizing a commit reads of its plan (`CommitPlan` in _transaction.ts). */
export interface SizedCommit {
  id: string;
  data: string;
  definitionId: string;
  statusKey: string;
  /** The commit's time, epoch seconds (a dedupe mark's `ttl` is counted from it). */
  now: number;
  emits: readonly { target: string | null; event: string }[];
  spawns: readonly { childId: string; rootPath: string; context: string }[];
  processedEventId?: string;
  timers: ReadonlyMap<string, number | null>;
  trace?: string;
}

/** What sizing a commit reads of its store (`TxContext` in _transaction.ts). */
export interface SizingContext {
  traceMax: number;
  processedTtl: number | null;
}

const MAX = Number.MAX_SAFE_INTEGER;

/**
 * An entry's `created_at` at its longest: `Date.now() / 1000`, a double, has at most 17
 * significant digits (the one part sized at a bound rather than its value: it is read later).
 */
const CREATED_AT_PLACEHOLDER = { N: "9".repeat(17) };

/** Room a queued row keeps for a relay's bookkeeping and its moves in the relay index. */
const RELAY_ROOM: Item = { ...FAILURE_PLACEHOLDER, ...RELAY_PLACEHOLDER };

/** The execution item with every attribute a commit can leave, its strings empty. */
const EXECUTION_BASE = itemSize({
  [EXECUTION.id]: S(""),
  [EXECUTION.data]: S(""),
  [EXECUTION.definitionId]: S(""),
  [EXECUTION.version]: SEQ_PLACEHOLDER,
  [EXECUTION.outboxHwm]: SEQ_PLACEHOLDER,
  [EXECUTION.spawnHwm]: SEQ_PLACEHOLDER,
  [EXECUTION.traceEnd]: SEQ_PLACEHOLDER,
  [EXECUTION.outboxLast]: CHAINS_PLACEHOLDER,
  [EXECUTION.ttl]: SEQ_PLACEHOLDER,
  [EXECUTION.statusShard]: S(""),
  [EXECUTION.statusAt]: SEQ_PLACEHOLDER,
  [EXECUTION.updatedAt]: SEQ_PLACEHOLDER,
});

/** An outbox entry linked to its predecessor, to a target `""` (a NULL target is 1 byte more). */
const OUTBOX_BASE = itemSize({
  ...outboxItem(MAX, "", "", { sourceId: "", prevSeq: MAX }),
  [OUTBOX.createdAt]: CREATED_AT_PLACEHOLDER,
  ...RELAY_ROOM,
});
const NULL_TARGET = attributeSize({ NULL: true });

const SPAWN_BASE = itemSize({
  ...spawnItem(MAX, "", { childId: "", rootPath: "", context: "" }),
  [OUTBOX.createdAt]: CREATED_AT_PLACEHOLDER,
  ...RELAY_ROOM,
});

/** A dedupe mark that never expires (one that does has a `ttl` too). */
const MARK_BASE = itemSize(processedItem("", "", null, 0));

/** A scheduled timer without its `fire_at` number. */
const TIMER_BASE = itemSize({ ...timerKey("", ""), ...RELAY_ROOM }) + utf8Length(TIMER.fireAt);
const TIMER_KEY = itemSize(timerKey("", ""));

/** The trace step itself, at the largest index a step gets (the largest head's next). */
const TRACE_PUT = itemSize(traceItem("", MAX - 1, ""));

/** The items of a commit by kind, in the order the transaction holds them. */
export interface CommitCount {
  total: number;
  emits: number;
  spawns: number;
  processed: number;
  timers: number;
  trace: number;
}

/** How many items a commit's transaction holds (a traced one at a ring past its start). */
export function commitCount(ctx: SizingContext, plan: SizedCommit): CommitCount {
  const count = {
    emits: plan.emits.length,
    spawns: plan.spawns.length,
    processed: plan.processedEventId === undefined ? 0 : 1,
    timers: plan.timers.size,
    // The step, the check of the previous one, the delete of the one falling out of the window
    // (traceMax 1: the previous one, deleted instead of checked; traceMax 0: none).
    trace: plan.trace === undefined ? 0 : ctx.traceMax > 1 ? 3 : 2,
  };
  return {
    total: 1 + count.emits + count.spawns + count.processed + count.timers + count.trace,
    ...count,
  };
}

/**
 * The size of each item of a commit's transaction at its largest, in the order of the
 * transaction (the execution's first): what DynamoDB would count, or a little more.
 */
export function commitItemSizes(ctx: SizingContext, plan: SizedCommit): number[] {
  const id = utf8Length(plan.id);
  const sizes = [
    EXECUTION_BASE + id + utf8Length(plan.data) + utf8Length(plan.definitionId) +
    utf8Length(plan.statusKey),
  ];
  for (const { target, event } of plan.emits) {
    sizes.push(
      OUTBOX_BASE + id + utf8Length(event) + (target === null ? NULL_TARGET : utf8Length(target)),
    );
  }
  for (const { childId, rootPath, context } of plan.spawns) {
    sizes.push(
      SPAWN_BASE + id + utf8Length(childId) + utf8Length(rootPath) + utf8Length(context),
    );
  }
  if (plan.processedEventId !== undefined) {
    const mark = ctx.processedTtl === null
      ? MARK_BASE
      : itemSize(processedItem("", "", ctx.processedTtl, plan.now));
    sizes.push(mark + id + utf8Length(plan.processedEventId));
  }
  for (const [path, fireAt] of plan.timers) {
    const key = id + utf8Length(path);
    sizes.push(
      fireAt === null ? TIMER_KEY + key : TIMER_BASE + key + attributeSize(N(fireAt)),
    );
  }
  if (plan.trace !== undefined) {
    const last = MAX - 2; // the largest head: the step goes at MAX - 1
    const keyOf = (idx: number) => itemSize(traceKey("", idx)) + id;
    sizes.push(TRACE_PUT + id + utf8Length(plan.trace));
    if (ctx.traceMax === 1) sizes.push(keyOf(last)); // the previous step, deleted
    else {
      sizes.push(keyOf(last)); // the previous step, checked
      if (ctx.traceMax > 0) sizes.push(keyOf(last + 1 - ctx.traceMax)); // the step dropped
    }
  }
  return sizes;
}

/**
 * Refuses a commit DynamoDB would: more items than a transaction holds, an item over 400 KB,
 * or more than 4 MB in all, each error naming the item or count and the limit. Sized at the
 * largest encoding each item can get (every seq and index at its maximum), so that no send can
 * fail on size.
 */
export function checkCommitLimits(ctx: SizingContext, plan: SizedCommit): void {
  const count = commitCount(ctx, plan);
  if (count.total > LIMITS.transactionItems) {
    throw new RangeError(
      `commit of execution ${JSON.stringify(plan.id)} needs ${count.total} transaction items ` +
        `(1 execution, ${count.emits} emits, ${count.spawns} spawns, ` +
        `${count.processed} dedupe mark, ${count.timers} timers, ${count.trace} trace); ` +
        `a DynamoDB transaction holds at most ${LIMITS.transactionItems}`,
    );
  }
  let total = 0;
  commitItemSizes(ctx, plan).forEach((size, i) => {
    total += checkItemBytes(i === 0 ? "exe" : `commit item ${i}`, size);
  });
  if (total > LIMITS.transactionBytes) {
    throw new RangeError(
      `commit of execution ${
        JSON.stringify(plan.id)
      } writes ${total} bytes; a DynamoDB transaction holds at most ${LIMITS.transactionBytes} bytes (4 MB)`,
    );
  }
}
