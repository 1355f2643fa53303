// SqsQueue against moto's SQS, read back by a Python consumer with harel's Event model.
import assert from "node:assert/strict";
import { ListQueuesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { newEvent, OutcomeUnknown } from "../../mod.ts";
import {
  PublishOutcomeUnknown,
  QueueNotFifo,
  type QueueRetry,
  QueueUnreachable,
  SqsQueue,
} from "../../src/sqs.ts";
import { uniqueName } from "../_support/env.ts";
import { freshQueue, readQueue, sqsEndpoint } from "../_support/sqs.ts";

const credentials = { accessKeyId: "test", secretAccessKey: "test" };

Deno.test("publish() sends the body harel's pydantic Event dumps, byte for byte", async () => {
  await using queue = await freshQueue();
  const event = {
    ...newEvent("order.paid", {
      amount: 42,
      price: 1.5,
      note: "déjà vu ✓ 🚚",
      nested: { a: [1, null] },
    }),
    extra: "dropped, as pydantic drops unknown fields",
  };
  await queue.publish("order-1", event);
  const [message, ...rest] = await readQueue(queue);
  assert.equal(rest.length, 0);
  assert.equal(message!.body, message!.redumped, "the consumer's re-dump equals what was sent");
  assert.deepEqual(Object.keys(JSON.parse(message!.body)), [
    "id",
    "kind",
    "created_time",
    "received_time",
    "data",
  ]);
  assert.match(message!.body, /déjà vu ✓ 🚚/, "raw UTF-8, not \\u escapes");
  assert.equal(message!.group, "order-1");
  assert.equal(message!.event.id, event.id);
  assert.deepEqual(message!.event.data, event.data);
});

Deno.test("publish() writes times as pydantic writes datetimes", async () => {
  await using queue = await freshQueue();
  const cases: [string, string][] = [
    ["2026-01-31T12:00:00.000Z", "2026-01-31T12:00:00Z"],
    ["2026-01-31T12:00:00.123Z", "2026-01-31T12:00:00.123000Z"],
    ["2026-01-31T12:00:00.1234567+02:00", "2026-01-31T12:00:00.123456+02:00"],
    ["2026-01-31T12:00:00+00:00", "2026-01-31T12:00:00Z"],
    ["2026-01-31T12:00:00", "2026-01-31T12:00:00"],
  ];
  for (const [given] of cases) {
    await queue.publish("times", { ...newEvent("t"), created_time: given, received_time: given });
  }
  const read = await readQueue(queue);
  assert.deepEqual(read.map((m) => JSON.parse(m.body).created_time), cases.map(([, want]) => want));
  for (const m of read) assert.equal(m.body, m.redumped);
});

Deno.test("publish() sends a fresh deduplication id each time, so a fan-out of one event arrives twice", async () => {
  await using queue = await freshQueue();
  const event = newEvent("fan.out");
  const first = await queue.publish("region-a", event);
  const second = await queue.publish("region-a", event);
  assert.notEqual(first.deduplicationId, second.deduplicationId);
  const read = await readQueue(queue);
  assert.equal(read.length, 2);
  assert.deepEqual(read.map((m) => m.event.id), [event.id, event.id]);
  assert.notEqual(read[0]!.dedup, event.id, "never the event id");
  assert.deepEqual(
    new Set(read.map((m) => m.dedup)),
    new Set([first.deduplicationId, second.deduplicationId]),
  );
});

Deno.test("publish() refuses bad input before anything is sent", async (t) => {
  await using queue = await freshQueue();
  await t.step("a priority other than 0, as harel's SqsTransport", async () => {
    await assert.rejects(queue.publish("g", newEvent("x"), { priority: 2 }), {
      name: "RangeError",
      message: /priority 2: SqsTransport has no message priority/,
    });
  });
  await t.step("a group id over 128 characters", async () => {
    await assert.rejects(queue.publish("x".repeat(129), newEvent("x")), {
      name: "RangeError",
      message: /groupId is 129 characters: an SQS MessageGroupId holds at most 128/,
    });
    await queue.publish("x".repeat(128), newEvent("fits"));
  });
  await t.step("a group id with a space", async () => {
    await assert.rejects(queue.publish("a b", newEvent("x")), /MessageGroupId refuses/);
  });
  await t.step("data that is not JSON", async () => {
    await assert.rejects(queue.publish("g", newEvent("x", { n: 10n })), /event\.data\.n/);
    await assert.rejects(queue.publish("g", newEvent("x", { n: NaN })), /event\.data\.n/);
    await assert.rejects(
      queue.publish("g", { id: "e", kind: "x", data: [] as unknown as Record<string, unknown> }),
      /event\.data must be a JSON object/,
    );
  });
  await t.step("a time harel's model cannot parse", async () => {
    await assert.rejects(
      queue.publish("g", { ...newEvent("x"), created_time: "yesterday" }),
      /event\.created_time must be null or an ISO 8601 date-time/,
    );
    for (const impossible of ["2026-02-30T00:00:00Z", "2026-01-31T25:00:00Z"]) {
      await assert.rejects(
        queue.publish("g", { ...newEvent("x"), received_time: impossible }),
        /event\.received_time must be null or an ISO 8601 date-time/,
      );
    }
  });
  await t.step(
    "what harel's pydantic Event refuses: a lone surrogate, an offset past ±23:59",
    async () => {
      const lone = "👍".slice(0, 1);
      await assert.rejects(
        queue.publish("g", newEvent("x", { note: lone })),
        /event\.data\.note holds a lone UTF-16 surrogate/,
      );
      await assert.rejects(
        queue.publish("g", newEvent("x", { [lone]: 1 })),
        /event\.data has the key "\\ud83d", which holds a lone UTF-16 surrogate/,
      );
      await assert.rejects(queue.publish("g", { ...newEvent("x"), id: lone }), /event\.id holds/);
      for (const offset of ["+24:00", "-24:00", "+99:99", "+12:60"]) {
        await assert.rejects(
          queue.publish("g", { ...newEvent("x"), created_time: `2026-01-31T12:00:00${offset}` }),
          /event\.created_time has the offset .*: an offset must be within ±23:59/,
        );
      }
    },
  );
  await t.step("no id, no kind, an option it does not take", async () => {
    await assert.rejects(queue.publish("g", { id: "", kind: "x", data: {} }), /event\.id/);
    await assert.rejects(
      queue.publish("g", { id: "e", kind: 3, data: {} } as never),
      /event\.kind/,
    );
    await assert.rejects(
      queue.publish("g", newEvent("x"), { priorty: 0 } as never),
      /no option "priorty": did you mean "priority"\?/,
    );
  });
  await t.step("a body over 1 MiB", async () => {
    await assert.rejects(
      queue.publish("g", newEvent("big", { s: "x".repeat(1_048_576) })),
      /is \d+ bytes as a message body: the queue takes at most 1048576 \(its MaximumMessageSize\)/,
    );
  });
  const read = await readQueue(queue);
  assert.deepEqual(read.map((m) => m.event.kind), ["fits"], "only the valid publish was sent");
});

Deno.test("create() makes the FIFO queue when it is missing and finds it when it is there", async () => {
  const queueName = `${uniqueName("made")}.fifo`;
  await using first = await SqsQueue.create({ endpoint: sqsEndpoint(), queueName });
  await using again = await SqsQueue.create({ endpoint: sqsEndpoint(), queueName });
  assert.equal(first.url, again.url);
  assert.match(first.url, new RegExp(`/${queueName.replace(".", "\\.")}$`));
  const client = new SQSClient({ endpoint: sqsEndpoint(), region: "us-east-1", credentials });
  try {
    const listed = await client.send(new ListQueuesCommand({ QueueNamePrefix: queueName }));
    assert.deepEqual(listed.QueueUrls, [first.url]);
  } finally {
    client.destroy();
  }
});

Deno.test("a queue that is not FIFO is refused before anything is sent", async () => {
  await assert.rejects(
    SqsQueue.create({ endpoint: sqsEndpoint(), queueName: "standard" }),
    QueueNotFifo,
  );
  const client = new SQSClient({ endpoint: sqsEndpoint(), region: "us-east-1", credentials });
  try {
    assert.throws(
      () => new SqsQueue(client, "http://127.0.0.1:1/123456789012/standard"),
      QueueNotFifo,
    );
  } finally {
    client.destroy();
  }
  await assert.rejects(
    SqsQueue.create({ endpoint: sqsEndpoint(), queueNme: "a.fifo" } as never),
    /SqsQueue.create\(\) has no option "queueNme": did you mean "queueName"\?/,
  );
  await assert.rejects(
    SqsQueue.create({ endpoint: sqsEndpoint(), backoff: { minDelay: 1 } } as never),
    /SqsQueue.create\(\)'s backoff has no option "minDelay": did you mean "minDelayMs"\?/,
  );
});

Deno.test("create() retries until SQS answers and then gives up with QueueUnreachable", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close(); // nothing listens there now: every attempt is refused
  const retries: QueueRetry[] = [];
  const error = await SqsQueue.create({
    endpoint: `http://127.0.0.1:${port}`,
    deadlineMs: 600,
    backoff: { minDelayMs: 50, maxDelayMs: 100 },
    clientConfig: { maxAttempts: 1 },
    onRetry: (retry) => retries.push(retry),
  }).catch((e) => e);
  assert.ok(error instanceof QueueUnreachable, String(error));
  assert.match(error.message, new RegExp(`SQS at http://127.0.0.1:${port} did not answer`));
  assert.ok(retries.length >= 2, `${retries.length} retries`);
  assert.deepEqual(retries.map((r) => r.attempt), retries.map((_, i) => i + 1));
});

Deno.test("a SendMessage whose answer is lost is an unknown outcome, a refused one is not", async () => {
  // A server that reads the request and never answers: the answer is lost.
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of silent) held.push(conn);
  })();
  const port = (silent.addr as Deno.NetAddr).port;
  const lossy = new SQSClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    credentials,
    maxAttempts: 1,
    requestHandler: { requestTimeout: 300, throwOnRequestTimeout: true },
  });
  try {
    const queue = new SqsQueue(lossy, `http://127.0.0.1:${port}/123456789012/q.fifo`);
    const event = newEvent("maybe");
    const error = await queue.publish("g", event).catch((e) => e);
    assert.ok(error instanceof PublishOutcomeUnknown, String(error));
    assert.ok(error instanceof OutcomeUnknown);
    assert.equal(error.eventId, event.id);
    assert.equal(error.groupId, "g");
    assert.match(error.message, /may or may not be on the queue/);
  } finally {
    lossy.destroy();
    silent.close();
    for (const conn of held) conn.close();
    await accepting.catch(() => {});
  }
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const refusedPort = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const refusing = new SQSClient({
    endpoint: `http://127.0.0.1:${refusedPort}`,
    region: "us-east-1",
    credentials,
    maxAttempts: 1,
  });
  try {
    const queue = new SqsQueue(refusing, `http://127.0.0.1:${refusedPort}/123456789012/q.fifo`);
    const error = await queue.publish("g", newEvent("never")).catch((e) => e);
    assert.ok(!(error instanceof PublishOutcomeUnknown), "a refused connection sent nothing");
  } finally {
    refusing.destroy();
  }
});

Deno.test("close() destroys the client create() built; publish() after close() is refused", async () => {
  const queue = await freshQueue();
  await queue.close();
  await assert.rejects(queue.publish("g", newEvent("late")), /SqsQueue is closed/);
});
