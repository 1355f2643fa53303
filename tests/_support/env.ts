// Shared test plumbing: the DynamoDB every test talks to, and unique table names.
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { buildClient } from "../../src/dynamo/connect.ts";
import { ensureTable, executionTables } from "../../src/dynamo/tables.ts";
import { createTableInput } from "../../src/dynamo/table_definitions.ts";
import { DynamoDBStateStore, DynamoDBStore, type DynamoDBStoreOptions } from "../../mod.ts";
import { recordBaseline } from "./default_tables.ts";
import { IndexLagProxy } from "./index_lag_proxy.ts";

// The default tables as the suite found them, before any test of this file can write
// (tests/zz_default_tables_test.ts compares at the end).
await recordBaseline(Deno.env.get("DYNAMODB_ENDPOINT") || undefined);

/**
 * With `HAREL_INDEX_LAG_MS=L`, every test of the file talks to DynamoDB through an index lag
 * proxy: its global secondary indexes answer L ms behind the tables, as AWS's may.
 */
const indexLag = (() => {
  const lag = Deno.env.get("HAREL_INDEX_LAG_MS");
  const upstream = Deno.env.get("DYNAMODB_ENDPOINT");
  if (!lag || !upstream) return undefined;
  const lagMs = Number(lag);
  if (!Number.isFinite(lagMs) || lagMs < 0) {
    throw new RangeError(`HAREL_INDEX_LAG_MS must be a number of ms >= 0, not "${lag}"`);
  }
  const proxy = new IndexLagProxy(upstream, { lagMs });
  // A test that waits forever then fails as it would without the proxy, instead of hanging.
  proxy.unref();
  return proxy;
})();

/** The endpoint `deno task test` started; a test that needs DynamoDB fails loudly without it. */
export function endpoint(): string {
  const value = Deno.env.get("DYNAMODB_ENDPOINT");
  if (!value) {
    throw new Error(
      "DYNAMODB_ENDPOINT is not set: run the tests with `deno task test`, which starts a DynamoDB",
    );
  }
  return indexLag?.endpoint ?? value;
}

/** DynamoDB itself, never through the index lag proxy (for a proxy test's own upstream). */
export function directEndpoint(): string {
  endpoint();
  return Deno.env.get("DYNAMODB_ENDPOINT")!;
}

/** A client that `using` destroys at the end of its block (in place of `try/finally`). */
export type TestClient = DynamoDBClient & Disposable;

/**
 * A fresh client on the test endpoint; another `region` is another database in DynamoDB Local
 * (one per access key and region). `using client = testClient()` destroys it at block end.
 */
export function testClient(region?: string): TestClient {
  const client = buildClient({ endpoint: endpoint(), region });
  return Object.assign(client, { [Symbol.dispose]: () => client.destroy() });
}

/**
 * A region no other test file uses: in DynamoDB Local, a database of this file's own, for tables
 * with a stream (`otherWriters: true`). DynamoDB Local keeps one SQLite database per access key
 * and region, with every stream's records in one SQLite table, and answers each record written to
 * a stream (and each DescribeStream and GetRecords) with a lookup of the stream's oldest record
 * that walks that table from its oldest row: a stream created after N records in its database
 * pays O(N) per record. In the suite's shared database that made a BatchWriteItem of 25 items to
 * a new streamed table take 60 ms at 10,000 earlier records and 344 ms at 40,000 (5 ms with none,
 * or in a database of its own), and every other request of the database waited behind it on the
 * database's one SQLite thread (a browser test's POST took 6.4 s instead of 60 ms, and timed out
 * in CI). Pass it to every client and store of the file that talks to the streamed tables (and
 * `AWS_REGION` to the Python writers).
 */
export function ownRegion(stem: string): string {
  return `${stem}-${Date.now().toString(36)}-${crypto.randomUUID().slice(0, 6)}`;
}

let counter = 0;
/** A name no other test uses, valid as a table name or prefix. */
export function uniqueName(stem: string): string {
  return `${stem}_${Date.now().toString(36)}_${(counter++).toString(36)}_${
    crypto.randomUUID().slice(0, 6)
  }`;
}

/**
 * A store on fresh tables (a unique prefix) of the test DynamoDB: a default store (no other
 * writers, so no stream on its tables) unless the test gives `otherWriters: true`.
 */
export async function freshStore(
  options: DynamoDBStoreOptions & { region?: string } = {},
): Promise<DynamoDBStore> {
  return await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix: uniqueName("t"),
    ...options,
  });
}

/** A state store on a fresh table of the test DynamoDB (with a clock of its own, if given). */
export async function freshStateStore(
  options: { now?: () => number } = {},
): Promise<DynamoDBStateStore> {
  return await DynamoDBStateStore.create({
    endpoint: endpoint(),
    tableName: uniqueName("state"),
    ...options,
  });
}

/** Waits `ms` milliseconds. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A client on the test endpoint that records the name of every command it sends;
 * `using counting = countingClient()` destroys the client at block end.
 */
export function countingClient(
  region?: string,
): { client: TestClient; calls: string[] } & Disposable {
  const client = testClient(region);
  const calls: string[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      calls.push(context.commandName as string);
      return next(args);
    },
    { step: "initialize", name: "countCalls" },
  );
  return { client, calls, [Symbol.dispose]: () => client.destroy() };
}

/** A local endpoint that answers every call the way AWS answers a bad access key. */
export function rejectingEndpoint(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () =>
    Response.json(
      {
        __type: "com.amazonaws.dynamodb.v20120810#UnrecognizedClientException",
        message: "The security token included in the request is invalid.",
      },
      { status: 400, headers: { "content-type": "application/x-amz-json-1.0" } },
    ));
}

/**
 * The seven tables of `prefix` as another writer (the Python store) creates them: keys only, no
 * index, so that `ensureTables()` has the relay index to add and rows to adopt.
 */
export async function bareTables(client: DynamoDBClient, prefix: string): Promise<void> {
  await Promise.all(
    Object.values(executionTables(prefix)).map((spec) =>
      ensureTable(client, createTableInput(spec))
    ),
  );
}
