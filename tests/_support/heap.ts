// Measuring what a read keeps alive: a backlog seeded straight into the table, and the
// heap a call holds at its peak, sampled after a full gc around every request it sends.
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { putAll } from "./put_all.ts";
import { newEvent } from "../../mod.ts";
import { pendingPlace, relayAttributes } from "../../src/execution/queue/_relay_index.ts";

/**
 * Writes `count` outbox entries (seqs 1..count, ~400 bytes each) with BatchWriteItem: with the
 * relay index's attributes, as this module's commits write them, unless `indexed` is false (as
 * the Python store writes them).
 */
export async function seedOutbox(
  client: DynamoDBClient,
  table: string,
  count: number,
  { indexed = true }: { indexed?: boolean } = {},
): Promise<void> {
  const items = Array.from({ length: count }, (_, i) => {
    const seq = String(i + 1);
    return {
      seq: { N: seq },
      target_id: { S: `target-${(i + 1) % 50}` },
      event: { S: JSON.stringify(newEvent("backlog", { pad: "x".repeat(250) })) },
      ...(indexed ? relayAttributes(pendingPlace("outbox", { seq: { N: seq } })) : {}),
    };
  });
  await putAll(client, table, items);
}

/** `gc` when the runtime was started with `--v8-flags=--expose-gc`. */
export function exposedGc(): () => void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== "function") {
    throw new Error("run with --v8-flags=--expose-gc (deno task test and deno task bench do)");
  }
  return gc;
}

/**
 * Adds to `client` a probe that, when armed, collects garbage and samples the heap before
 * every request and after every response (when the response page is alive). `measure`
 * runs `action` armed and returns the largest growth over the heap before it, counting
 * the result it returns (still referenced at the last sample).
 */
export function heapProbe(client: DynamoDBClient): {
  measure<T>(action: () => Promise<T>): Promise<{ result: T; grownBytes: number }>;
} {
  const gc = exposedGc();
  let armed = false;
  let peak = 0;
  const sample = () => {
    if (!armed) return;
    gc();
    peak = Math.max(peak, Deno.memoryUsage().heapUsed);
  };
  client.middlewareStack.add(
    (next) => async (args) => {
      sample();
      const output = await next(args);
      sample();
      return output;
    },
    { step: "deserialize", name: "heapProbe" },
  );
  return {
    async measure(action) {
      // Settle what earlier work left (sockets, promise jobs) before taking the baseline.
      await new Promise((resolve) => setTimeout(resolve, 0));
      gc();
      gc();
      const before = Deno.memoryUsage().heapUsed;
      peak = before;
      armed = true;
      try {
        const result = await action();
        sample();
        return { result, grownBytes: peak - before };
      } finally {
        armed = false;
      }
    },
  };
}
