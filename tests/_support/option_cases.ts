// One table of misspelled options, one row per entry point, run on the memory twins
// (tests/core/option_names_test.ts) and on the DynamoDB stores
// (tests/execution/option_names_test.ts): each call must be refused with a TypeError naming
// the unknown option and, where there is one, the option meant.
import {
  type CommitChanges,
  type ExecutionStore,
  newExecution,
  relayOutbox,
  relaySpawns,
  type StateStore,
  sweepTimers,
} from "../../src/testing.ts";

/** One misspelled call: the option given, the option meant (none: too far off). */
export interface OptionCase {
  entry: string;
  call: () => unknown;
  wrong: string;
  meant?: string;
}

/** What the cases run on: a store of each kind, their constructors and `create()`s. */
export interface OptionTargets {
  store: () => ExecutionStore;
  state: () => StateStore;
  newStore: (options: Record<string, unknown>) => unknown;
  newState: (options: Record<string, unknown>) => unknown;
  /** A misspelled option of the state store's constructor, and the one meant. */
  stateTypo: [string, string];
  create?: (options: Record<string, unknown>) => Promise<unknown>;
  createState?: (options: Record<string, unknown>) => Promise<unknown>;
}

const noop = () => Promise.resolve();

/** The cases on `targets`: every entry point, with a near miss and, for reads, a far-off name. */
export function optionCases(targets: OptionTargets): OptionCase[] {
  const { store, state } = targets;
  const exe = () => newExecution({ definition_id: "d" });
  const cases: OptionCase[] = [
    {
      entry: "store constructor",
      call: () => targets.newStore({ tracemax: 5 }),
      wrong: "tracemax",
      meant: "traceMax",
    },
    {
      entry: "store constructor",
      call: () => targets.newStore({ finishedTTLSeconds: 60 }),
      wrong: "finishedTTLSeconds",
      meant: "finishedTtlSeconds",
    },
    {
      entry: "store constructor",
      call: () => targets.newStore({ colour: "red" }),
      wrong: "colour",
    },
    {
      entry: "state constructor",
      call: () => targets.newState({ [targets.stateTypo[0]]: undefined }),
      wrong: targets.stateTypo[0],
      meant: targets.stateTypo[1],
    },
    {
      entry: "commit()",
      call: () => store().commit(exe(), { emit: [] } as CommitChanges),
      wrong: "emit",
      meant: "emits",
    },
    {
      entry: "commit()",
      call: () => store().commit(exe(), { processedEventID: "e" } as CommitChanges),
      wrong: "processedEventID",
      meant: "processedEventId",
    },
    {
      entry: "commit()",
      call: () => store().commit(exe(), { trace: {}, timer: [] } as CommitChanges),
      wrong: "timer",
      meant: "timers",
    },
    {
      entry: "listExecutions()",
      call: () => store().listExecutions({ definitonId: "d" } as never),
      wrong: "definitonId",
      meant: "definitionId",
    },
    {
      entry: "deleteExecutions()",
      call: () =>
        store().deleteExecutions({ status: "DONE", updatedBefore: 1, allowopen: true } as never),
      wrong: "allowopen",
      meant: "allowOpen",
    },
    {
      entry: "pendingOutbox()",
      call: () => store().pendingOutbox({ limt: 5 } as never),
      wrong: "limt",
      meant: "limit",
    },
    {
      entry: "pendingOutbox()",
      call: () => store().pendingOutbox({ verbose: true } as never),
      wrong: "verbose",
    },
    {
      entry: "pendingSpawns()",
      call: () => store().pendingSpawns({ Limit: 5 } as never),
      wrong: "Limit",
      meant: "limit",
    },
    {
      entry: "dueTimers()",
      call: () => store().dueTimers(1e9, { scna: true } as never),
      wrong: "scna",
      meant: "scan",
    },
    {
      entry: "deadLetters()",
      call: () => store().deadLetters("outbox", { target: "t" } as never),
      wrong: "target",
      meant: "targetId",
    },
    {
      entry: "retryDeadLetters()",
      call: () => store().retryDeadLetters("outbox", { onprogress: () => {} } as never),
      wrong: "onprogress",
      meant: "onProgress",
    },
    {
      entry: "dropDeadLetters()",
      call: () => store().dropDeadLetters("spawns", { sigal: undefined } as never),
      wrong: "sigal",
      meant: "signal",
    },
    {
      entry: "backlog()",
      call: () => store().backlog("timers", { limits: 5 } as never),
      wrong: "limits",
      meant: "limit",
    },
    {
      entry: "set()",
      call: () => state().set("k", 1, { TTL: 5 } as never),
      wrong: "TTL",
      meant: "ttl",
    },
    {
      entry: "relayOutbox()",
      call: () => relayOutbox(store(), noop, { maxAttempt: 1 } as never),
      wrong: "maxAttempt",
      meant: "maxAttempts",
    },
    {
      entry: "relayOutbox()",
      call: () => relayOutbox(store(), noop, { seq: [1] } as never),
      wrong: "seq",
      meant: "seqs",
    },
    {
      entry: "relayOutbox()",
      call: () => relayOutbox(store(), noop, { backoff: { minSecond: 1 } } as never),
      wrong: "minSecond",
      meant: "minSeconds",
    },
    {
      entry: "relaySpawns()",
      call: () => relaySpawns(store(), noop, { concurency: 2 } as never),
      wrong: "concurency",
      meant: "concurrency",
    },
    // relaySpawns takes no `now`: only sweepTimers does.
    {
      entry: "relaySpawns()",
      call: () => relaySpawns(store(), noop, { now: 5 } as never),
      wrong: "now",
    },
    {
      entry: "sweepTimers()",
      call: () => sweepTimers(store(), noop, { onerror: () => {} } as never),
      wrong: "onerror",
      meant: "onError",
    },
  ];
  if (targets.create) {
    const create = targets.create;
    cases.push(
      {
        entry: "create()",
        call: () => create({ deadlinems: 10 }),
        wrong: "deadlinems",
        meant: "deadlineMs",
      },
      {
        entry: "create()",
        call: () => create({ ensureTable: false }),
        wrong: "ensureTable",
        meant: "ensureTables",
      },
      {
        entry: "create()",
        call: () => create({ tracemax: 5 }),
        wrong: "tracemax",
        meant: "traceMax",
      },
      {
        entry: "create()",
        call: () => create({ backoff: { minDelay: 5 } }),
        wrong: "minDelay",
        meant: "minDelayMs",
      },
    );
  }
  if (targets.createState) {
    const create = targets.createState;
    cases.push(
      {
        entry: "state create()",
        call: () => create({ ensureTables: false }),
        wrong: "ensureTables",
        meant: "ensureTable",
      },
      {
        entry: "state create()",
        call: () => create({ tablename: "x" }),
        wrong: "tablename",
        meant: "tableName",
      },
    );
  }
  return cases;
}
