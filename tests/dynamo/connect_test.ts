import assert from "node:assert/strict";
import {
  type ConnectRetry,
  DynamoDBStateStore,
  DynamoDBStore,
  EndpointNotDynamoDB,
  EndpointUnreachable,
  newExecution,
  StoreClosed,
} from "../../mod.ts";
import { freePort, startDynamoDBLocal } from "../../scripts/local_dynamodb.ts";
import { countingClient, rejectingEndpoint, uniqueName } from "../_support/env.ts";

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
    // Past the time a JVM takes to start DynamoDB Local on two cores shared with the suite's
    // other files (over 60 s seen with other runs on the machine too).
    deadlineMs: 180_000,
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
  // Closed means closed: the store refuses, the caller's client still works.
  await assert.rejects(store.load("x"), StoreClosed);
  const again = new DynamoDBStore(client, {
    prefix: store.tables.executions.name.slice(0, -11),
  });
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

/** A local web server that answers every request with `body` as `contentType`. */
function notDynamoDB(status: number, body: string, contentType = "text/html; charset=utf-8") {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(body, { status, headers: { "content-type": contentType, server: "nginx" } }),
  );
}

const PAGE = "<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head></html>";

Deno.test("create() names what answered when the endpoint is a web page, not DynamoDB", async (t) => {
  for (const status of [200, 404]) {
    await t.step(`HTTP ${status} HTML, both stores, at once`, async () => {
      await using server = notDynamoDB(status, PAGE);
      const endpoint = `http://127.0.0.1:${server.addr.port}`;
      for (const create of [DynamoDBStore.create, DynamoDBStateStore.create]) {
        const started = Date.now();
        const error = await create({ endpoint, deadlineMs: 30_000 }).then(() => null, (e) => e);
        assert.ok(error instanceof EndpointNotDynamoDB, String(error));
        assert.ok(Date.now() - started < 5000, "no wait for the deadline: waiting cannot fix it");
        assert.equal(error.name, "EndpointNotDynamoDB");
        assert.equal(error.endpoint, endpoint);
        assert.equal(error.status, status);
        assert.equal(error.contentType, "text/html; charset=utf-8");
        assert.equal(error.server, "nginx");
        assert.match(
          error.message,
          new RegExp(`^${endpoint} answered HTTP ${status} text/html; charset=utf-8 from "nginx"`),
        );
        assert.match(error.message, /starting "<!DOCTYPE/);
        assert.match(error.message, /not DynamoDB, which answers JSON/);
        assert.match(error.message, /DYNAMODB_ENDPOINT/);
        assert.doesNotMatch(error.message, /\$response/, "no SDK internals in the message");
        assert.equal(
          (error.cause as Error).name,
          "SyntaxError",
          "the SDK's parse error is the cause",
        );
      }
    });
  }
});

Deno.test("create() waits on a proxy's 5xx page, then says what answered", async () => {
  await using server = notDynamoDB(502, "<html><body>502 Bad Gateway</body></html>");
  const endpoint = `http://127.0.0.1:${server.addr.port}`;
  const error = await DynamoDBStore.create({ endpoint, deadlineMs: 1200 }).then(
    () => null,
    (e) => e,
  );
  assert.ok(error instanceof EndpointUnreachable, String(error));
  assert.match(
    error.message,
    /did not answer within \d+ ms \(last error: HTTP 502 text\/html; charset=utf-8 from "nginx" starting "<html><bod", which is not DynamoDB\)/,
  );
});

Deno.test("create() reports each failed attempt to onRetry, and its final error says what to do", async () => {
  const endpoint = `http://127.0.0.1:${freePort()}`;
  const retries: ConnectRetry[] = [];
  const error = await DynamoDBStore.create({
    endpoint,
    deadlineMs: 1500,
    onRetry: (retry) => retries.push(retry),
  }).then(() => null, (e) => e);
  assert.ok(error instanceof EndpointUnreachable, String(error));
  assert.match(error.message, /\(last error: connect ECONNREFUSED 127\.0\.0\.1:\d+\)/);
  assert.match(error.message, /Start one with `deno task dynamodb`/);
  assert.match(
    error.message,
    /check the endpoint \(the `endpoint` option, --endpoint or DYNAMODB_ENDPOINT\)/,
  );
  assert.ok(retries.length >= 3, `${retries.length} attempts reported`);
  retries.forEach((retry, i) => {
    assert.equal(retry.endpoint, endpoint);
    assert.equal(retry.attempt, i + 1);
    assert.equal(retry.deadlineMs, 1500);
    assert.equal((retry.error as { code?: string }).code, "ECONNREFUSED");
    assert.ok(retry.delayMs > 0 && retry.delayMs <= 2000, String(retry.delayMs));
    assert.ok(retry.waitedMs >= (retries[i - 1]?.waitedMs ?? 0));
  });
});

Deno.test("create() without onRetry waits as before; a bad onRetry is refused, a throwing one rejects", async () => {
  const endpoint = `http://127.0.0.1:${freePort()}`;
  await assert.rejects(
    DynamoDBStore.create({ endpoint, onRetry: "log" as never }),
    /onRetry must be a function, got string/,
  );
  const stop = new Error("give up after the first attempt");
  const started = Date.now();
  await assert.rejects(
    DynamoDBStateStore.create({
      endpoint,
      deadlineMs: 30_000,
      onRetry: () => {
        throw stop;
      },
    }),
    (error) => error === stop,
  );
  assert.ok(Date.now() - started < 5000);
});

Deno.test("EndpointUnreachable for an AWS endpoint says to check the network and the region", () => {
  const error = new EndpointUnreachable("https://dynamodb.eu-west-1.amazonaws.com", 3000);
  assert.match(error.message, /Check the network and the region \(AWS_REGION\)/);
  assert.match(error.message, /For a local DynamoDB instead, start one with `deno task dynamodb`/);
});
