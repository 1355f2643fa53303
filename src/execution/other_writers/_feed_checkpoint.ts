// Where a table feed stands in its stream: shard id → the sequence number last read (`"end"`:
// read to its end). The counters item must stay under 4 KB whatever the stream does, so the map
// keeps only what the next round needs, capped. Pure.
import type { Shard } from "@aws-sdk/client-dynamodb-streams";

/** A shard read to its end. */
export const END = "end";
/** Shards a checkpoint keeps at most. */
export const CHECKPOINT_SHARDS = 40;
/**
 * Bytes of shard ids and sequence numbers a checkpoint keeps at most (AWS shard ids are up to 65
 * characters, sequence numbers 21 to 40): with the stream's ARN, the lease and a backfill key,
 * the item stays under 4 KB.
 */
export const CHECKPOINT_BYTES = 2800;

/** The shard tree of a stream as DescribeStream shows it: each shard's children. */
export function childrenOf(shards: readonly Shard[]): Map<string, string[]> {
  const children = new Map<string, string[]>();
  for (const shard of shards) {
    const parent = shard.ParentShardId;
    if (parent === undefined) continue;
    const list = children.get(parent) ?? [];
    list.push(shard.ShardId!);
    children.set(parent, list);
  }
  return children;
}

/**
 * Whether a round has nothing left to read of shard `id`: gone, read to its end, or a descendant
 * started (a parent is read to its end before its children).
 */
export function shardDone(
  id: string | undefined,
  checkpoint: ReadonlyMap<string, string>,
  present: ReadonlySet<string>,
  children: ReadonlyMap<string, string[]>,
): boolean {
  if (id === undefined || !present.has(id) || checkpoint.get(id) === END) return true;
  return (children.get(id) ?? []).some((child) => started(child, checkpoint, children));
}

function started(
  id: string,
  checkpoint: ReadonlyMap<string, string>,
  children: ReadonlyMap<string, string[]>,
  depth = 0,
): boolean {
  if (checkpoint.has(id)) return true;
  // A shard tree is shallow (a parent per split or roll-over within the stream's 24 hours).
  if (depth > 64) return false;
  return (children.get(id) ?? []).some((child) => started(child, checkpoint, children, depth + 1));
}

/**
 * The checkpoint to save after a round: without shards gone or finished, within the caps. Past a
 * cap, shards part-way read go before shards read to their end, the most recently started first.
 * A dropped shard is read again: the handlers' writes are conditional, so nothing is lost.
 */
export function pruneCheckpoint(
  checkpoint: ReadonlyMap<string, string>,
  shards: readonly Shard[],
): Map<string, string> {
  const present = new Set(shards.map((shard) => shard.ShardId!));
  const children = childrenOf(shards);
  const ending = new Map(
    shards.map((s) => [s.ShardId!, s.SequenceNumberRange?.EndingSequenceNumber ?? "0"]),
  );
  const kept: [string, string][] = [];
  for (const [id, seq] of checkpoint) {
    if (!present.has(id)) continue;
    if (
      seq === END && (children.get(id) ?? []).some((c) => started(c, checkpoint, children))
    ) continue;
    kept.push([id, seq]);
  }
  const order = (seq: string, id: string) => seqValue(seq === END ? ending.get(id)! : seq);
  kept.sort(([a, x], [b, y]) => {
    if ((x === END) !== (y === END)) return x === END ? 1 : -1;
    const d = order(y, b) - order(x, a);
    return d > 0n ? 1 : d < 0n ? -1 : a < b ? -1 : 1;
  });
  const out = new Map<string, string>();
  let bytes = 0;
  for (const [id, seq] of kept) {
    const size = id.length + seq.length + 2;
    if (out.size >= CHECKPOINT_SHARDS || bytes + size > CHECKPOINT_BYTES) break;
    out.set(id, seq);
    bytes += size;
  }
  return out;
}

function seqValue(seq: string): bigint {
  return /^\d{1,64}$/.test(seq) ? BigInt(seq) : 0n;
}
