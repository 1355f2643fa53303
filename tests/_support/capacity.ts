// A client that asks DynamoDB for the capacity every call consumes and adds it up: the cost
// of an operation measured in what DynamoDB bills, not in time.
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { testClient } from "./env.ts";

interface Consumed {
  CapacityUnits?: number;
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

/** The calls whose capacity is read units (every other call's is write units). */
const READS = /^(Query|Scan|GetItem|BatchGetItem|TransactGetItems)Command$/;

/**
 * A client on the test endpoint; `capacity.units` sums the capacity of every call since reset,
 * `capacity.readUnits` the part read calls took (Query, Scan, GetItem, BatchGetItem,
 * TransactGetItems), and with `"INDEXES"`, `capacity.indexUnits` the part the global secondary
 * indexes took.
 */
export function capacityClient(region?: string, detail: "TOTAL" | "INDEXES" = "TOTAL"): {
  client: DynamoDBClient;
  capacity: { units: number; readUnits: number; indexUnits: number; calls: string[] };
} {
  const client = testClient(region);
  const capacity = { units: 0, readUnits: 0, indexUnits: 0, calls: [] as string[] };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as Record<string, unknown>).ReturnConsumedCapacity = detail;
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: Consumed | Consumed[] })
        .ConsumedCapacity;
      for (const each of [consumed ?? []].flat()) {
        capacity.units += each.CapacityUnits ?? 0;
        if (READS.test(context.commandName as string)) {
          capacity.readUnits += each.CapacityUnits ?? 0;
        }
        for (const index of Object.values(each.GlobalSecondaryIndexes ?? {})) {
          capacity.indexUnits += index.CapacityUnits ?? 0;
        }
      }
      capacity.calls.push(context.commandName as string);
      return result;
    },
    { step: "initialize", name: "sumCapacity" },
  );
  return { client, capacity };
}
