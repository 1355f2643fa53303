// The suite touches only tables of its own prefixes: it neither creates the default tables
// (`harel_*`, `harel_state`) of the test database nor adds to them, so it can run against a
// database that holds a user's own. This file runs last (`deno test tests/` runs the files it
// finds in path order, hence its name) and compares those tables with how the first test file
// that talks to DynamoDB found them (tests/_support/default_tables.ts). The tests that run the
// README's and docs/' code, which uses the default tables by design, give it a database of its
// own (tests/_support/markdown.ts, docsEndpoint).
import assert from "node:assert/strict";
import { BASELINE, type DefaultTables, defaultTables } from "./_support/default_tables.ts";
import { endpoint } from "./_support/env.ts";

Deno.test("the suite leaves the default tables of the test database as it found them", async () => {
  const baseline = Deno.env.get(BASELINE);
  assert.ok(baseline, "env.ts records the default tables when a test file loads it");
  const { by, endpoint: recordedAt, tables } = JSON.parse(baseline) as {
    by: string;
    endpoint: string;
    tables: DefaultTables;
  };
  assert.notEqual(
    by,
    Deno.mainModule,
    "this file ran first, so it has nothing to compare: run it last, as `deno task test` does " +
      "(deno test runs the files it finds in a folder in path order, after any named one)",
  );
  assert.equal(recordedAt, endpoint());
  const now = await defaultTables(endpoint());
  const changed = Object.keys(now).filter((table) => now[table] !== tables[table]);
  assert.deepEqual(
    changed.map((table) => `${table}: ${tables[table] ?? "absent"} -> ${now[table] ?? "absent"}`),
    [],
    `a test created or wrote default tables (found first by ${by}); give it a prefix of its own ` +
      "(tests/_support/env.ts: freshStore, uniqueName)",
  );
});
