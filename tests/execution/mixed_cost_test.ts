// The mixed fleet at the cost of the new rows: another writer's 300 outbox entries (the seed's
// algorithm, Python and boto3: tests/_support/seed_writer.py) among 6,000 parked rows of ours are
// found and delivered, each pass in a fresh store, in at most 400 read units (1.33 a row) whether
// they go to 16 targets or to 300, every call's ConsumedCapacity summed (the feeds' first code
// took 1,813.5: 6 a found entry; to 300 targets, 604 read units before a row adopted was taken
// from its adoption's answer instead of read again).
import assert from "node:assert/strict";
import { DynamoDBStore, relayOutbox } from "../../mod.ts";
import { capacityClient } from "../_support/capacity.ts";
import { endpoint, ownRegion } from "../_support/env.ts";
import { parkedMixedTables } from "../_support/parked_rows.ts";
import { seedWrite } from "../_support/seed_writer.ts";

/** 10 executions of the seed, each one commit of 30 emits: 300 entries to 16 lanes. */
const SEED = { executions: 10, emits: 30 };
const ENTRIES = SEED.executions * SEED.emits;
/** The bound: the rows found and delivered, not the rows parked beside them. */
const READ_UNITS = 400;

/** A database of its own: streamed tables (see `ownRegion`). */
const region = ownRegion("cost");
let tables: Promise<string> | undefined;
/**
 * The 6,000 parked rows, parked once for both tests (the second finds the first's seed delivered
 * and gone): a pass's reads do not follow the rows parked, which is what each test measures.
 */
const parked = () => tables ??= parkedMixedTables(6000, region);

/** Passes, each in a fresh store, until every one of the seed's entries went out. */
async function foundAndDelivered(
  seed: Omit<Parameters<typeof seedWrite>[0], "endpoint" | "prefix">,
) {
  const prefix = await parked();
  const wrote = await seedWrite({ endpoint: endpoint(), prefix, region, commits: 1, ...seed });
  const { client, capacity } = capacityClient(region);
  const delivered: { seq: number; targetId: string | null }[] = [];
  const passes: { delivered: number; readUnits: number; calls: number }[] = [];
  try {
    for (let pass = 0; pass < 20; pass++) {
      const [units, calls] = [capacity.readUnits, capacity.calls.length];
      await using store = new DynamoDBStore(client, { prefix, otherWriters: true });
      const report = await relayOutbox(store, (entry) => {
        delivered.push({ seq: entry.seq, targetId: entry.targetId });
        return Promise.resolve();
      });
      passes.push({
        delivered: report.delivered,
        readUnits: capacity.readUnits - units,
        calls: capacity.calls.length - calls,
      });
      if (report.delivered === 0 && delivered.length >= wrote.outbox.length) break;
    }
  } finally {
    client.destroy();
  }
  // Every entry once, in seq order per target.
  const bySeq = (a: number, b: number) => a - b;
  assert.deepEqual(
    delivered.map((d) => d.seq).sort(bySeq),
    wrote.outbox.map((o) => o.seq).sort(bySeq),
  );
  const lanes = new Map<string, number[]>();
  for (const { seq, targetId } of delivered) {
    const key = JSON.stringify(targetId);
    lanes.set(key, [...lanes.get(key) ?? [], seq]);
  }
  for (const [target, seqs] of lanes) {
    assert.deepEqual(seqs, [...seqs].sort(bySeq), `target ${target}: in seq order`);
  }
  return { entries: wrote.outbox.length, lanes: lanes.size, capacity, passes };
}

Deno.test(`300 entries of another writer among 6,000 parked rows of ours: found and delivered in at most ${READ_UNITS} read units, each pass in a fresh store`, async () => {
  const { entries, lanes, capacity, passes } = await foundAndDelivered(SEED);
  assert.equal(entries, ENTRIES);
  console.log(
    `another writer's ${ENTRIES} entries to 16 lanes among 6,000 parked: ${capacity.readUnits} ` +
      `read units, ${capacity.calls.length} calls; by pass: ${JSON.stringify(passes)}`,
  );
  assert.equal(lanes, SEED.emits / 2 + 1); // 15 targets and the outside world
  assert.ok(
    capacity.readUnits <= READ_UNITS,
    `found and delivered in ${capacity.readUnits} read units (at most ${READ_UNITS})`,
  );
});

Deno.test(`300 entries of another writer to 300 targets among 6,000 parked rows of ours: found and delivered in at most ${READ_UNITS} read units`, async () => {
  const { entries, lanes, capacity, passes } = await foundAndDelivered({
    executions: 10,
    emits: 30,
    targetsApart: true,
  });
  assert.deepEqual([entries, lanes], [300, 300]);
  console.log(
    `another writer's 300 entries to 300 targets among 6,000 parked: ${capacity.readUnits} read ` +
      `units (${(capacity.readUnits / 300).toFixed(2)} a row), ${capacity.calls.length} calls; ` +
      `by pass: ${JSON.stringify(passes)}`,
  );
  assert.ok(capacity.readUnits <= READ_UNITS, `${capacity.readUnits} read units`);
});
