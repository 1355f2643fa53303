// What a harel worker cannot take never reaches it: a corpus of odd inputs (nesting around the
// depth harel's pydantic reads, event ids around DynamoDB's 1,024-byte range key, lone
// surrogates, U+FFFE and U+FFFF, bodies over the queue's size) through every path of
// FleetClient and SqsQueue, then every published body and stored execution read by harel's
// pydantic models (tests/_support/harel_models.py). Each input is refused, naming its path, or
// reaches the worker as something it takes.
import assert from "node:assert/strict";
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { type Event, type Execution, newEvent, newExecution } from "../../mod.ts";
import { CreateQueueCommand, SQSClient } from "@aws-sdk/client-sqs";
import { FleetClient, SqsQueue } from "../../src/sqs.ts";
import { permanentRefusal } from "../../src/sqs/sqs_queue.ts";
import { MemoryStore } from "../../src/testing.ts";
import { testClient, uniqueName } from "../_support/env.ts";
import {
  FLEET_REGION,
  fleetStore,
  freshQueue,
  harelReads,
  readQueue,
  sqsEndpoint,
} from "../_support/sqs.ts";

/** `{ d: { d: ... {} } }`, `levels` objects deep. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) value = { d: value };
  return value;
}

const LONE = "👍".slice(0, 1);

/** Values put in an event's data, a context, a reason. */
const VALUES: [string, unknown][] = [
  ...[60, 98, 99, 100, 150, 198, 199, 200, 201, 250, 497].map((n) => [`${n} levels`, nested(n)]),
  ...[60, 99, 150, 199, 200, 300].map((n) => [`${n} levels of lists`, list(n)]),
  ["a lone surrogate", `a${LONE}b`],
  ["a lone surrogate as a key", { [LONE]: 1 }],
  ["U+FFFE", "a\uFFFEb"],
  ["U+FFFF", "a\uFFFFb"],
  ["U+FFFE as a key", { "\uFFFE": 1 }],
  ["U+FFFD and controls", "\uFFFD\0\x01"],
  ["300 KB", "x".repeat(300_000)],
  ["1.1 MB", "x".repeat(1_100_000)],
] as [string, unknown][];

function list(levels: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

/** Event ids around the 1,024 bytes of a dedupe mark's range key. */
const IDS: [string, string][] = [
  ["1,024 ASCII bytes", "x".repeat(1024)],
  ["1,025 ASCII bytes", "x".repeat(1025)],
  ["1,024 bytes of é", "é".repeat(512)],
  ["1,026 bytes of é", "é".repeat(513)],
  ["1,024 bytes of 👍", "👍".repeat(256)],
  ["1,028 bytes of 👍", "👍".repeat(257)],
  ["1,026 bytes of 中", "中".repeat(342)],
  ["5,000 bytes", "x".repeat(5000)],
  ["a lone surrogate", `e${LONE}`],
  ["U+FFFF", "e\uFFFF"],
];

interface Attempt {
  path: string;
  input: string;
  /** The path the refusal must name. */
  names: RegExp;
  run: () => Promise<unknown>;
}

const encoder = new TextEncoder();

Deno.test("no odd input through any FleetClient or SqsQueue path reaches a harel worker as poison; each refusal names its path", async () => {
  await using store = await fleetStore();
  await using queue = await freshQueue();
  const fleet = new FleetClient({ store, queue });
  using client = testClient(FLEET_REGION);
  const running = newExecution({ definition_id: "d", status: "RUNNING", active_path: "main" });
  await store.save(running);
  const committed: string[] = []; // the executions whose stored document a worker loads
  const attempts: Attempt[] = [];
  for (const [input, value] of VALUES) {
    attempts.push(
      {
        path: "SqsQueue.publish",
        input,
        names: /event\.data\.v/,
        run: () => queue.publish(running.id, newEvent("k", { v: value })),
      },
      {
        path: "create",
        input,
        names: /context\.v|event\.data\.v/,
        run: async () => committed.push((await fleet.create("d", { context: { v: value } })).id),
      },
      {
        path: "send",
        input,
        names: /event\.data\.v/,
        run: () => fleet.send(running.id, newEvent("k", { v: value })),
      },
      {
        path: "cancel",
        input,
        names: /reason\.v|event\.data\.v/,
        run: async () => {
          const exe = newExecution({ definition_id: "d", status: "RUNNING", active_path: "m" });
          await store.save(exe);
          return fleet.cancel(exe.id, { reason: { v: value } });
        },
      },
      {
        path: "commit (the context)",
        input,
        names: /exe\.context\.v|exe would be/,
        run: async () => {
          const exe = newExecution({ definition_id: "d", context: { v: value } });
          await store.commit(exe);
          committed.push(exe.id);
        },
      },
      {
        path: "commit, then relay (an emit)",
        input,
        names: /changes\.emits\[0\]\.event\.data\.v|would be a/,
        run: () =>
          store.commit(newExecution({ definition_id: "d" }), {
            emits: [{ target: running.id, event: newEvent("k", { v: value }) }],
          }),
      },
    );
  }
  for (const [input, id] of IDS) {
    const event = { ...newEvent("k"), id };
    attempts.push(
      { path: "SqsQueue.publish", input, names: /event\.id/, run: () => queue.publish("g", event) },
      { path: "send", input, names: /event\.id/, run: () => fleet.send(running.id, event) },
      {
        path: "commit, then relay (an emit)",
        input,
        names: /changes\.emits\[0\]\.event\.id/,
        run: () =>
          store.commit(newExecution({ definition_id: "d" }), {
            emits: [{ target: running.id, event }],
          }),
      },
    );
  }
  const refusals: { path: string; input: string; message: string }[] = [];
  const unnamed: string[] = [];
  // A body too large names the event and the limit; an item too large, the document.
  const size =
    /^event "\w+" is \d+ bytes as a message body: the queue takes at most \d+|would be a \d+-byte item/;
  for (const attempt of attempts) {
    try {
      await attempt.run();
    } catch (error) {
      const message = (error as Error).message;
      if (!(size.test(message) ? size : attempt.names).test(message)) {
        unnamed.push(`${attempt.path}, ${attempt.input}: ${message}`);
      }
      refusals.push({ path: attempt.path, input: attempt.input, message });
    }
  }
  // Another writer's rows (the Python store's), as stored, for the relay.
  let seq = 990_000_000;
  const stored: [string, string][] = [
    ...VALUES.map((
      [input, v],
    ) => [input, JSON.stringify({ id: crypto.randomUUID(), kind: "k", data: { v } })]),
    ...IDS.map(([input, id]) => [input, JSON.stringify({ id, kind: "k", data: {} })]),
  ] as [string, string][];
  for (const [, text] of stored) {
    await client.send(
      new PutItemCommand({
        TableName: store.tables.outbox.name,
        Item: { seq: { N: String(seq++) }, target_id: { S: running.id }, event: { S: text } },
      }),
    ).catch(() => {}); // an item over 400 KB is one the Python store could not write either
  }
  const setAside: string[] = [];
  for (let pass = 0; pass < 3; pass++) {
    await fleet.relay({ outbox: { onError: (e) => setAside.push(String(e)) } });
  }
  assert.deepEqual(await store.pendingOutbox(), [], "nothing left to retry for ever");

  const messages = await readQueue(queue);
  const documents: { model: "Event" | "Execution"; text: string }[] = messages.map((m) => ({
    model: "Event",
    text: m.body,
  }));
  for (const id of committed) {
    const { Item } = await client.send(
      new GetItemCommand({
        TableName: store.tables.executions.name,
        Key: { id: { S: id } },
        ConsistentRead: true,
      }),
    );
    documents.push({ model: "Execution", text: Item!.data!.S! });
  }
  const answers = await harelReads(documents);
  const poison = documents.filter((d, i) => {
    if (!answers[i]!.ok) return true;
    if (d.model !== "Event") return false;
    const event = JSON.parse(d.text) as Event;
    return encoder.encode(event.id).length > 1024 || /[\uFFFE\uFFFF]/.test(d.text);
  });
  const figures = `${attempts.length + stored.length} attempts: ${messages.length} messages ` +
    `published, ${committed.length} executions committed, ${refusals.length} refused, ` +
    `${setAside.length} set aside by the relay; ${poison.length} poison`;
  console.log(figures);
  assert.deepEqual(
    poison.map((d) => `${d.model} ${d.text.slice(0, 80)}`),
    [],
    figures,
  );
  assert.deepEqual(unnamed, [], "every refusal names its path");
  // What fits is taken: a document of 100 levels, a 1,024-byte id, U+FFFD.
  const taken = (input: string) =>
    attempts.filter((a) => a.input === input).length -
    refusals.filter((r) => r.input === input).length;
  for (
    const input of ["98 levels", "1,024 ASCII bytes", "1,024 bytes of 👍", "U+FFFD and controls"]
  ) {
    assert.ok(taken(input) > 0, `${input} is taken somewhere`);
  }
});

Deno.test("the limits are what harel's models read: 100 levels under a document, with room to spare", async () => {
  // The depth pydantic reads, measured on the models: 201 levels counted from the document
  // (the data or context is level 2, a deferred event's data level 4), not 202.
  const documents = [200, 201].flatMap((n) => [
    { model: "Event" as const, text: JSON.stringify({ kind: "k", data: nested(n) }) },
    {
      model: "Execution" as const,
      text: JSON.stringify(newExecution({ definition_id: "d", context: nested(n) })),
    },
    {
      model: "Execution" as const,
      text: JSON.stringify(
        newExecution({ definition_id: "d", deferred: [{ ...newEvent("k"), data: nested(n - 2) }] }),
      ),
    },
  ]);
  const answers = await harelReads(documents);
  assert.deepEqual(answers.map((a) => a.ok), [true, true, true, false, false, false]);
  assert.match(String((answers[3] as { error: string }).error), /recursion limit exceeded/);
  const memory = new MemoryStore();
  const exe: Execution = newExecution({ definition_id: "d", context: nested(99) });
  await memory.commit(exe);
  await assert.rejects(
    memory.commit(newExecution({ definition_id: "d", context: nested(100) })),
    /exe\.context(\.d)+ nests deeper than 100 levels of objects and arrays \(counted from the document\): harel's pydantic models read at most 201/,
  );
});

Deno.test("a 256 KiB queue: create() commits nothing over it, and relay() retries nothing for ever", async () => {
  await using store = await fleetStore();
  const queueName = `${uniqueName("small")}.fifo`;
  const sqs = new SQSClient({
    endpoint: sqsEndpoint(),
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  try {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({
        QueueName: queueName,
        Attributes: { FifoQueue: "true", MaximumMessageSize: "262144" },
      }),
    );
    await using queue = await SqsQueue.create({ endpoint: sqsEndpoint(), queueName });
    assert.equal(queue.maxMessageBytes, 262_144, "read once, when it connects");
    const fleet = new FleetClient({ store, queue });
    const big = { blob: "x".repeat(300_000) };
    await assert.rejects(
      fleet.create("order", { context: big }),
      /is 300\d{3} bytes as a message body: the queue takes at most 262144/,
    );
    assert.deepEqual((await store.listExecutions()).items, [], "nothing committed");
    assert.deepEqual(await store.pendingOutbox(), []);
    const running = newExecution({ definition_id: "order", status: "RUNNING", active_path: "m" });
    await store.save(running);
    await assert.rejects(fleet.send(running.id, newEvent("k", big)), /at most 262144/);
    await assert.rejects(fleet.cancel(running.id, { reason: big }), /at most 262144/);
    assert.equal((await store.load(running.id))?.status, "RUNNING");

    // The store cannot know where an emit goes: the relay sets aside what can never fit.
    await store.commit(newExecution({ definition_id: "d" }), {
      emits: [{ target: running.id, event: newEvent("k", big) }],
    });
    const errors: unknown[] = [];
    const first = await fleet.relay({ outbox: { onError: (e) => errors.push(e) } });
    assert.deepEqual([first.outbox.delivered, first.outbox.setAside], [0, 1]);
    assert.match(String(errors[0]), /UnreadableEntry.*the queue takes at most 262144/);

    // A queue built with `new` knows no size: SQS's 400 sets the entry aside, with the reason.
    const unaware = new FleetClient({ store, queue: new SqsQueue(sqs, QueueUrl!) });
    await store.commit(newExecution({ definition_id: "d" }), {
      emits: [{ target: running.id, event: newEvent("k", big) }],
    });
    errors.length = 0;
    const second = await unaware.relay({ outbox: { onError: (e) => errors.push(e) } });
    assert.deepEqual([second.outbox.delivered, second.outbox.setAside], [0, 1]);
    assert.match(
      String(errors[0]),
      /SQS refused it \(400 InvalidParameterValue: .*262144 bytes\.\); a retry cannot cure that/,
    );
    const now = { backoff: { minSeconds: 0, maxSeconds: 0 } };
    for (let pass = 0; pass < 3; pass++) {
      const again = await unaware.relay({ outbox: now });
      assert.deepEqual([again.outbox.delivered, again.outbox.failed], [0, 0], "nothing retried");
    }
    assert.equal((await store.deadLetters("outbox")).length, 2);
    assert.deepEqual(await readQueue(queue, 0.5), []);
  } finally {
    sqs.destroy();
  }
});

Deno.test("a refusal of the message itself is for good; throttling, 5xx and the queue's own troubles are not", () => {
  const error = (name: string, status: number) =>
    Object.assign(new Error(`${name} said no`), { name, $metadata: { httpStatusCode: status } });
  assert.match(
    String(permanentRefusal(error("InvalidParameterValue", 400))),
    /SQS refused it \(400 InvalidParameterValue: InvalidParameterValue said no\)/,
  );
  assert.notEqual(permanentRefusal(error("InvalidMessageContents", 400)), null);
  for (
    const [name, status] of [
      ["ThrottlingException", 400],
      ["RequestThrottled", 403],
      ["TooManyRequests", 429],
      ["InternalError", 500],
      ["ServiceUnavailable", 503],
      ["AccessDeniedException", 403],
      ["InvalidClientTokenId", 403],
      ["QueueDoesNotExist", 400],
      ["KmsAccessDenied", 400],
    ] as const
  ) {
    assert.equal(permanentRefusal(error(name, status)), null, `${name} ${status}`);
  }
  assert.equal(permanentRefusal(new TypeError("fetch failed")), null, "no answer at all");
});
