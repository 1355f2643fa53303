// What reaches a Python worker is what harel's pydantic models read: a corpus of odd strings and
// times, published (the SQS message body) and committed (the stored execution and outbox event),
// then read by pydantic 2 models with harel's Event and Execution fields
// (tests/_support/harel_models.py). What this module takes, they read; what they refuse, this
// module refuses first, naming the path.
import assert from "node:assert/strict";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newEvent, newExecution } from "../../mod.ts";
import { MemoryStore } from "../../src/testing.ts";
import { FleetClient } from "../../src/sqs.ts";
import { messageBody } from "../../src/sqs/_wire.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";
import { freshQueue, harelReads, readQueue } from "../_support/sqs.ts";

const THUMB = "👍";

/** Strings of every odd kind, and whether harel's models read them. */
const STRINGS: [string, string, boolean][] = [
  ["ascii", "plain", true],
  ["accents and CJK", "déjà vu 中文", true],
  ["a pair (astral)", THUMB, true],
  ["a lone high surrogate", THUMB.slice(0, 1), false],
  ["a lone low surrogate", THUMB.slice(1), false],
  ["a lone surrogate inside text", `a${THUMB.slice(0, 1)}b`, false],
  ["a pair reversed", `${THUMB.slice(1)}${THUMB.slice(0, 1)}`, false],
  ["U+FFFD", "\uFFFD", true],
  ["line and paragraph separators", "\u2028\u2029", true],
  ["NUL and controls", "\0\x01\x1f", true],
  ["empty", "", true],
];

/** Times of every odd kind, and whether harel's Event model reads them. */
const TIMES: [string, boolean][] = [
  ["2026-01-31T12:00:00Z", true],
  ["2026-01-31T12:00:00.123Z", true],
  ["2026-01-31T12:00:00.1234567+02:00", true],
  ["2026-01-31T12:00:00+23:59", true],
  ["2026-01-31T12:00:00-23:59", true],
  ["2026-01-31T12:00:00+2359", true],
  ["2026-01-31T12:00:00,5z", true],
  ["2026-01-31 12:00", true],
  ["2024-02-29T12:00:00Z", true],
  ["0050-01-31T12:00:00Z", true],
  ["0001-01-01T00:00:00Z", true],
  ["2026-01-31T12:00:00+24:00", false],
  ["2026-01-31T12:00:00-24:00", false],
  ["2026-01-31T12:00:00+99:99", false],
  ["2026-01-31T12:00:00+12:60", false],
  ["2026-01-31T12:00:00-0960", false],
  ["2026-02-30T12:00:00Z", false],
  ["2100-02-29T12:00:00Z", false],
  ["0000-01-31T12:00:00Z", false],
  ["2026-01-31T12:00:60Z", false],
  ["2026-01-31T24:00:00Z", false],
  ["yesterday", false],
];

/** What JSON.stringify would have sent or stored, for the model to judge. */
function naive(value: unknown): string {
  return JSON.stringify(value);
}

Deno.test("harel's Event model reads every message body publish() takes, and refuses what it refuses", async () => {
  const bodies: { name: string; takes: boolean; text: string; error?: string }[] = [];
  for (const [name, s, reads] of STRINGS) {
    for (
      const [where, event] of [
        ["a data value", newEvent("k", { note: s })],
        ["a data key", newEvent("k", { [s || "_"]: 1 })],
        ["a nested value", newEvent("k", { list: [{ deep: s }] })],
        ["the kind", newEvent(s || "k")],
      ] as const
    ) {
      let text: string, error: string | undefined;
      try {
        text = messageBody(event);
      } catch (e) {
        text = naive(event);
        error = (e as Error).message;
      }
      assert.equal(error === undefined, reads, `${name} in ${where}: ${error}`);
      bodies.push({ name: `${name} in ${where}`, takes: reads, text, error });
    }
  }
  for (const [time, reads] of TIMES) {
    const event = { ...newEvent("k"), created_time: time };
    let text: string, error: string | undefined;
    try {
      text = messageBody(event);
    } catch (e) {
      text = naive(event);
      error = (e as Error).message;
    }
    assert.equal(error === undefined, reads, `${time}: ${error}`);
    bodies.push({ name: time, takes: reads, text, error });
  }
  const answers = await harelReads(bodies.map((b) => ({ model: "Event", text: b.text })));
  for (const [i, body] of bodies.entries()) {
    const answer = answers[i]!;
    assert.equal(answer.ok, body.takes, `${body.name}: pydantic ${JSON.stringify(answer)}`);
    if (answer.ok) assert.equal(answer.dump, body.text, `${body.name}: pydantic's own dump`);
  }
  // The refusals name the path.
  assert.throws(
    () => messageBody(newEvent("k", { list: [{ deep: THUMB.slice(0, 1) }] })),
    /event\.data\.list\[0\]\.deep holds a lone UTF-16 surrogate/,
  );
  assert.throws(
    () => messageBody({ ...newEvent("k"), created_time: "2026-01-31T12:00:00+24:00" }),
    /event\.created_time has the offset \+24:00: an offset must be within ±23:59/,
  );
});

Deno.test("harel's Execution and Event models read every document commit() takes; it refuses the rest, naming the path", async () => {
  const prefix = uniqueName("t");
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
  });
  using client = testClient();
  const stored = async (table: string, key: Record<string, { S: string } | { N: string }>) => {
    const { Item } = await client.send(
      new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }),
    );
    return Item!;
  };
  const documents: { name: string; model: "Event" | "Execution"; takes: boolean; text: string }[] =
    [];
  for (const [name, s, reads] of STRINGS) {
    const exe = newExecution({ definition_id: "d", context: { note: s, [s || "_"]: "key" } });
    const event = newEvent("k", { note: s });
    const commit = store.commit(exe, { emits: [{ target: exe.id, event }] });
    if (!reads) {
      await assert.rejects(commit, /exe\.context(\.note)? (holds|has the key)/, name);
      const alone = newExecution({ definition_id: "d" });
      await store.save(alone);
      await assert.rejects(
        store.commit(alone, { emits: [{ target: null, event }] }),
        /changes\.emits\[0\]\.event\.data\.note holds a lone UTF-16 surrogate/,
        name,
      );
      assert.deepEqual(await store.pendingOutbox(), [], `${name}: nothing was written`);
      documents.push({ name, model: "Execution", takes: false, text: naive(exe) });
      documents.push({ name, model: "Event", takes: false, text: naive(event) });
      continue;
    }
    const { outbox } = await commit;
    const item = await stored(store.tables.executions.name, { id: { S: exe.id } });
    const row = await stored(store.tables.outbox.name, { seq: { N: String(outbox[0]) } });
    documents.push({ name, model: "Execution", takes: true, text: item.data!.S! });
    documents.push({ name, model: "Event", takes: true, text: row.event!.S! });
    await store.ackOutbox(outbox);
  }
  for (const [time, reads] of TIMES) {
    const exe = newExecution({ definition_id: "d" });
    const event = { ...newEvent("k"), created_time: time };
    exe.deferred = [event];
    if (!reads) {
      await assert.rejects(store.save(exe), /exe\.deferred\[0\]\.created_time/, time);
      const alone = newExecution({ definition_id: "d" });
      await store.save(alone);
      await assert.rejects(
        store.commit(alone, {
          emits: [{ target: null, event: { ...newEvent("k"), received_time: time } }],
        }),
        /changes\.emits\[0\]\.event\.received_time/,
        time,
      );
      documents.push({ name: time, model: "Execution", takes: false, text: naive(exe) });
      continue;
    }
    await store.save(exe);
    const item = await stored(store.tables.executions.name, { id: { S: exe.id } });
    documents.push({ name: time, model: "Execution", takes: true, text: item.data!.S! });
  }
  const answers = await harelReads(documents);
  for (const [i, doc] of documents.entries()) {
    assert.equal(
      answers[i]!.ok,
      doc.takes,
      `${doc.name} as ${doc.model}: pydantic ${JSON.stringify(answers[i])}`,
    );
  }
});

Deno.test("save() and the MemoryStore twin refuse a lone surrogate too, naming the path", async () => {
  const lone = THUMB.slice(0, 1);
  for (const store of [new MemoryStore()]) {
    await assert.rejects(
      store.save(newExecution({ definition_id: "d", context: { a: [{ b: lone }] } })),
      /exe\.context\.a\[0\]\.b holds a lone UTF-16 surrogate/,
    );
    const exe = newExecution({ definition_id: "d" });
    await store.save(exe);
    await assert.rejects(
      store.commit(exe, { trace: { note: lone } }),
      /changes\.trace\.note holds a lone UTF-16 surrogate/,
    );
    await assert.rejects(
      store.commit(exe, {
        spawns: [{ childId: "c", rootPath: "r", context: { [lone]: 1 } }],
      }),
      /changes\.spawns\[0\]\.context has the key/,
    );
  }
});

Deno.test("every FleetClient call refuses a lone surrogate before anything is sent", async () => {
  const lone = THUMB.slice(0, 1);
  const store = new MemoryStore();
  await using queue = await freshQueue();
  const fleet = new FleetClient({ store, queue });
  const exe = await fleet.create("d");
  await readQueue(queue, 0.5); // its Start
  await assert.rejects(
    fleet.create("d", { context: { note: lone } }),
    /context\.note holds a lone/,
  );
  await assert.rejects(fleet.create(`d${lone}`), /definitionId holds a lone UTF-16 surrogate/);
  await assert.rejects(
    fleet.send(exe.id, newEvent("k", { note: lone })),
    /event\.data\.note holds a lone/,
  );
  await assert.rejects(fleet.send(exe.id, newEvent(lone)), /event\.kind holds a lone/);
  await assert.rejects(
    fleet.send(exe.id, { ...newEvent("k"), created_time: "2026-01-31T12:00:00+99:99" }),
    /event\.created_time has the offset \+99:99/,
  );
  await assert.rejects(fleet.cancel(exe.id, { reason: { why: lone } }), /reason\.why holds a lone/);
  for (const call of [fleet.terminate, fleet.suspend, fleet.resume, fleet.cancel]) {
    await assert.rejects(call.call(fleet, `e${lone}`), /executionId/);
  }
  assert.deepEqual(await readQueue(queue, 0.5), [], "nothing was published");
  assert.equal((await store.load(exe.id))?.status, "PENDING");
  assert.equal((await store.listExecutions()).items.length, 1);
});
