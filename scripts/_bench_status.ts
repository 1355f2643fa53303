// deno task bench's figures for the status index: what listExecutions reads (calls, read
// capacity units as DynamoDB reports them, ms) at 1k, 10k and 50k executions, and what the
// index costs a commit in write capacity (ReturnConsumedCapacity: "INDEXES"), next to a second
// index of the same shape (what a status+definition index would cost).
import { STATUS_INDEX } from "../src/execution/listing/_status_index.ts";
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
  type WriteRequest,
} from "@aws-sdk/client-dynamodb";
import { testClient } from "../tests/_support/env.ts";
import { fillExecutions } from "../tests/_support/executions.ts";
import { DynamoDBStore, type ListOptions, newExecution } from "../mod.ts";

/** One listing's cost: median ms of the rounds, and the calls and capacity of one. */
export interface ListingCost {
  calls: number;
  units: number;
  ms: number;
  items: number;
}

/** The figures of this section. */
export interface StatusIndexFigures {
  listing: { executions: number; costs: Record<string, ListingCost> }[];
  /** deleteExecutions of 1,000 finished executions with a timer, a trace step and a mark each. */
  bulkDelete: { deleted: number; seconds: number; perSecond: number };
  commitWcu: Record<string, { insert: Record<string, number>; update: Record<string, number> }>;
}

interface Consumed {
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

/** A client that asks for INDEXES capacity and keeps the last call's figures and all calls. */
function metered(region?: string) {
  const client: DynamoDBClient = testClient(region);
  const meter = { calls: 0, units: 0, last: [] as Consumed[] };
  client.middlewareStack.add(
    (next) => async (args) => {
      (args.input as Record<string, unknown>).ReturnConsumedCapacity = "INDEXES";
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: Consumed | Consumed[] })
        .ConsumedCapacity;
      meter.calls++;
      meter.last = [consumed ?? []].flat();
      for (const each of meter.last) meter.units += each.CapacityUnits ?? 0;
      return result;
    },
    { step: "initialize", name: "meterIndexes" },
  );
  return { client, meter };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Runs the section: about a minute, most of it filling 50k executions. */
export async function benchStatusIndex(
  prefix: string,
  rounds: number,
  progress: (line: string) => void,
): Promise<StatusIndexFigures> {
  const { client, meter } = metered();
  const store = new DynamoDBStore(client, { prefix: `${prefix}_six` });
  await store.ensureTables();
  const table = store.tables.executions.name;
  const start = Date.now() / 1000 - 100_000;
  // 10 RUNNING and 10 DONE of a rare definition, committed before the bulk of DONE ones.
  await fillExecutions(client, table, 10, { status: "RUNNING", from: start });
  await fillExecutions(client, table, 10, { status: "DONE", from: start, definitionId: "rare" });
  let stored = 20;
  const cases: Record<string, ListOptions> = {
    "status RUNNING, limit 10 (index)": { status: "RUNNING", limit: 10 },
    "unfiltered page of 20": { limit: 20 },
    "status DONE + rare definition, limit 10 (index, filtered)": {
      status: "DONE",
      definitionId: "rare",
      limit: 10,
    },
    "status RUNNING, limit 10, scan: true (the scan before the status index)": {
      status: "RUNNING",
      limit: 10,
      scan: true,
    },
  };
  const listing: StatusIndexFigures["listing"] = [];
  for (const target of [1_000, 10_000, 50_000]) {
    progress(`status index: filling the executions table to ${target}`);
    await fillExecutions(client, table, target - stored, { status: "DONE", from: start + 1000 });
    stored = target;
    const costs: Record<string, ListingCost> = {};
    for (const [label, options] of Object.entries(cases)) {
      const times: number[] = [];
      let calls = 0, units = 0, items = 0;
      for (let round = 0; round < rounds; round++) {
        meter.calls = 0;
        meter.units = 0;
        const started = performance.now();
        items = (await store.listExecutions(options)).items.length;
        times.push(performance.now() - started);
        calls = meter.calls;
        units = meter.units;
      }
      costs[label] = { calls, units, ms: median(times), items };
    }
    listing.push({ executions: target, costs });
  }
  client.destroy();
  return { listing, bulkDelete: await bulkDelete(prefix), commitWcu: await commitCosts(prefix) };
}

/** deleteExecutions of 1,000 finished executions, each with a timer, a trace step and a mark. */
export async function bulkDelete(prefix: string): Promise<StatusIndexFigures["bulkDelete"]> {
  const client = testClient();
  const store = new DynamoDBStore(client, { prefix: `${prefix}_bulk` });
  await store.ensureTables();
  const exes = await fillExecutions(client, store.tables.executions.name, 1000, {
    status: "DONE",
    from: Date.now() / 1000 - 400 * 86_400,
  });
  const t = store.tables;
  const puts = (
    table: string,
    item: (id: string) => Record<string, { S: string } | { N: string }>,
  ) => exes.map((exe) => ({ table, request: { PutRequest: { Item: item(exe.id) } } }));
  const leftovers = [
    ...puts(
      t.timers.name,
      (id) => ({ execution_id: { S: id }, path: { S: "p" }, fire_at: { N: "9" } }),
    ),
    ...puts(
      t.trace.name,
      (id) => ({ execution_id: { S: id }, idx: { N: "0" }, entry: { S: "{}" } }),
    ),
    ...puts(t.processed.name, (id) => ({ execution_id: { S: id }, event_id: { S: "e" } })),
  ];
  for (let i = 0; i < leftovers.length; i += 25) {
    const items: Record<string, WriteRequest[]> = {};
    for (const { table, request } of leftovers.slice(i, i + 25)) {
      (items[table] ??= []).push(request);
    }
    let pending: Record<string, WriteRequest[]> | undefined = items;
    while (pending && Object.keys(pending).length > 0) {
      pending = (await client.send(new BatchWriteItemCommand({ RequestItems: pending })))
        .UnprocessedItems;
    }
  }
  const started = performance.now();
  const deleted = await store.deleteExecutions({
    status: "DONE",
    updatedBefore: Date.now() / 1000 - 365 * 86_400,
  });
  const seconds = (performance.now() - started) / 1000;
  client.destroy();
  return { deleted, seconds, perSecond: deleted / seconds };
}

/**
 * Write capacity of one insert and one later commit of an execution with a 1 KB context, on an
 * executions table without the index, with it, and with it and a second index of its shape.
 */
async function commitCosts(prefix: string): Promise<StatusIndexFigures["commitWcu"]> {
  const { client, meter } = metered();
  const base: CreateTableCommandInput = {
    TableName: "",
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: [
      { AttributeName: "id", AttributeType: "S" },
      { AttributeName: "status_shard", AttributeType: "S" },
      { AttributeName: "status_at", AttributeType: "N" },
      { AttributeName: "definition_id", AttributeType: "S" },
    ],
    KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
  };
  const index = (name: string, hash: string) => ({
    IndexName: name,
    KeySchema: [
      { AttributeName: hash, KeyType: "HASH" as const },
      { AttributeName: STATUS_INDEX.range[0], KeyType: "RANGE" as const },
    ],
    Projection: {
      ProjectionType: "INCLUDE" as const,
      NonKeyAttributes: [...STATUS_INDEX.include],
    },
  });
  const layouts = {
    "no index": [],
    "status index": [index(STATUS_INDEX.name, STATUS_INDEX.hash[0])],
    "status index + a second index of its shape": [
      index(STATUS_INDEX.name, STATUS_INDEX.hash[0]),
      index("definition_id-status_at", "definition_id"),
    ],
  };
  const figures: StatusIndexFigures["commitWcu"] = {};
  for (const [label, indexes] of Object.entries(layouts)) {
    const layoutPrefix = `${prefix}_wcu_${Object.keys(figures).length}`;
    const keys = new Set([
      "id",
      ...indexes.flatMap((i) => i.KeySchema.map((k) => k.AttributeName)),
    ]);
    const input = {
      ...base,
      TableName: `${layoutPrefix}_executions`,
      AttributeDefinitions: base.AttributeDefinitions!.filter((a) => keys.has(a.AttributeName!)),
    };
    if (indexes.length > 0) input.GlobalSecondaryIndexes = indexes;
    await client.send(new CreateTableCommand(input));
    // A bare save writes the executions table alone: no ensureTables(), which would add the index.
    const store = new DynamoDBStore(client, { prefix: layoutPrefix });
    const exe = newExecution({
      definition_id: "order",
      status: "RUNNING",
      context: { note: "x".repeat(1000) },
    });
    const wcu = () => {
      const [one] = meter.last;
      const perIndex = Object.fromEntries(
        Object.entries(one?.GlobalSecondaryIndexes ?? {}).map(([k, v]) => [k, v.CapacityUnits!]),
      );
      return { table: one?.Table?.CapacityUnits ?? 0, ...perIndex, total: one?.CapacityUnits ?? 0 };
    };
    await store.save(exe);
    const insert = wcu();
    await store.save(exe);
    figures[label] = { insert, update: wcu() };
  }
  client.destroy();
  return figures;
}

/** The section's tables, as Markdown. */
export function printStatusIndex(figures: StatusIndexFigures): void {
  const labels = Object.keys(figures.listing[0]!.costs);
  for (const label of labels) {
    console.log(`\n| ${label} | calls | read capacity units | ms | items |`);
    console.log("| --- | --- | --- | --- | --- |");
    for (const { executions, costs } of figures.listing) {
      const c = costs[label]!;
      console.log(
        `| ${executions} executions | ${c.calls} | ${c.units} | ${c.ms.toFixed(1)} | ${c.items} |`,
      );
    }
  }
  const bulk = figures.bulkDelete;
  console.log(
    "\n| deleteExecutions of 1,000 finished executions (a timer, a trace step, a mark each) | deleted | s | executions/s |",
  );
  console.log("| --- | --- | --- | --- |");
  console.log(
    `| one call | ${bulk.deleted} | ${bulk.seconds.toFixed(1)} | ${bulk.perSecond.toFixed(0)} |`,
  );
  console.log("\n| one commit, 1 KB context: write capacity units | insert | later commit |");
  console.log("| --- | --- | --- |");
  for (const [label, { insert, update }] of Object.entries(figures.commitWcu)) {
    const show = (x: Record<string, number>) =>
      Object.entries(x).map(([k, v]) => `${k} ${v}`).join(", ");
    console.log(`| ${label} | ${show(insert)} | ${show(update)} |`);
  }
}
