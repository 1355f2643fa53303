// What the execution-store conformance suite's steps are made of: the options a step makes its
// store with, the fake clock it moves, and the step itself.
import type { ExecutionStore } from "../core/types.ts";

/**
 * The options a conformance step makes its store with, among them the clock (`now`) the step
 * moves: a store must measure every time on it.
 *
 * @example Passing them on
 * ```ts
 * import type { ConformanceStoreOptions } from "@harel/dynamodb/testing";
 * import { MemoryStore } from "@harel/dynamodb/testing";
 *
 * const make = (options: ConformanceStoreOptions) => new MemoryStore(options);
 * ```
 */
export interface ConformanceStoreOptions {
  /** The trace ring's size. @default {200} */
  traceMax?: number;
  /** Lifetime of dedupe marks, seconds. @default {null} */
  processedTtlSeconds?: number | null;
  /** Retention of finished executions, seconds. @default {null} */
  finishedTtlSeconds?: number | null;
  /** The store's clock, epoch milliseconds: a fake one the step moves. @default {Date.now} */
  now?: () => number;
}

/** A step's clock: the `now` its store was made with (real time, moved on), and its mover. */
export interface FakeClock {
  /** The clock's time, epoch milliseconds. */
  now(): number;
  /** Moves the clock on by `seconds`. */
  advance(seconds: number): void;
}

/** One step: `body` runs against a fresh store made with `options` (a number: `traceMax`). */
export type Step = (
  name: string,
  body: (store: ExecutionStore, clock: FakeClock) => Promise<void>,
  options?: ConformanceStoreOptions | number,
) => Promise<boolean>;
