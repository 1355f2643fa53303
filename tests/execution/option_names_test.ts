// Options refuse names they do not know (#26), on DynamoDBStore and DynamoDBStateStore: the
// same table of misspellings as the memory twins (tests/core/option_names_test.ts), plus
// create()'s connect options, each refused before anything is sent.
import assert from "node:assert/strict";
import { DynamoDBStateStore, DynamoDBStore } from "../../mod.ts";
import { countingClient, endpoint, uniqueName } from "../_support/env.ts";
import { optionCases } from "../_support/option_cases.ts";

Deno.test("DynamoDBStore and DynamoDBStateStore refuse an option they do not know, sending nothing", async (t) => {
  using counting = countingClient();
  const { client, calls } = counting;
  const prefix = uniqueName("names");
  const cases = optionCases({
    store: () => new DynamoDBStore(client, { prefix }),
    state: () => new DynamoDBStateStore(client, { tableName: `${prefix}_state` }),
    newStore: (options) => new DynamoDBStore(client, options),
    newState: (options) => new DynamoDBStateStore(client, options),
    stateTypo: ["tablename", "tableName"],
    create: (options) => DynamoDBStore.create({ endpoint: endpoint(), prefix, ...options }),
    createState: (options) =>
      DynamoDBStateStore.create({ endpoint: endpoint(), tableName: `${prefix}_state`, ...options }),
  });
  for (const { entry, call, wrong, meant } of cases) {
    await t.step(`${entry}: ${JSON.stringify(wrong)}`, async () => {
      await assert.rejects(
        async () => await call(),
        (error) =>
          error instanceof TypeError &&
          error.message.includes(`has no option ${JSON.stringify(wrong)}`) &&
          (meant === undefined || error.message.includes(`did you mean ${JSON.stringify(meant)}?`)),
      );
    });
  }
  assert.deepEqual(calls, []);
});

Deno.test("create() hands its constructor the store's options and takes its own", async () => {
  const prefix = uniqueName("names");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
    traceMax: 7,
    deadlineMs: 20_000,
    requestTimeoutMs: 10_000,
    backoff: { minDelayMs: 50, maxDelayMs: 500, multiplier: 2 },
    ensureTables: true,
  });
  assert.equal(store.traceMax, 7);
  assert.equal(store.tables.executions.name, `${prefix}_executions`);
  await using state = await DynamoDBStateStore.create({
    endpoint: endpoint(),
    tableName: `${prefix}_state`,
    consistentReads: false,
    ensureTable: true,
  });
  assert.equal(state.tableName, `${prefix}_state`);
  await state.set("k", 1, { ttl: 60 });
  assert.equal(await state.get("k"), 1);
});
