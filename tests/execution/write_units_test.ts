// Writes at the seed's cost: the write units (table + GSI, ReturnConsumedCapacity "INDEXES") of
// our commits and acknowledgements next to the Python seed store's algorithm doing the same, on
// the test DynamoDB, with the same ~1 KB document — the four bounds. The measurement is
// deno task bench's (scripts/_bench_writes.ts), run once per scenario.
import assert from "node:assert/strict";
import { endpoint, uniqueName } from "../_support/env.ts";
import {
  benchWrites,
  WRITE_BOUNDS,
  type WriteFigures,
  type WriteScenario,
} from "../../scripts/_bench_writes.ts";

let measured: Promise<WriteFigures> | undefined;
/** The figures, measured once for the tests of this file (one run of each scenario, ~3 s). */
const figures = () =>
  measured ??= benchWrites({ endpoint: endpoint(), prefix: uniqueName("wu"), reps: 1 });
const scenario = async (key: string): Promise<WriteScenario> =>
  (await figures()).scenarios.find((s) => s.key === key)!;

async function holds(key: string): Promise<void> {
  const s = await scenario(key);
  const bound = WRITE_BOUNDS[key]!;
  assert.ok(
    s.ours.units <= bound * s.seed.units,
    `(${key}) ${s.name}: ours ${s.ours.units} write units (GSI ${s.ours.gsi}), the seed ` +
      `${s.seed.units}: ${s.ratio.toFixed(2)}x, over the bound of ${bound}x ` +
      `(ours by table: ${JSON.stringify(s.ours.byTable)}; the seed's: ` +
      `${JSON.stringify(s.seed.byTable)})`,
  );
}

Deno.test("writes cost what the seed's algorithm costs, within the issue's bounds", async (t) => {
  await t.step(
    "a commit that does not change the status: at most 1.0x the seed's",
    () => holds("a"),
  );
  await t.step("a commit with 2 emits: at most 1.25x the seed's", () => holds("b"));
  await t.step("acknowledging 50 outbox entries: at most 2x the seed's", () => holds("c"));
  await t.step(
    "a lifecycle (ten commits, one with two emits, both acknowledged): at most 1.15x",
    () => holds("d"),
  );
});

Deno.test("the seed's rows cost the same on our tables as on its own (they carry no index keys)", async () => {
  for (const s of (await figures()).scenarios) {
    assert.equal(s.seed.gsi, 0, `(${s.key}) ${s.name}`);
    assert.equal(s.seed.units, s.seedBare.units, `(${s.key}) ${s.name}`);
  }
});
