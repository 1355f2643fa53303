// Filling relay tables fast with rows exactly as passes leave them: one of each parked (or
// dead-lettered, or held) through the real store and its real passes, read back by key, and
// copied with BatchWriteItem under other keys. Each copy's place in the relay index comes from
// the module's own placeOf/heldPlace and its hold from targetKey/holdKey, so the layout cannot
// drift from what the store writes. Fill tables before they have a stream (a store with
// `otherWriters: true` turns one on): DynamoDB Local's writes to a streamed table cost more the
// more its streams hold (1,000 Puts: 0.25 s without, over 20 s with).
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import {
  type DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  relayOutbox,
  relaySpawns,
  sweepTimers,
} from "../../mod.ts";
import type { Item } from "../../src/dynamo/_dynamo.ts";
import { COUNTER, FAILURE, HOLD, OUTBOX, RELAY, SPAWN, TIMER } from "../../src/core/_layout.ts";
import type { RelayKind } from "../../src/core/types.ts";
import { addBlock } from "../../src/execution/commit/_seq_blocks.ts";
import { targetKey } from "../../src/execution/commit/_outbox_chain.ts";
import { holdKey } from "../../src/execution/queue/_outbox_table.ts";
import {
  heldPlace,
  partOf,
  placeOf,
  relayAttributes,
} from "../../src/execution/queue/_relay_index.ts";
import { putAll } from "./put_all.ts";
import { testClient } from "./env.ts";

const down = () => Promise.reject(new Error("down"));

/**
 * Reserves `count` seqs of `counter` ("outbox" or "spawn") on the store's counter item, as a
 * store reserves its block: no store hands them out after. Resolves to the first.
 */
async function reserveSeqs(
  store: DynamoDBStore,
  counter: "outbox" | "spawn",
  count: number,
): Promise<number> {
  using client = testClient();
  const end = await addBlock(client, store.tables.counters.name, counter, count);
  return end - count + 1;
}

/** The item at `key` of `table`, read strongly consistent; an error when there is none. */
async function readRow(table: string, key: Item): Promise<Item> {
  using client = testClient();
  const { Item: item } = await client.send(
    new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }),
  );
  if (!item) throw new Error(`no row at ${JSON.stringify(key)} in ${table}`);
  return item;
}

/** `row` with `changes` over it, in the index where its attributes put it at `now`. */
function placed(kind: RelayKind, row: Item, changes: Item, now: number): Item {
  const item = { ...row, ...changes };
  return { ...item, ...relayAttributes(placeOf(kind, item, now)!) };
}

/**
 * `count` spawns (children `c0`, `c1`, ...) and `count` timers (paths `p0`, `p1`, ..., due at
 * `fireAt`) of `exe`, each failed once and parked for an hour as a spawn pass and a timer sweep
 * with `backoff: { minSeconds: 3600 }` leave them. The first of each goes through `store` (a
 * commit, then those passes with failing callbacks); the rest are copies of them, their seqs
 * reserved on the store's counter (below the seqs the store hands out afterwards).
 */
export async function parkSpawnsAndTimers(
  store: DynamoDBStore,
  exe: Execution,
  count: number,
  fireAt: number,
): Promise<void> {
  const first = await reserveSeqs(store, "spawn", count - 1);
  const { spawns: [seq] } = await store.commit(exe, {
    spawns: [{ childId: "c0", rootPath: "r", context: {} }],
    timers: [{ action: "schedule", path: "p0", fireAt }],
  });
  const park = { limit: Infinity, backoff: { minSeconds: 3600 } };
  assert((await relaySpawns(store, down, park)).failed === 1, "the first spawn parked");
  const swept = await sweepTimers(store, down, { ...park, now: fireAt + 60 });
  assert(swept.failed === 1, "the first timer parked");
  const { spawns, timers } = store.tables;
  const spawn = await readRow(spawns.name, { [SPAWN.seq]: { N: String(seq) } });
  const timer = await readRow(timers.name, {
    [TIMER.executionId]: { S: exe.id },
    [TIMER.path]: { S: "p0" },
  });
  const now = Date.now() / 1000;
  const copies = Array.from({ length: count - 1 }, (_, i) => i + 1);
  using client = testClient();
  await Promise.all([
    putAll(
      client,
      spawns.name,
      copies.map((i) =>
        placed("spawns", spawn, {
          [SPAWN.seq]: { N: String(first + i - 1) },
          [SPAWN.childId]: { S: `c${i}` },
        }, now)
      ),
      8,
    ),
    putAll(
      client,
      timers.name,
      copies.map((i) => placed("timers", timer, { [TIMER.path]: { S: `p${i}` } }, now)),
      8,
    ),
  ]);
}

/**
 * Outbox entries to each of `targets`, `perTarget` each (emitted interleaved, target by target,
 * as one source's emits to them), as two failing passes leave them: each target's lowest entry
 * dead-lettered after one attempt, the rest held behind it (its hold lists them). The first
 * target's go through `store` (a commit, `relayOutbox` with `maxAttempts: 1`, then again); the
 * rest are copies, their seqs reserved on the store's counter (below the seqs it hands out next).
 */
export async function holdTargets(
  store: DynamoDBStore,
  targets: string[],
  perTarget: number,
): Promise<void> {
  const [template, ...others] = targets;
  const first = others.length ? await reserveSeqs(store, "outbox", others.length * perTarget) : 0;
  const { outbox: seqs } = await store.commit(newExecution({ definition_id: "index" }), {
    emits: Array.from({ length: perTarget }, () => ({ target: template!, event: newEvent("e") })),
  });
  await relayOutbox(store, down, { limit: Infinity, maxAttempts: 1 }); // the head dead-lettered
  await relayOutbox(store, down, { limit: Infinity }); // the entries behind it held
  const { outbox, counters } = store.tables;
  const rows = await Promise.all(
    seqs.map((seq) => readRow(outbox.name, { [OUTBOX.seq]: { N: String(seq) } })),
  );
  const hold = await readRow(counters.name, holdKey(targetKey(template!)));
  assert(
    rows.filter((row) => partOf(row[RELAY.part]?.S) === "d").length === 1 &&
      rows.filter((row) => partOf(row[RELAY.part]?.S) === "h").length === perTarget - 1,
    "the template target: one dead head, the rest held",
  );
  const now = Date.now() / 1000;
  const entries: Item[] = [];
  const holds: Item[] = [];
  others.forEach((target, k) => {
    const key = targetKey(target);
    const seqOf = new Map(
      seqs.map((seq, j) => [String(seq), String(first + j * others.length + k)]),
    );
    const mapped = (set: string[] | undefined) => set?.map((seq) => seqOf.get(seq) ?? seq);
    for (const row of rows) {
      const seq = { N: seqOf.get(row[OUTBOX.seq]!.N!)! };
      const prev = row[OUTBOX.prevSeq]?.N;
      const changes: Item = {
        [OUTBOX.seq]: seq,
        [OUTBOX.targetId]: { S: target },
        ...(prev === undefined ? {} : { [OUTBOX.prevSeq]: { N: seqOf.get(prev) ?? prev } }),
      };
      entries.push(
        partOf(row[RELAY.part]?.S) === "h"
          ? { ...row, ...changes, ...relayAttributes(heldPlace(key, seq)) }
          : placed("outbox", row, changes, now),
      );
    }
    holds.push({
      ...hold,
      [COUNTER.id]: holdKey(key)[COUNTER.id]!,
      [HOLD.heads]: { NS: mapped(hold[HOLD.heads]?.NS)! },
      ...(hold[HOLD.held]?.NS ? { [HOLD.held]: { NS: mapped(hold[HOLD.held]?.NS)! } } : {}),
    });
  });
  using client = testClient();
  await Promise.all([
    putAll(client, outbox.name, entries, 8),
    putAll(client, counters.name, holds, 8),
  ]);
}

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`filling the relay tables: ${what}`);
}

/**
 * Outbox entry `seq` to target `t{seq % 50}`, committed a minute before `now`, as a commit leaves
 * it (pending) or, `dead`, as a pass leaves it dead-lettered 30 s before `now` (ten attempts,
 * `lastError`), in the relay index where that puts it. `extra`: attributes beside them.
 */
export function outboxRow(
  seq: number,
  now: number,
  { dead, lastError, extra = {} }: { dead: boolean; lastError: string; extra?: Item },
): Item {
  const item: Item = {
    [OUTBOX.seq]: { N: String(seq) },
    [OUTBOX.targetId]: { S: `t${seq % 50}` },
    ...extra,
    [OUTBOX.event]: { S: JSON.stringify(newEvent("invoice.requested", { total: seq })) },
    [OUTBOX.createdAt]: { N: String(now - 60) },
    ...(dead
      ? {
        [FAILURE.attempts]: { N: "10" },
        [FAILURE.lastError]: { S: lastError },
        [FAILURE.deadAt]: { N: String(now - 30) },
      }
      : {}),
  };
  return placed("outbox", item, {}, now);
}
