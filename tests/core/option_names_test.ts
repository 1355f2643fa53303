// Options refuse names they do not know, naming the near miss: the lists of names each
// entry point takes (src/core/_option_names.ts), held equal to their options interfaces by the
// type checker, the near-miss finder, and the memory twins and runners refusing a typo before
// doing anything. No DynamoDB, no permissions (tests/execution/option_names_test.ts runs the
// same table on DynamoDBStore and DynamoDBStateStore).
import assert from "node:assert/strict";
import type {
  BacklogOptions,
  BackoffOptions,
  BulkDeadLetterOptions,
  CommitChanges,
  CreateStateStoreOptions,
  CreateStoreOptions,
  DeadLetterOptions,
  DeleteExecutionsOptions,
  DueTimersOptions,
  DynamoDBStateStoreOptions,
  DynamoDBStoreOptions,
  EnsureTablesOptions,
  ExecutionOutboxOptions,
  InspectOptions,
  ListOptions,
  OutboxRelayOptions,
  ReadLimitOptions,
  RelayOptions,
  SetOptions,
  SweepOptions,
  TimerReadOptions,
  TraceReadOptions,
} from "../../mod.ts";
import {
  type MemoryStateStoreOptions,
  type MemoryStoreOptions,
  newExecution,
} from "../../src/testing.ts";
import {
  checkCreateOptions,
  checkOptionNames,
  checkOptionsOf,
  OPTION_NAMES,
  type OptionsOf,
} from "../../src/core/_option_names.ts";
import { checkKnownOptions, nearMiss } from "../../src/core/_validate.ts";
import { optionCases } from "../_support/option_cases.ts";
import { MemoryStateStore, MemoryStore } from "../../src/testing.ts";

/** `true` only when the list `K` names exactly the keys of `T`. */
type Names<T, K extends readonly string[]> = [Exclude<keyof T, K[number]>] extends [never]
  ? [Exclude<K[number], keyof T>] extends [never] ? true : false
  : false;
const names = <E extends OptionsOf>(_entry: E) => OPTION_NAMES[_entry];
/** Compiles only for `true`. */
function exact<T extends true>(_proof: T): void {}

Deno.test("each list of option names is its options interface, name for name (checked by deno check)", () => {
  const lists = {
    dynamo: names("new DynamoDBStore()"),
    create: names("DynamoDBStore.create()"),
    memory: names("new MemoryStore()"),
    state: names("new DynamoDBStateStore()"),
    createState: names("DynamoDBStateStore.create()"),
    memoryState: names("new MemoryStateStore()"),
    relayOutbox: names("relayOutbox()"),
    relaySpawns: names("relaySpawns()"),
    sweepTimers: names("sweepTimers()"),
    changes: names("commit()'s changes"),
    list: names("listExecutions()"),
    delete: names("deleteExecutions()"),
    outbox: names("pendingOutbox()"),
    spawns: names("pendingSpawns()"),
    due: names("dueTimers()"),
    dead: names("deadLetters()"),
    retry: names("retryDeadLetters()"),
    drop: names("dropDeadLetters()"),
    backlog: names("backlog()"),
    executionOutbox: names("executionOutbox()"),
    set: names("set()"),
    trace: names("readTrace()"),
    timers: names("readTimers()"),
    inspect: names("inspectExecution()"),
    ensure: names("ensureTables()"),
  };
  exact<Names<DynamoDBStoreOptions, typeof lists.dynamo>>(true);
  exact<Names<CreateStoreOptions, typeof lists.create>>(true);
  exact<Names<MemoryStoreOptions, typeof lists.memory>>(true);
  exact<Names<DynamoDBStateStoreOptions, typeof lists.state>>(true);
  exact<Names<CreateStateStoreOptions, typeof lists.createState>>(true);
  exact<Names<MemoryStateStoreOptions, typeof lists.memoryState>>(true);
  exact<Names<OutboxRelayOptions, typeof lists.relayOutbox>>(true);
  exact<Names<RelayOptions, typeof lists.relaySpawns>>(true);
  exact<Names<SweepOptions, typeof lists.sweepTimers>>(true);
  exact<Names<CommitChanges, typeof lists.changes>>(true);
  exact<Names<ListOptions, typeof lists.list>>(true);
  exact<Names<DeleteExecutionsOptions, typeof lists.delete>>(true);
  exact<Names<ReadLimitOptions, typeof lists.outbox>>(true);
  exact<Names<ReadLimitOptions, typeof lists.spawns>>(true);
  exact<Names<DueTimersOptions, typeof lists.due>>(true);
  exact<Names<DeadLetterOptions, typeof lists.dead>>(true);
  exact<Names<BulkDeadLetterOptions, typeof lists.retry>>(true);
  exact<Names<BulkDeadLetterOptions, typeof lists.drop>>(true);
  exact<Names<BacklogOptions, typeof lists.backlog>>(true);
  exact<Names<ExecutionOutboxOptions, typeof lists.executionOutbox>>(true);
  exact<Names<SetOptions, typeof lists.set>>(true);
  exact<Names<TraceReadOptions, typeof lists.trace>>(true);
  exact<Names<TimerReadOptions, typeof lists.timers>>(true);
  exact<Names<InspectOptions, typeof lists.inspect>>(true);
  exact<Names<EnsureTablesOptions, typeof lists.ensure>>(true);
  exact<Names<BackoffOptions, ["minDelayMs", "maxDelayMs", "multiplier"]>>(true);
  exact<Names<NonNullable<RelayOptions["backoff"]>, ["minSeconds", "maxSeconds"]>>(true);
  for (const [entry, list] of Object.entries(OPTION_NAMES)) {
    assert.equal(new Set(list).size, list.length, `${entry} lists a name twice`);
  }
});

Deno.test("nearMiss() finds the closest name within two edits, ignoring case", () => {
  const known = ["limit", "concurrency", "maxAttempts", "traceMax", "targetId", "signal"];
  assert.equal(nearMiss("tracemax", known), "traceMax"); // case only
  assert.equal(nearMiss("TRACEMAX", known), "traceMax");
  assert.equal(nearMiss("limt", known), "limit"); // one deletion
  assert.equal(nearMiss("maxAttempt", known), "maxAttempts");
  assert.equal(nearMiss("concurency", known), "concurrency");
  assert.equal(nearMiss("targetID", known), "targetId");
  assert.equal(nearMiss("sginal", known), "signal"); // a swap is two edits
  assert.equal(nearMiss("lmt", known), "limit"); // two deletions
  assert.equal(nearMiss("lm", known), undefined); // three
  assert.equal(nearMiss("timeout", known), undefined);
  // The closest wins over the first listed.
  assert.equal(nearMiss("emit", ["emitter", "emits"]), "emits");
  assert.equal(nearMiss("ab", ["abcd", "abc"]), "abc");
});

Deno.test("checkKnownOptions() names the unknown option and the one meant, or what it takes", () => {
  assert.throws(
    () => checkKnownOptions("f()", { limt: 5 }, ["limit", "cursor"]),
    (error) =>
      error instanceof TypeError &&
      error.message === 'f() has no option "limt": did you mean "limit"?',
  );
  assert.throws(
    () => checkKnownOptions("f()", { limit: 1, verbose: true }, ["limit", "cursor"]),
    (error) =>
      error instanceof TypeError &&
      error.message === 'f() has no option "verbose"; it takes limit, cursor',
  );
  checkKnownOptions("f()", { limit: undefined, cursor: null }, ["limit", "cursor"]);
  checkKnownOptions("f()", {}, []);
});

Deno.test("checkOptionNames() checks the nested backoff of create() and the runners too", () => {
  assert.throws(
    () => checkOptionNames("relayOutbox()", { backoff: { minSecond: 1 } }),
    /relayOutbox\(\)'s backoff has no option "minSecond": did you mean "minSeconds"\?/,
  );
  assert.throws(
    () => checkOptionNames("DynamoDBStore.create()", { backoff: { maxDelay: 1 } }),
    /DynamoDBStore\.create\(\)'s backoff has no option "maxDelay": did you mean "maxDelayMs"\?/,
  );
  checkOptionNames("sweepTimers()", { backoff: { minSeconds: 1, maxSeconds: 2 }, now: 5 });
  // Not an object: left to the entry point's own checks.
  checkOptionNames("pendingOutbox()", undefined);
  checkOptionNames("pendingOutbox()", null);
});

Deno.test("the memory twins and the runners refuse an option they do not know, before doing anything", async (t) => {
  const cases = optionCases({
    store: () => new MemoryStore(),
    state: () => new MemoryStateStore(),
    newStore: (options) => new MemoryStore(options),
    newState: (options) => new MemoryStateStore(options),
    stateTypo: ["Now", "now"],
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
  // Nothing was written by any of them.
  const store = new MemoryStore({ traceMax: 5 });
  const exe = newExecution({ definition_id: "d" });
  await assert.rejects(store.commit(exe, { emit: [] } as CommitChanges), TypeError);
  assert.equal(exe.version, 0);
  assert.equal(await store.load(exe.id), null);
});

Deno.test("create()'s options: checked before anything is built, the store's own handed to its constructor", () => {
  const signal = new AbortController().signal;
  const given = { endpoint: "http://x", prefix: "p", traceMax: 5, ensureTables: false, signal };
  const checked = checkCreateOptions("DynamoDBStore.create()", given);
  assert.equal(checked.options, given);
  assert.equal(checked.ensure, false);
  assert.deepEqual(checked.store, { prefix: "p", traceMax: 5 });
  assert.equal(checkCreateOptions("DynamoDBStateStore.create()", null).ensure, true);
  assert.deepEqual(
    checkCreateOptions("DynamoDBStateStore.create()", { tableName: "t", region: "r" }).store,
    { tableName: "t" },
  );
  assert.throws(
    () => checkCreateOptions("DynamoDBStore.create()", { ensureTables: "no" }),
    /^TypeError: ensureTables must be true or false, got "no"$/,
  );
  assert.throws(() => checkCreateOptions("DynamoDBStore.create()", 5 as never), TypeError);
});

Deno.test("checkOptionsOf(): null and undefined are no options, anything else must be an object of known names", () => {
  assert.deepEqual(checkOptionsOf("new MemoryStore()", null), {});
  assert.deepEqual(checkOptionsOf("new MemoryStore()", undefined), {});
  assert.deepEqual(checkOptionsOf("new MemoryStore()", { traceMax: 1 }), { traceMax: 1 });
  assert.throws(
    () => checkOptionsOf("new MemoryStore()", "x" as never),
    /options must be an object/,
  );
  assert.throws(
    () => checkOptionsOf("new MemoryStore()", { tracemax: 1 }),
    /^TypeError: new MemoryStore\(\) has no option "tracemax": did you mean "traceMax"\?$/,
  );
});
