import assert from "node:assert/strict";
import {
  DynamoDBStateStore,
  DynamoDBStore,
  EndpointUnreachable,
  newExecution,
  StoreClosed,
} from "../mod.ts";
import { freePort, startDynamoDBLocal } from "../scripts/local_dynamodb.ts";
import { countingClient, rejectingEndpoint, uniqueName } from "./_env.ts";

Deno.test("create() gives up on an endpoint that never answers once its deadline passes", async () => {
  const endpoint = `http://127.0.0.1:${freePort()}`;
  const started = Date.now();
  const error = await DynamoDBStore.create({ endpoint, deadlineMs: 1500 }).then(
    () => null,
    (e) => e,
  );
  const waited = Date.now() - started;
  assert.ok(error instanceof EndpointUnreachable, String(error));
  assert.match(error.message, new RegExp(`DynamoDB at ${endpoint} did not answer within \\d+ ms`));
  assert.equal((error.cause as { code?: string }).code, "ECONNREFUSED");
  assert.ok(waited >= 1500 && waited < 6000, `waited ${waited} ms`);
});

Deno.test("create() stops waiting as soon as its signal aborts", async () => {
  const endpoint = `http://127.0.0.1:${freePort()}`;
  const started = Date.now();
  await assert.rejects(
    DynamoDBStateStore.create({ endpoint, deadlineMs: 60_000, signal: AbortSignal.timeout(700) }),
    (error: Error) => error.name === "TimeoutError",
  );
  assert.ok(Date.now() - started < 5000);
});

Deno.test("create() does not retry an error that waiting cannot fix", async () => {
  await using server = rejectingEndpoint();
  const started = Date.now();
  await assert.rejects(
    DynamoDBStore.create({ endpoint: `http://127.0.0.1:${server.addr.port}`, deadlineMs: 30_000 }),
    (error: Error) => error.name === "UnrecognizedClientException",
  );
  assert.ok(Date.now() - started < 5000, "failed fast instead of waiting for the deadline");
});

Deno.test("create() started while DynamoDB is down waits for it to come up", async () => {
  const port = freePort();
  const creating = DynamoDBStore.create({
    endpoint: `http://127.0.0.1:${port}`,
    prefix: uniqueName("late"),
    deadlineMs: 60_000,
  });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const dynamodb = await startDynamoDBLocal({ port });
  try {
    await using store = await creating;
    const exe = newExecution({ definition_id: "late" });
    await store.save(exe);
    assert.equal((await store.load(exe.id))?.version, 1);
  } finally {
    await dynamodb.stop();
  }
});

Deno.test("create() rejects an endpoint that is not a URL", async () => {
  await assert.rejects(
    DynamoDBStore.create({ endpoint: "localhost:8000 " }),
    /endpoint must be an http\(s\) URL/,
  );
});

Deno.test("the constructor sends nothing and close() leaves an injected client usable", async () => {
  using counting = countingClient();
  const { client, calls } = counting;
  const store = new DynamoDBStore(client, { prefix: uniqueName("own") });
  assert.deepEqual(calls, []);
  await store.ensureTables();
  await store.close();
  await store.close();
  // Closed means closed (issue #10): the store refuses, the caller's client still works.
  await assert.rejects(store.load("x"), StoreClosed);
  const again = new DynamoDBStore(client, { prefix: store.tables.executions.name.slice(0, -11) });
  assert.equal(await again.load("x"), null, "the caller's client still works");
});

Deno.test("create() keeps to its deadline when the endpoint accepts connections but never answers", async () => {
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of silent) held.push(conn); // never read, never answer
  })();
  try {
    const started = Date.now();
    const error = await DynamoDBStore.create({
      endpoint: `http://127.0.0.1:${silent.addr.port}`,
      deadlineMs: 1000,
    }).then(() => null, (e) => e);
    assert.ok(error instanceof EndpointUnreachable, String(error));
    assert.ok(Date.now() - started < 4000, `waited ${Date.now() - started} ms`);
  } finally {
    silent.close();
    held.forEach((conn) => conn.close());
    await accepting.catch(() => {});
  }
});
