// The default tables (prefix "harel", state table "harel_state") of the test database: the suite
// never touches them, since a user may point it at a database that holds their own. Every test
// works on tables of its own prefix, and the code of the README and docs/, which uses the
// default tables by design, runs in a database of its own (markdown.ts, docsEndpoint).
// env.ts records how these tables look when the first test file that talks to DynamoDB loads;
// tests/zz_default_tables_test.ts, the last file of the suite, compares.
import { ListTablesCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import { buildClient } from "../../src/dynamo/connect.ts";
import { executionTables } from "../../src/core/table_specs.ts";

/** The tables a store with no options uses: the seven of prefix "harel", and "harel_state". */
export const DEFAULT_TABLES: readonly string[] = [
  ...Object.values(executionTables("harel")).map((table) => table.name),
  "harel_state",
];

/** The environment variable holding the first snapshot, shared by the suite's test files. */
export const BASELINE = "HAREL_TEST_DEFAULT_TABLES";

/** Each default table's item count in the test database, or null when it does not exist. */
export type DefaultTables = Record<string, number | null>;

/** How the default tables of the test database at `endpoint` (its default region) look now. */
export async function defaultTables(endpoint: string): Promise<DefaultTables> {
  const client = buildClient({ endpoint });
  try {
    const existing = new Set<string>();
    let start: string | undefined;
    do {
      const page = await client.send(new ListTablesCommand({ ExclusiveStartTableName: start }));
      for (const name of page.TableNames ?? []) existing.add(name);
      start = page.LastEvaluatedTableName;
    } while (start !== undefined);
    const snapshot: DefaultTables = {};
    for (const table of DEFAULT_TABLES) {
      if (!existing.has(table)) {
        snapshot[table] = null;
        continue;
      }
      let items = 0;
      let key: Record<string, never> | undefined;
      do {
        const page = await client.send(
          new ScanCommand({ TableName: table, Select: "COUNT", ExclusiveStartKey: key }),
        );
        items += page.Count ?? 0;
        key = page.LastEvaluatedKey as Record<string, never> | undefined;
      } while (key !== undefined);
      snapshot[table] = items;
    }
    return snapshot;
  } finally {
    client.destroy();
  }
}

/**
 * Records the first snapshot of the suite, once per `deno test` process (the variable is
 * process-wide; `deno task test` sets it before the run, for its two groups): called by env.ts as it loads, before
 * any test of its file can write. Names the file that took it. Not for a script that imports
 * env.ts (the bench, a test's child process).
 */
export async function recordBaseline(endpoint: string | undefined): Promise<void> {
  if (!/_test\.ts$/.test(Deno.mainModule)) return;
  if (endpoint === undefined || Deno.env.get(BASELINE) !== undefined) return;
  Deno.env.set(BASELINE, await baselineOf(endpoint, Deno.mainModule));
}

/**
 * The snapshot {@linkcode recordBaseline} records, taken now by `by`: what
 * `scripts/with_dynamodb.ts --parallel` passes to both groups of a run (two processes).
 */
export async function baselineOf(endpoint: string, by: string): Promise<string> {
  const tables = await defaultTables(endpoint);
  return JSON.stringify({ by, endpoint, tables });
}
