// Bounded, ordered reads: the `limit` smallest of a stream of keys in O(limit) memory, so a
// relay reading a backlog of any size holds one page plus `limit` keys, never the table.

import { checkOptionNames, type OptionsOf } from "./_option_names.ts";

/** The default `limit` of the pending and due reads. */
export const DEFAULT_READ_LIMIT = 1000;

/** A positive integer or `Infinity` (everything); a RangeError naming the field otherwise. */
export function checkLimit(field: string, value: unknown): number {
  if (value === Infinity) return value;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `${field} must be a positive integer or Infinity, got ${
        typeof value === "number" ? String(value) : typeof value
      }`,
    );
  }
  return value;
}

/**
 * The `limit` of a read's options object (absent: the default), checked; with the read's name,
 * an option that read does not take is refused too.
 */
export function readLimit(options: unknown, read?: OptionsOf): number {
  if (options === undefined) return DEFAULT_READ_LIMIT;
  if (options === null || typeof options !== "object") {
    throw new TypeError(`options must be an object such as { limit: 100 }, got ${options}`);
  }
  if (read !== undefined) checkOptionNames(read, options);
  const { limit = DEFAULT_READ_LIMIT } = options as { limit?: unknown };
  return checkLimit("limit", limit);
}

/**
 * Keeps the `capacity` smallest values offered (by `compare`) in a binary max-heap: the
 * root is the largest kept, so a smaller newcomer replaces it in O(log capacity).
 */
export class Lowest<T> {
  readonly #heap: T[] = [];

  constructor(readonly capacity: number, readonly compare: (a: T, b: T) => number) {}

  offer(value: T): void {
    const heap = this.#heap;
    if (heap.length < this.capacity) {
      heap.push(value);
      this.#up(heap.length - 1);
    } else if (this.capacity > 0 && this.compare(value, heap[0]!) < 0) {
      heap[0] = value;
      this.#down(0);
    }
  }

  /** The kept values, smallest first. */
  sorted(): T[] {
    return [...this.#heap].sort(this.compare);
  }

  #up(i: number): void {
    const heap = this.#heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.compare(heap[i]!, heap[parent]!) <= 0) return;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #down(i: number): void {
    const heap = this.#heap;
    for (;;) {
      const left = 2 * i + 1, right = left + 1;
      let top = i;
      if (left < heap.length && this.compare(heap[left]!, heap[top]!) > 0) top = left;
      if (right < heap.length && this.compare(heap[right]!, heap[top]!) > 0) top = right;
      if (top === i) return;
      [heap[i], heap[top]] = [heap[top]!, heap[i]!];
      i = top;
    }
  }
}

export const bySeq = (a: number, b: number): number => a - b;

/** Timers earliest first; ties by execution id, then path (code-unit order, as DynamoDB sorts). */
export function byFireAt(
  a: { fireAt: number; executionId: string; path: string },
  b: { fireAt: number; executionId: string; path: string },
): number {
  return a.fireAt - b.fireAt || compareText(a.executionId, b.executionId) ||
    compareText(a.path, b.path);
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
