// State-store TTLs are seconds from now (Redis EXPIRE), at most 10 years: a TTL that looks like
// milliseconds or an absolute epoch time (EXPIREAT) is refused by name, before anything is
// sent; the expiry is whole epoch seconds, rounded up.
import assert from "node:assert/strict";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStateStore, type StateStore } from "../../mod.ts";
import { MemoryStateStore } from "../../src/testing.ts";
import { countingClient, uniqueName } from "../_support/env.ts";

const TEN_YEARS = 315_360_000;

/** Every unit mix-up, on `store`, with the words its refusal must say. */
async function refusesMixUps(store: StateStore): Promise<void> {
  await store.set("k", "kept");
  const epochSeconds = Math.floor(Date.now() / 1000) + 3600; // EXPIREAT's argument
  const epochMillis = Date.now() + 3_600_000; // Date.now() + an hour
  const weekInMillis = 7 * 86_400_000;
  for (
    const [seconds, says] of [
      [epochSeconds, /absolute epoch time in seconds \(Redis's EXPIREAT where EXPIRE is meant/],
      [epochMillis, /looks like milliseconds \(Date\.now\(\) is epoch milliseconds\)/],
      [weekInMillis, /or a duration in milliseconds \(divide it by 1000\)/],
      [TEN_YEARS + 1, /at most 315360000 \(10 years\)/],
    ] as const
  ) {
    await assert.rejects(store.expire("k", seconds), (error: Error) => {
      assert.ok(error instanceof RangeError, String(error));
      assert.match(error.message, /^seconds is \d+ seconds \([\d.e+]+ years\)/);
      assert.match(error.message, says);
      return true;
    });
    await assert.rejects(store.set("k", "lost", { ttl: seconds }), (error: Error) => {
      assert.ok(error instanceof RangeError, String(error));
      assert.match(error.message, /^options\.ttl is \d+ seconds/);
      assert.match(error.message, says);
      return true;
    });
  }
  assert.equal(await store.get("k"), "kept", "a refused set wrote nothing");
  assert.equal(await store.ttl("k"), null, "a refused expire set no TTL");
  // The longest accepted TTL is exactly 10 years.
  assert.equal(await store.expire("k", TEN_YEARS), true);
  assert.ok((await store.ttl("k"))! >= TEN_YEARS - 2);
}

Deno.test("set() and expire() refuse TTLs that look like milliseconds or an epoch time", async (t) => {
  await t.step("DynamoDBStateStore, before sending anything", async () => {
    using counting = countingClient();
    const state = new DynamoDBStateStore(counting.client, { tableName: uniqueName("ttl") });
    await state.ensureTable();
    await refusesMixUps(state);
    const sent = counting.calls.filter((name) => !/Describe|Create|UpdateTimeToLive/.test(name));
    // set kept, get, ttl, expire of ten years, ttl: nothing for the eight refusals.
    assert.equal(sent.length, 5, sent.join(", "));
  });
  await t.step("MemoryStateStore", () => refusesMixUps(new MemoryStateStore()));
});

Deno.test("an expiry is whole epoch seconds rounded up: ttl 2 lives at least 2 s, under 3 s", async (t) => {
  await t.step("MemoryStateStore on a fake clock", async () => {
    for (const start of [1_000_000, 1_000_000.001, 1_000_000.5, 1_000_000.999]) {
      let now = start * 1000;
      const state = new MemoryStateStore({ now: () => now });
      await state.set("k", 1, { ttl: 2 });
      now = (start + 2) * 1000 - 1; // 1 ms short of 2 s: alive
      assert.equal(await state.get("k"), 1, `set at ${start}`);
      now = Math.ceil(start + 2) * 1000 - 1; // the last ms before the rounded-up expiry
      assert.equal(await state.get("k"), 1, `set at ${start}`);
      now = Math.ceil(start + 2) * 1000; // the expiry itself: gone, less than 3 s after
      assert.equal(await state.get("k"), null, `set at ${start}`);
      assert.ok(Math.ceil(start + 2) - start < 3);
    }
  });
  await t.step("DynamoDBStateStore stores ceil(now + ttl)", async () => {
    using counting = countingClient();
    const state = new DynamoDBStateStore(counting.client, { tableName: uniqueName("ttl") });
    await state.ensureTable();
    const before = Date.now() / 1000;
    await state.set("k", 1, { ttl: 2 });
    const after = Date.now() / 1000;
    const { Item } = await counting.client.send(
      new GetItemCommand({ TableName: state.tableName, Key: { pk: { S: "k" } } }),
    );
    const stored = Number(Item?.ttl?.N);
    assert.ok(Number.isInteger(stored), `ttl ${Item?.ttl?.N} is whole seconds`);
    assert.ok(stored >= Math.ceil(before + 2) && stored <= Math.ceil(after + 2), String(stored));
  });
});
