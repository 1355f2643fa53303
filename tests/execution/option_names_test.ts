// Options refuse names they do not know, on DynamoDBStore and DynamoDBStateStore: the
// same table of misspellings as the memory twins (tests/core/option_names_test.ts), plus
// create()'s connect options, each refused before anything is sent.
import assert from "node:assert/strict";
import { DynamoDBStateStore, DynamoDBStore, newExecution, relayOutbox } from "../../mod.ts";
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

Deno.test("options that are a Map, or hide a misspelled name (inherited, not enumerable), are refused, sending nothing", async (t) => {
  using counting = countingClient();
  const { client, calls } = counting;
  const prefix = uniqueName("names");
  const store = new DynamoDBStore(client, { prefix });
  const state = new DynamoDBStateStore(client, { tableName: `${prefix}_state` });
  const hidden = Object.defineProperty({}, "tracemax", { value: 5 });
  const cases: [string, () => unknown, RegExp][] = [
    [
      "a Map of options",
      () => new DynamoDBStore(client, new Map([["traceMax", 5]]) as never),
      /Map/,
    ],
    ["an array", () => new DynamoDBStore(client, [] as never), /array|Array/],
    [
      "an inherited misspelling",
      () => new DynamoDBStore(client, Object.create({ tracemax: 5 })),
      /"tracemax"/,
    ],
    ["a non-enumerable misspelling", () => new DynamoDBStore(client, hidden), /"tracemax"/],
    [
      "create() with a Map",
      () => DynamoDBStore.create(new Map([["endpoint", endpoint()]]) as never),
      /Map/,
    ],
    [
      "a relay's Map",
      () => relayOutbox(store, () => Promise.resolve(), new Map([["maxAttempt", 1]]) as never),
      /Map/,
    ],
    [
      "a relay's backoff Map",
      () => relayOutbox(store, () => Promise.resolve(), { backoff: new Map() as never }),
      /Map/,
    ],
    [
      "commit()'s changes as a Map",
      () => store.commit(newExecution({ definition_id: "d" }), new Map() as never),
      /Map/,
    ],
    ["set()'s options as a Map", () => state.set("k", 1, new Map([["ttl", 5]]) as never), /Map/],
    [
      "listExecutions()' Map",
      () => store.listExecutions(new Map([["status", "DONE"]]) as never),
      /Map/,
    ],
  ];
  for (const [name, call, message] of cases) {
    await t.step(name, async () => {
      await assert.rejects(
        async () => await call(),
        (error) => error instanceof TypeError && message.test(error.message),
      );
    });
  }
  assert.deepEqual(calls, []);
});

Deno.test("relayIndex, timerIndex and timerShards (removed: the relay index is always on) are refused as unknown options", () => {
  using counting = countingClient();
  for (const [name, value] of [["relayIndex", false], ["timerIndex", true], ["timerShards", 16]]) {
    assert.throws(
      () => new DynamoDBStore(counting.client, { [name as string]: value } as never),
      (error) =>
        error instanceof TypeError &&
        error.message.includes(`new DynamoDBStore() has no option ${JSON.stringify(name)}`),
    );
  }
  assert.deepEqual(counting.calls, []);
});
