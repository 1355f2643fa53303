// Each execution's outbox chains: for every target it emitted to, the seq of its last entry,
// kept on the execution item (`outbox_last`) so that each new entry can name its predecessor
// (`prev_seq`). A relay then never delivers an entry while the previous entry of the same
// source to the same target is still pending, whichever scan page or pass it fell in.
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { type Item, N } from "../../core/_attributes.ts";
import { EXECUTION } from "../../core/_layout.ts";
import { VersionCache } from "../../core/_lru.ts";

/**
 * An execution's chains as of one version: target key → last seq. `null` when unknown (the item
 * was last written by a writer that does not keep chains: the seed, the Python store).
 */
export type Chains = Record<string, number> | null;

/** The most targets one execution item remembers; the oldest are forgotten past it. */
export const CHAIN_CAP = 100;

/** Marks a map that forgot targets (or started mid-life): targets it lacks are unknown. */
export const PARTIAL = "?";

/**
 * The key of a target in the map: 16 hex digits of a 64-bit FNV-1a hash of its JSON (`null`
 * and `"null"` differ), so the map stays small whatever the ids. A collision only links two
 * targets' chains: the relay then waits for both, never for neither.
 */
export function targetKey(target: string | null): string {
  const text = JSON.stringify(target);
  // The 64-bit hash in four 16-bit limbs, lowest first (BigInt costs microseconds a character):
  // each UTF-16 unit is XORed in whole, as the stored keys were made, then the product by the
  // prime 2^40 + 0x1b3 is the limbs times 0x1b3 plus the lowest two shifted up by 40 bits.
  let a0 = 0x2325, a1 = 0x8422, a2 = 0x9ce4, a3 = 0xcbf2;
  for (let i = 0; i < text.length; i++) {
    a0 ^= text.charCodeAt(i);
    const t0 = a0 * 0x1b3;
    const t1 = a1 * 0x1b3 + (t0 >>> 16);
    const t2 = a2 * 0x1b3 + (t1 >>> 16) + ((a0 << 8) & 0xffff);
    const t3 = a3 * 0x1b3 + (t2 >>> 16) + (a0 >>> 8) + ((a1 << 8) & 0xffff);
    a0 = t0 & 0xffff;
    a1 = t1 & 0xffff;
    a2 = t2 & 0xffff;
    a3 = t3 & 0xffff;
  }
  return hex4(a3) + hex4(a2) + hex4(a1) + hex4(a0);
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
/** A 16-bit limb as 4 lowercase hex digits. */
const hex4 = (limb: number) => HEX[limb >>> 8]! + HEX[limb & 0xff]!;

/** The chains an execution item holds (`null` if it holds none). */
export function chainsFromItem(item: Item | undefined): Chains {
  const map = item?.[EXECUTION.outboxLast]?.M;
  if (map === undefined) return null;
  const chains: Record<string, number> = {};
  for (const [key, value] of Object.entries(map)) {
    if (value.N !== undefined) chains[key] = Number(value.N);
  }
  return chains;
}

/**
 * Links a commit's emits (targets and their seqs, ascending) into the chains it starts from:
 * each emit's predecessor (0: none; `null`: unknown) and the chains after the commit.
 */
export function linkEmits(
  from: Chains,
  targets: (string | null)[],
  seqs: number[],
): { prevs: (number | null)[]; next: Record<string, number> } {
  const next: Record<string, number> = from === null ? { [PARTIAL]: 0 } : { ...from };
  const partial = PARTIAL in next;
  const prevs = targets.map((target, i) => {
    const key = targetKey(target);
    const prev = next[key] ?? (partial ? null : 0);
    next[key] = seqs[i]!;
    return prev;
  });
  let count = 0;
  for (const key in next) if (key !== PARTIAL) count++;
  if (count > CHAIN_CAP) {
    const keys = Object.keys(next).filter((key) => key !== PARTIAL);
    keys.sort((a, b) => next[a]! - next[b]!);
    for (const key of keys.slice(0, keys.length - CHAIN_CAP)) delete next[key];
    next[PARTIAL] = 0;
  }
  return { prevs, next };
}

/** The chains as the execution item's `outbox_last` Map. */
export function chainsAttr(chains: Record<string, number>): AttributeValue {
  const map: Record<string, AttributeValue> = {};
  for (const key in chains) map[key] = N(chains[key]!);
  return { M: map };
}

/** The largest `outbox_last` a commit can write, for size checks made before seqs are known. */
export const CHAINS_PLACEHOLDER: AttributeValue = chainsAttr({
  [PARTIAL]: 0,
  ...Object.fromEntries(
    Array.from({ length: CHAIN_CAP }, (_, i) => [targetKey(String(i)), Number.MAX_SAFE_INTEGER]),
  ),
});

/**
 * The chains of the executions this store read or committed, by the version they are at: a
 * commit from that version can trust them (any other writer's commit moved the version on).
 */
export class ChainCache extends VersionCache<Chains> {
  /** Remembers what an execution item read or returned holds. */
  sawItem(id: string, item: Item | undefined): void {
    const version = item?.[EXECUTION.version]?.N;
    if (version === undefined) this.forget(id);
    else this.set(id, Number(version), chainsFromItem(item));
  }
}
