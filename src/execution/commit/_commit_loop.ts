/**
 * The send loop of `DynamoDBStore.commit`: one `TransactWriteItems` per attempt, re-sent with
 * the same token while its answer is lost, rebuilt after a conflict, and each cancellation told
 * apart (lost race, stale trace end, taken seqs, transaction conflict).
 *
 * @module
 */
import type { CancellationReason, TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { backoffDelay, sleep } from "../../core/_backoff.ts";
import type { SeqBlocks } from "./_seq_blocks.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import { isNamed } from "../../dynamo/_dynamo.ts";
import type { Execution } from "../../core/documents.ts";
import {
  type CancelledItem,
  CommitCancelled,
  CommitOutcomeUnknown,
  StoreConflict,
} from "../../core/errors.ts";
import { countCommitSend } from "../../core/_telemetry.ts";
import { sendTransaction } from "../../dynamo/_lost_answers.ts";
import type { TraceRing } from "./_trace_ring.ts";
import {
  buildTransaction,
  type CommitPlan,
  type Placement,
  planCommit,
  type TxContext,
} from "./_transaction.ts";
import { refusalOf } from "./_commit_condition.ts";
import type { CommitChanges, CommitResult } from "../../core/types.ts";
import { type ChainCache, type Chains, chainsFromItem } from "./_outbox_chain.ts";
import type { Item } from "../../core/_attributes.ts";
import { EXECUTION } from "../../core/_layout.ts";
import type { StatusCache } from "../listing/_status_index.ts";

/** What a commit needs of its store. */
export interface CommitContext {
  readonly client: DynamoDBSender;
  readonly tx: TxContext;
  readonly ring: TraceRing;
  readonly outboxSeqs: SeqBlocks;
  readonly spawnSeqs: SeqBlocks;
  readonly conflictRetries: number;
  readonly ambiguousRetries: number;
  /** The store's own `load`: what a commit out of conflict retries reads the version with. */
  readonly load: (id: string) => Promise<Execution | null>;
  /** The outbox chains this store knows, by execution and version. */
  readonly chains: ChainCache;
  /** The status index partitions this store knows, by execution and version. */
  readonly statuses: StatusCache;
  /** Reads an execution item's version and chains (a commit from a version it does not know). */
  readonly readChains: (id: string) => Promise<Item | undefined>;
}

/** The waits between re-sends of a commit DynamoDB cancelled for a transaction conflict. */
const COMMIT_CONFLICT_BACKOFF = { minDelayMs: 20, maxDelayMs: 1000 };

/**
 * Plans and sends one commit: takes its seqs and the ring's end, then sends the transaction
 * until it goes through, re-sending (same token) when its answer was lost and building it again
 * after a transaction conflict, a stale trace end or seqs another writer took.
 */
export async function runCommit(
  ctx: CommitContext,
  exe: Execution,
  changes: CommitChanges,
): Promise<CommitResult> {
  const plan = planCommit(ctx.tx, exe, changes);
  const at = placeNow(ctx, plan) ?? await place(ctx, plan);
  // The next seq blocks, once these are half used, reserved beside this commit's transaction.
  const ahead = [
    plan.emits.length > 0 ? ctx.outboxSeqs.ahead() : null,
    plan.spawns.length > 0 ? ctx.spawnSeqs.ahead() : null,
  ];
  try {
    return await sendPlaced(ctx, exe, plan, at);
  } finally {
    for (const reserving of ahead) if (reserving !== null) await reserving;
  }
}

/** Sends a placed commit until it goes through (see {@linkcode runCommit}). */
async function sendPlaced(
  ctx: CommitContext,
  exe: Execution,
  plan: CommitPlan,
  at: Placement,
): Promise<CommitResult> {
  let conflicts = 0; // transaction conflicts and stale trace ends, retried up to a bound
  for (;;) {
    const { items, roles, clauses, chains: after } = buildTransaction(ctx.tx, plan, at);
    const reasons = await send(ctx, items, plan);
    if (reasons === null) return committed(ctx, exe, plan, at, after);
    const cancelled = (why: CancelledItem[] = []) =>
      new CommitCancelled(plan.id, [
        ...reasons.map((r, i) => ({
          role: roles[i]!,
          code: r.Code ?? "None",
          message: r.Message,
        })),
        ...why,
      ]);

    const execution = reasons[0];
    if (execution?.Code === "ConditionalCheckFailed") {
      const refusal = refusalOf(clauses, execution.Item, plan.now);
      if (refusal.reason === "version") {
        throw new StoreConflict(plan.id, plan.expected, refusal.found);
      }
      if (refusal.reason === "status") {
        at.status = "changed"; // the stored status is another: the entry moves, at this time
        continue;
      }
      if (refusal.reason === "traceEnd") {
        if (conflicts++ >= ctx.conflictRetries) {
          throw cancelled([{
            role: "trace",
            code: "RingKeptMoving",
            message: `steps kept being appended outside commits (${ctx.conflictRetries} retries)`,
          }]);
        }
        at.head = await ctx.ring.reread(plan.id);
        continue;
      }
      if (refusal.outbox) {
        at.outbox = { seqs: await ctx.outboxSeqs.fresh(plan.emits.length), fresh: true };
      }
      if (refusal.spawns) {
        at.spawns = { seqs: await ctx.spawnSeqs.fresh(plan.spawns.length), fresh: true };
      }
      continue;
    }

    const traceMoved = reasons.some((r, i) =>
      roles[i] === "trace" && r.Code === "ConditionalCheckFailed"
    );
    if (traceMoved && conflicts++ < ctx.conflictRetries) {
      // Another writer appended (or trimmed) steps outside a commit since we cached where
      // the ring ends: read it again.
      at.head = await ctx.ring.reread(plan.id);
      continue;
    }
    const conflict = reasons.some((r) => r.Code === "TransactionConflict");
    if (conflict && conflicts < ctx.conflictRetries) {
      await sleep(backoffDelay(conflicts++, COMMIT_CONFLICT_BACKOFF));
      continue;
    }
    if (conflict) {
      // Out of retries: if the version moved on, this commit lost the race.
      const found = (await ctx.load(plan.id))?.version ?? null;
      if (found !== plan.expected) throw new StoreConflict(plan.id, plan.expected, found);
    }
    throw cancelled();
  }
}

/** Where a commit's entries go: seqs, the ring's end and chains, taken or read as needed. */
async function place(ctx: CommitContext, plan: CommitPlan): Promise<Placement> {
  const [outbox, spawns, head, chains] = await Promise.all([
    ctx.outboxSeqs.take(plan.emits.length),
    ctx.spawnSeqs.take(plan.spawns.length),
    plan.trace === undefined ? undefined : ctx.ring.head(plan.id, plan.expected),
    chainsFor(ctx, plan),
  ]);
  return {
    outbox: { seqs: outbox, fresh: false },
    spawns: { seqs: spawns, fresh: false },
    head,
    chains,
    status: ctx.statuses.moveOf(plan.id, plan.expected, plan.statusKey),
  };
}

/**
 * The same placement when it needs no call and no wait (a commit without spawns whose seqs are
 * in hand and whose chains and ring's end this store knows: the steady state), else null.
 */
function placeNow(ctx: CommitContext, plan: CommitPlan): Placement | null {
  if (plan.spawns.length > 0) return null;
  const head = plan.trace === undefined ? undefined : ctx.ring.headNow(plan.id, plan.expected);
  if (plan.trace !== undefined && head === undefined) return null;
  const chains = plan.expected === 0
    ? {}
    : plan.emits.length === 0
    ? undefined
    : ctx.chains.at(plan.id, plan.expected);
  if (chains === undefined && plan.expected !== 0 && plan.emits.length > 0) return null;
  const outbox = ctx.outboxSeqs.takeNow(plan.emits.length);
  if (outbox === null) return null;
  return {
    outbox: { seqs: outbox, fresh: false },
    spawns: { seqs: [], fresh: false },
    head,
    chains,
    status: ctx.statuses.moveOf(plan.id, plan.expected, plan.statusKey),
  };
}

/**
 * The outbox chains a commit starts from: none to write for a commit without emits (an insert
 * starts them empty), else those this store knows at the expected version, else read — one
 * GetItem, which also tells a lost race before anything is sent.
 */
async function chainsFor(ctx: CommitContext, plan: CommitPlan): Promise<Chains | undefined> {
  if (plan.expected === 0) return {};
  if (plan.emits.length === 0) return undefined;
  const known = ctx.chains.at(plan.id, plan.expected);
  if (known !== undefined) return known;
  const item = await ctx.readChains(plan.id);
  const found = item?.[EXECUTION.version]?.N;
  if (found === undefined || Number(found) !== plan.expected) {
    throw new StoreConflict(plan.id, plan.expected, found === undefined ? null : Number(found));
  }
  return chainsFromItem(item);
}

/**
 * A commit went through: the version moves on in place; the ring's end and chains (those the
 * commit left, `next`, or for a commit that wrote none, those it started from) are cached.
 */
function committed(
  ctx: CommitContext,
  exe: Execution,
  plan: CommitPlan,
  { outbox, spawns, head, chains }: Placement,
  next: Chains | undefined,
): CommitResult {
  exe.version = plan.next;
  ctx.ring.committed(plan.id, head, plan.expected, plan.next);
  ctx.statuses.set(plan.id, plan.next, plan.statusKey);
  const after = chains === undefined ? ctx.chains.at(plan.id, plan.expected) : next;
  if (after === undefined) ctx.chains.forget(plan.id);
  else ctx.chains.set(plan.id, plan.next, after);
  return { version: plan.next, outbox: outbox.seqs, spawns: spawns.seqs };
}

/**
 * Sends one transaction ({@linkcode sendTransaction}, the same token on every re-send): null on
 * success, the cancellation reasons when cancelled. Any send that got no answer may have been
 * applied: out of re-sends, a {@linkcode CommitOutcomeUnknown}, and the caches of the execution
 * are forgotten.
 */
async function send(
  ctx: CommitContext,
  items: TransactWriteItem[],
  plan: CommitPlan,
): Promise<CancellationReason[] | null> {
  try {
    await sendTransaction(ctx.client, items, {
      lost: ctx.ambiguousRetries,
      unknown: (cause) => new CommitOutcomeUnknown(plan.id, plan.next, { cause }),
      assumeApplied: true,
      onSend: countCommitSend,
    });
    return null;
  } catch (error) {
    if (isNamed(error, "TransactionCanceledException")) {
      return (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [];
    }
    if (error instanceof CommitOutcomeUnknown) {
      ctx.ring.forget(plan.id);
      ctx.chains.forget(plan.id);
      ctx.statuses.forget(plan.id);
    }
    throw error;
  }
}
