// The secret access key never shows up in an error, its cause chain, or anything logged.
import assert from "node:assert/strict";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStateStore, DynamoDBStore, newExecution } from "../../mod.ts";
import { freePort } from "../../scripts/local_dynamodb.ts";
import { endpoint, rejectingEndpoint, uniqueName } from "../_support/env.ts";
import { FaultProxy } from "../_support/fault_proxy.ts";

const ACCESS_KEY = "AKIDHARELLEAKCHECK";
const SECRET = "HarelSecret/MustNotLeak+0123456789abcdefXYZ";

function texts(error: unknown): string[] {
  const out: string[] = [];
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 10; depth++) {
    if (e instanceof Error) {
      out.push(e.message, e.stack ?? "", String(e));
      try {
        out.push(JSON.stringify(e));
      } catch { /* not serialisable */ }
      e = e.cause;
    } else {
      out.push(String(e));
      break;
    }
  }
  return out;
}

Deno.test("no error path leaks the secret access key into errors or logs", async () => {
  const logged: string[] = [];
  const originals = { ...console };
  for (const level of ["log", "error", "warn", "info", "debug"] as const) {
    console[level] = (...args: unknown[]) => void logged.push(args.map(String).join(" "));
  }
  const previous = {
    id: Deno.env.get("AWS_ACCESS_KEY_ID"),
    secret: Deno.env.get("AWS_SECRET_ACCESS_KEY"),
  };
  Deno.env.set("AWS_ACCESS_KEY_ID", ACCESS_KEY);
  Deno.env.set("AWS_SECRET_ACCESS_KEY", SECRET);
  const errors: unknown[] = [];
  const collect = async (action: () => Promise<unknown>) => {
    try {
      await action();
      errors.push(new Error("expected a failure"));
    } catch (error) {
      errors.push(error);
    }
  };
  await using proxy = new FaultProxy(endpoint());
  const client = new DynamoDBClient({
    endpoint: proxy.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET },
    maxAttempts: 1,
  });
  try {
    // create() with the environment's keys: unreachable, then rejected credentials.
    await collect(() =>
      DynamoDBStore.create({ endpoint: `http://127.0.0.1:${freePort()}`, deadlineMs: 300 })
    );
    await using server = rejectingEndpoint();
    await collect(() =>
      DynamoDBStateStore.create({ endpoint: `http://127.0.0.1:${server.addr.port}` })
    );

    // A store with the same keys on a real DynamoDB: tables missing, conflicts, bad input,
    // forged cursors, lost answers, wrong types.
    const prefix = uniqueName("secret");
    const store = new DynamoDBStore(client, { prefix, ambiguousRetries: 0 });
    await collect(() => store.load("x")); // ResourceNotFoundException
    await store.ensureTables();
    const exe = newExecution({ definition_id: "d" });
    await store.save(exe);
    await collect(() => store.save({ ...exe, version: 0 }));
    await collect(() => store.commit({ ...exe, context: { n: 1n } }));
    await collect(() => store.listExecutions({ cursor: "forged" }));
    proxy.script = {
      request: ({ operation }) =>
        operation === "TransactWriteItems" ? { kind: "drop-response" } : { kind: "pass" },
    };
    await collect(() => store.save(exe));
    proxy.script = { request: () => ({ kind: "reset" }) };
    await collect(() => store.load(exe.id));
    proxy.script = { request: () => ({ kind: "pass" }) };
    const state = new DynamoDBStateStore(client, { tableName: `${prefix}_state` });
    await collect(() => state.get("k")); // no table yet
    await state.ensureTable();
    await state.set("plain", 1);
    await collect(() => state.hset("plain", "f", 1));
    await collect(() => state.set("k", undefined));
  } finally {
    client.destroy();
    Object.assign(console, originals);
    for (
      const [name, value] of [["AWS_ACCESS_KEY_ID", previous.id], [
        "AWS_SECRET_ACCESS_KEY",
        previous.secret,
      ]] as const
    ) {
      if (value === undefined) Deno.env.delete(name);
      else Deno.env.set(name, value);
    }
  }
  assert.equal(errors.length, 11);
  for (const error of errors) {
    assert.notEqual((error as Error).message, "expected a failure");
    for (const text of texts(error)) {
      assert.ok(
        !text.includes(SECRET),
        `the secret leaked through ${(error as Error).name}: ${text.slice(0, 200)}`,
      );
    }
  }
  for (const line of logged) assert.ok(!line.includes(SECRET), `the secret leaked into a log line`);
  const names = errors.map((e) => (e as Error).name);
  for (
    const expected of [
      "EndpointUnreachable",
      "UnrecognizedClientException",
      "ResourceNotFoundException",
      "StoreConflict",
      "TypeError",
      "InvalidCursor",
      "CommitOutcomeUnknown",
    ]
  ) {
    assert.ok(names.includes(expected), `${expected} among ${names}`);
  }
});
