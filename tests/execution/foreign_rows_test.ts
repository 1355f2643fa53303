// Another writer's rows that no pass can use — too large to take the relay index's attributes, an
// outbox row with no target, a timer whose fire_at is a string — are set aside by key with why,
// shown by deadLetters() and backlog(), and the feed goes on past them. The rows are Put as the
// Python store Puts them (whole items, its attributes only), each pass in a fresh store.
import assert from "node:assert/strict";
import { PutItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newEvent, relayOutbox, sweepTimers } from "../../mod.ts";
import { directEndpoint, ownRegion, testClient, uniqueName } from "../_support/env.ts";
import { heapProbe } from "../_support/heap.ts";

const REGION = ownRegion("foreign");

/** The next `count` seqs of the shared counter, as the Python store takes them. */
async function seqs(store: DynamoDBStore, count: number): Promise<number[]> {
  using client = testClient(REGION);
  const out = await client.send(
    new UpdateItemCommand({
      TableName: store.tables.counters.name,
      Key: { id: { S: "outbox" } },
      UpdateExpression: "ADD n :c",
      ExpressionAttributeValues: { ":c": { N: String(count) } },
      ReturnValues: "UPDATED_NEW",
    }),
  );
  const last = Number(out.Attributes!.n!.N);
  return Array.from({ length: count }, (_, i) => last - count + 1 + i);
}

/** An event of `bytes` UTF-8 bytes of JSON. */
function eventOf(bytes: number): string {
  const event = JSON.stringify(newEvent("big", { pad: "" }));
  return event.replace('"pad":""', `"pad":"${"x".repeat(bytes - event.length)}"`);
}

Deno.test("another writer's rows no pass can use are set aside by key with why, and every other row still goes out", async () => {
  const prefix = uniqueName("foreign");
  const open = (ensureTables = false) =>
    DynamoDBStore.create({
      endpoint: directEndpoint(),
      region: REGION,
      prefix,
      otherWriters: true,
      ensureTables,
    });
  await using store = await open(true);
  using client = testClient(REGION);
  const put = (table: string, Item: Record<string, unknown>) =>
    client.send(new PutItemCommand({ TableName: table, Item: Item as never }));
  const [huge, untargeted, ...rest] = await seqs(store, 22);
  // 400 KB is 409,600 bytes of names and values: 30 bytes short of it, no room for the index's
  // attributes and a chain, room for a dead place.
  const text = eventOf(409_600 - 30 - "seq".length - 3 - "target_id".length - 1 - "event".length);
  await put(store.tables.outbox.name, {
    seq: { N: String(huge) },
    target_id: { S: "T" },
    event: { S: text },
  });
  await put(store.tables.outbox.name, {
    seq: { N: String(untargeted) },
    event: { S: JSON.stringify(newEvent("lost")) },
  });
  for (const seq of rest) {
    await put(store.tables.outbox.name, {
      seq: { N: String(seq) },
      target_id: { S: `t-${seq % 3}` },
      event: { S: JSON.stringify(newEvent("ok", { seq })) },
    });
  }
  await put(store.tables.timers.name, {
    execution_id: { S: "x" },
    path: { S: "main.wait" },
    fire_at: { S: "1700000000" },
  });

  const delivered: number[] = [];
  const passes = async () => {
    for (let pass = 0; pass < 3; pass++) {
      await using fresh = await open();
      await relayOutbox(fresh, (entry) => void delivered.push(entry.seq));
      await sweepTimers(fresh, () => {});
    }
  };
  await passes();
  // The feed went on past them: what the other writer commits next goes out too.
  const later = await seqs(store, 5);
  for (const seq of later) {
    await put(store.tables.outbox.name, {
      seq: { N: String(seq) },
      target_id: { S: "later" },
      event: { S: JSON.stringify(newEvent("ok", { seq })) },
    });
  }
  await passes();
  assert.deepEqual(delivered.sort((a, b) => a - b), [...rest, ...later], "every usable row");
  await using fresh = await open();
  const dead = await fresh.deadLetters("outbox");
  assert.deepEqual(
    dead.map((letter) => [letter.key, letter.lastError]).sort(),
    [
      [huge, "unreadable: too large to adopt (DynamoDB's 400 KB item limit)"],
      [untargeted, "unreadable: no target_id (a string, or NULL)"],
    ].sort(),
  );
  const timers = await fresh.deadLetters("timers");
  assert.deepEqual(timers.map((letter) => [letter.raw.path, letter.lastError]), [
    ["main.wait", "unreadable: fire_at is not a number"],
  ]);
  assert.equal((await fresh.backlog("outbox")).dead, 2);
  assert.equal((await fresh.backlog("timers")).dead, 1);
});

Deno.test("pendingOutbox({ limit: 3 }) over 240 of another writer's entries of 200 KB holds what it returns, not their backlog", async () => {
  const prefix = uniqueName("heavy");
  {
    await using store = await DynamoDBStore.create({
      endpoint: directEndpoint(),
      region: REGION,
      prefix,
      otherWriters: true,
    });
    using client = testClient(REGION);
    const text = eventOf(200_000);
    const left = await seqs(store, 240);
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let seq = left.shift(); seq !== undefined; seq = left.shift()) {
        await client.send(
          new PutItemCommand({
            TableName: store.tables.outbox.name,
            Item: { seq: { N: String(seq) }, target_id: { S: `t-${seq % 7}` }, event: { S: text } },
          }),
        );
      }
    }));
  }
  using client = testClient(REGION);
  const probe = heapProbe(client);
  const store = new DynamoDBStore(client, { prefix, otherWriters: true });
  try {
    const { result, grownBytes } = await probe.measure(() => store.pendingOutbox({ limit: 3 }));
    assert.equal(result.length, 3);
    console.log(`heap grown: ${(grownBytes / 1e6).toFixed(1)} MB`);
    // The 3 entries it returns (0.6 MB as text, more parsed) and one page of the stream: 100
    // records, 20 MB here (DynamoDB Local does not cut a page at AWS's 1 MB), 33 MB measured with
    // the file alone. 240 entries held at once would be 48 MB of text, twice that parsed.
    assert.ok(grownBytes < 40e6, `grew ${(grownBytes / 1e6).toFixed(1)} MB`);
  } finally {
    await store.close();
  }
});

Deno.test("a relay pass whose signal aborts while its feed round adopts another writer's backlog sends nothing more", async () => {
  const prefix = uniqueName("abort");
  {
    await using store = await DynamoDBStore.create({
      endpoint: directEndpoint(),
      region: REGION,
      prefix,
      otherWriters: true,
    });
    using client = testClient(REGION);
    const event = JSON.stringify(newEvent("ok"));
    for (const seq of await seqs(store, 400)) {
      await client.send(
        new PutItemCommand({
          TableName: store.tables.outbox.name,
          Item: { seq: { N: String(seq) }, target_id: { S: `t-${seq % 40}` }, event: { S: event } },
        }),
      );
    }
  }
  using client = testClient(REGION);
  const stop = new AbortController();
  let adoptions = 0, afterAbort = 0;
  client.middlewareStack.add((next, context) => async (args) => {
    if (stop.signal.aborted) afterAbort++;
    const answer = await next(args);
    if (context.commandName === "UpdateItemCommand" && ++adoptions === 20) stop.abort();
    return answer;
  }, { step: "initialize", name: "abortAfterAdoptions" });
  const store = new DynamoDBStore(client, { prefix, otherWriters: true });
  try {
    const delivered: number[] = [];
    const report = await relayOutbox(store, (e) => void delivered.push(e.seq), {
      signal: stop.signal,
    });
    assert.deepEqual([report.delivered, delivered.length], [0, 0]);
    // What was in flight at the abort, and the lease given back: not the rest of the round.
    assert.ok(afterAbort <= 16 + 1, `${afterAbort} requests after the abort`);
  } finally {
    await store.close();
  }
});

Deno.test("otherWriters turned on over another writer's backlog: one execution's 300 entries to one target go out in seq order", async () => {
  const prefix = uniqueName("backlog");
  // Each pass 31 s later: the scan's end settles for 30 s, the index's lag on AWS.
  let later = 0;
  const open = (otherWriters: boolean, ensureTables = false) =>
    DynamoDBStore.create({
      endpoint: directEndpoint(),
      region: REGION,
      prefix,
      otherWriters,
      ensureTables,
      now: () => Date.now() + later,
    });
  const lane: number[] = [];
  {
    // The tables of a default store (no stream), then the other writer's backlog.
    await using plain = await open(false, true);
    using client = testClient(REGION);
    for (let commit = 0; commit < 6; commit++) {
      for (const seq of await seqs(plain, 50)) {
        lane.push(seq);
        await client.send(
          new PutItemCommand({
            TableName: plain.tables.outbox.name,
            Item: {
              seq: { N: String(seq) },
              target_id: { S: "T" },
              event: { S: JSON.stringify(newEvent("e", { seq })) },
            },
          }),
        );
      }
    }
  }
  await (await open(true, true)).close(); // the mode turned on: the streams, over the backlog
  const delivered: number[] = [];
  for (let pass = 0; pass < 60 && delivered.length < lane.length; pass++) {
    later += 31_000;
    await using fresh = await open(true);
    await relayOutbox(fresh, (entry) => void delivered.push(entry.seq), { limit: 50 });
  }
  assert.equal(delivered.length, lane.length, "every entry went out");
  let inverted = 0;
  for (let i = 0; i < delivered.length; i++) {
    for (let j = i + 1; j < delivered.length; j++) if (delivered[j]! < delivered[i]!) inverted++;
  }
  assert.equal(inverted, 0, `${inverted} pairs out of seq order`);
});
