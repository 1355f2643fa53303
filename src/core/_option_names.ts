// The option names each public entry point takes, so a typo is refused (naming the near miss);
// tests/core/option_names_test.ts checks each list against its options interface.
import { checkKnownOptions, checkOptions, describe } from "./_validate.ts";

/** Where DynamoDB is and how `create()` reaches it (`ConnectOptions`). */
const CONNECT = [
  "endpoint",
  "region",
  "signal",
  "deadlineMs",
  "requestTimeoutMs",
  "backoff",
  "onRetry",
  "clientConfig",
] as const;

/** `DynamoDBStoreOptions`. */
const DYNAMODB_STORE = [
  "prefix",
  "traceMax",
  "consistentReads",
  "processedTtlSeconds",
  "finishedTtlSeconds",
  "now",
  "seqBlockSize",
  "conflictRetries",
  "ambiguousRetries",
  "otherWriters",
] as const;

/** `DynamoDBStateStoreOptions`. */
const STATE_STORE = ["tableName", "consistentReads", "now"] as const;

/** `RelayOptions`: what every runner takes. */
const RUNNER = ["limit", "concurrency", "signal", "onError", "maxAttempts", "backoff"] as const;

/** `BulkDeadLetterOptions`. */
const BULK = ["targetId", "onProgress", "signal"] as const;

/** Each entry point (as its errors name it) and the option names it takes. */
export const OPTION_NAMES = {
  "new DynamoDBStore()": DYNAMODB_STORE,
  "DynamoDBStore.create()": [...DYNAMODB_STORE, ...CONNECT, "ensureTables", "checkTables"],
  "new MemoryStore()": ["traceMax", "processedTtlSeconds", "finishedTtlSeconds", "now"],
  "new DynamoDBStateStore()": STATE_STORE,
  "DynamoDBStateStore.create()": [...STATE_STORE, ...CONNECT, "ensureTable"],
  "new MemoryStateStore()": ["now"],
  "relayOutbox()": [...RUNNER, "seqs"],
  "relaySpawns()": RUNNER,
  "sweepTimers()": [...RUNNER, "now"],
  "commit()'s changes": ["emits", "processedEventId", "timers", "spawns", "trace"],
  "catchUpStatusIndex()": ["signal"],
  "listExecutions()": [
    "status",
    "definitionId",
    "rootsOnly",
    "updatedBefore",
    "scan",
    "includeUndated",
    "limit",
    "cursor",
    "maxExamined",
    "signal",
  ],
  "deleteExecutions()": [
    "status",
    "definitionId",
    "updatedBefore",
    "allowOpen",
    "scan",
    "includeUndated",
    "onProgress",
    "signal",
  ],
  "pendingOutbox()": ["limit"],
  "pendingSpawns()": ["limit"],
  // `scan` reads the timers table whole on DynamoDB; the twin takes it and has nothing to scan.
  "dueTimers()": ["limit", "scan"],
  "deadLetters()": ["limit", "targetId"],
  "readTrace()": ["limit", "before"],
  "readTimers()": ["limit", "after"],
  "inspectExecution()": ["timerLimit"],
  "retryDeadLetters()": BULK,
  "dropDeadLetters()": BULK,
  "backlog()": ["limit", "signal"],
  "executionOutbox()": ["limit"],
  "set()": ["ttl"],
  "hset()": ["ttl"],
  "ensureTables()": ["deadlineMs", "onProgress"],
  "tableDefinitions()": ["prefix", "otherWriters", "stateTable", "region", "account"],
} as const satisfies Record<string, readonly string[]>;

/** An entry point whose option names are checked. */
export type OptionsOf = keyof typeof OPTION_NAMES;

/** The options objects nested in an entry point's options, and the names they take. */
const NESTED: Partial<Record<OptionsOf, Record<string, readonly string[]>>> = {
  "DynamoDBStore.create()": { backoff: ["minDelayMs", "maxDelayMs", "multiplier"] },
  "DynamoDBStateStore.create()": { backoff: ["minDelayMs", "maxDelayMs", "multiplier"] },
  "relayOutbox()": { backoff: ["minSeconds", "maxSeconds"] },
  "relaySpawns()": { backoff: ["minSeconds", "maxSeconds"] },
  "sweepTimers()": { backoff: ["minSeconds", "maxSeconds"] },
};

/**
 * Refuses, with a TypeError naming the near miss, an option `entry` (or its nested `backoff`)
 * does not take. `options` that are no object are left to the entry's own checks.
 */
export function checkOptionNames(entry: OptionsOf, options: unknown): void {
  if (typeof options !== "object" || options === null) return;
  checkKnownOptions(entry, options, OPTION_NAMES[entry]);
  for (const [name, known] of Object.entries(NESTED[entry] ?? {})) {
    const nested = (options as Record<string, unknown>)[name];
    if (typeof nested === "object" && nested !== null) {
      checkKnownOptions(`${entry}'s ${name}`, nested, known);
    }
  }
}

/** Each runner, by the name its callback goes by in its errors (`deliver`, `start`, `fire`). */
const RUNNERS: Record<string, OptionsOf> = {
  deliver: "relayOutbox()",
  start: "relaySpawns()",
  fire: "sweepTimers()",
};

/** The runner whose callback is `callback` refuses an option it does not take. */
export function checkRunnerOptions(callback: string, options: unknown): void {
  const runner = RUNNERS[callback];
  if (runner !== undefined) checkOptionNames(runner, options);
}

/** A constructor's options, checked: `null` and `undefined` are none, else known names only. */
export function checkOptionsOf<T extends object>(
  entry: OptionsOf,
  options: T | null | undefined,
): Partial<T> {
  const given = checkOptions(options);
  checkOptionNames(entry, given);
  return given;
}

/** What each `create()` hands its constructor, and the option that skips creating tables. */
const CREATES = {
  "DynamoDBStore.create()": { store: "new DynamoDBStore()", ensure: "ensureTables" },
  "DynamoDBStateStore.create()": { store: "new DynamoDBStateStore()", ensure: "ensureTable" },
} as const;

/** `create()`'s options, checked: its names and `ensure` flag, and the store's own options. */
export function checkCreateOptions<T extends object>(
  entry: keyof typeof CREATES,
  options: T | null | undefined,
): { options: T; store: Partial<T>; ensure: boolean } {
  const given = checkOptionsOf(entry, options) as T;
  const { store, ensure: flag } = CREATES[entry];
  const ensure = (given as Record<string, unknown>)[flag] ?? true;
  if (typeof ensure !== "boolean") {
    throw new TypeError(`${flag} must be true or false, got ${describe(ensure)}`);
  }
  const names: readonly string[] = OPTION_NAMES[store];
  const own = Object.entries(given).filter(([name]) => names.includes(name));
  return { options: given, store: Object.fromEntries(own) as Partial<T>, ensure };
}
