// The queue's transitions as the requests they build: pure, no DynamoDB, no permissions.
import assert from "node:assert/strict";
import { executionTables } from "../../src/core/table_specs.ts";
import {
  adopted,
  bringBackInput,
  dropped,
  failed,
  headToHeld,
  locate,
  retried,
  type RowAt,
  setApartItems,
  STILL_HEAD,
} from "../../src/execution/queue/_transitions.ts";
import { partition } from "../../src/execution/queue/_relay_index.ts";

const tables = executionTables("t");
const entry: RowAt = locate(tables, "outbox", 42);
const timer: RowAt = locate(tables, "timers", { executionId: "e", path: "p", fireAt: 1000.5 });

Deno.test("fail: a failed entry waits in a waiting partition, ordered by its retry time, only while it is there", () => {
  const update = failed(
    entry,
    "outbox",
    { attempts: 2, retryAt: 1_700_000_060, error: "down" },
    1e9,
  );
  assert.equal(update.TableName, "t_outbox");
  assert.deepEqual(update.Key, { seq: { N: "42" } });
  assert.equal(update.ConditionExpression, "attribute_exists(#k)");
  assert.match(update.UpdateExpression!, /^SET .*#p = :p.* REMOVE #d$/);
  assert.match(update.ExpressionAttributeValues![":p"]!.S!, /^w\d$/);
  assert.deepEqual(update.ExpressionAttributeValues![":o"], { N: "1700000060" });
  assert.deepEqual(update.ExpressionAttributeValues![":r"], { N: "1700000060" });
  assert.deepEqual(update.ExpressionAttributeValues![":a"], { N: "2" });
});

Deno.test("dead-letter: a row out of attempts goes dead, at its key's order, dead since now", () => {
  const update = failed(entry, "outbox", { attempts: 10, retryAt: null, error: "x" }, 1234.5);
  assert.match(update.UpdateExpression!, / REMOVE #r$/);
  assert.match(update.ExpressionAttributeValues![":p"]!.S!, /^d\d$/);
  assert.deepEqual(update.ExpressionAttributeValues![":o"], { N: "42" });
  assert.deepEqual(update.ExpressionAttributeValues![":d"], { N: "1234.5" });
  const unreadable = failed(entry, "outbox", {
    attempts: 1,
    retryAt: null,
    error: "x",
    unreadable: true,
  }, 1);
  assert.deepEqual(unreadable.ExpressionAttributeValues![":u"], { BOOL: true });
});

Deno.test("a timer's failure holds only while it still fires at the time the relay read", () => {
  const update = failed(timer, "timers", { attempts: 1, retryAt: 2000, error: "x" }, 1);
  assert.deepEqual(update.Key, { execution_id: { S: "e" }, path: { S: "p" } });
  assert.equal(update.ConditionExpression, timer.condition);
  assert.match(timer.condition, /#f/);
  assert.deepEqual(update.ExpressionAttributeValues![":o"], { N: "2000" });
  const dead = failed(timer, "timers", { attempts: 9, retryAt: null, error: "x" }, 1);
  assert.deepEqual(dead.ExpressionAttributeValues![":o"], { N: "1000.5" }, "dead: by fire time");
  const retry = retried(timer, "timers").Update!;
  assert.deepEqual(retry.ExpressionAttributeValues![":o"], { N: "1000.5" });
});

Deno.test("retry and drop act only on a dead letter", () => {
  const retry = retried(entry, "outbox").Update!;
  assert.equal(retry.ConditionExpression, "attribute_exists(#d) AND attribute_exists(#k)");
  assert.match(retry.UpdateExpression!, /^SET #p = :p, #o = :o REMOVE #a, #e, #r, #d, #u$/);
  assert.match(retry.ExpressionAttributeValues![":p"]!.S!, /^p\d$/);
  const drop = dropped(timer).Delete!;
  assert.equal(drop.ConditionExpression, `attribute_exists(#d) AND ${timer.condition}`);
  assert.equal(drop.ExpressionAttributeNames!["#d"], "dead_at");
});

Deno.test("hold: entries move behind their target's head only while the head holds it, each from where it was read, listed on the hold", () => {
  const items = setApartItems(tables, "T", "7", [{ seq: "8", from: "p0" }, {
    seq: "9",
    from: "p1",
  }]);
  assert.equal(items.length, 4);
  assert.equal(items[0]!.ConditionCheck!.ConditionExpression, STILL_HEAD);
  assert.deepEqual(items[0]!.ConditionCheck!.Key, { seq: { N: "7" } });
  for (const [i, from] of [[1, "p0"], [2, "p1"]] as const) {
    const move = items[i]!.Update!;
    assert.equal(move.ConditionExpression, "#p = :from");
    assert.deepEqual(move.ExpressionAttributeValues![":from"], { S: from });
    assert.deepEqual(move.ExpressionAttributeValues![":p"], { S: partition("h", "T") });
  }
  const hold = items[3]!.Update!;
  assert.equal(hold.TableName, "t_counters");
  assert.equal(hold.UpdateExpression, "ADD #s :s");
  assert.equal(hold.ExpressionAttributeNames!["#s"], "held");
  assert.deepEqual(hold.ExpressionAttributeValues![":s"], { NS: ["8", "9"] });
});

Deno.test("release: a held entry goes back to pending only if it is still held where it was", () => {
  const move = bringBackInput(tables, "9", partition("h", "T"));
  assert.equal(move.ConditionExpression, "#p = :from");
  assert.match(move.ExpressionAttributeValues[":p"]!.S!, /^p\d$/);
  assert.deepEqual(move.ExpressionAttributeValues[":o"], { N: "9" });
});

Deno.test("adopt: another writer's row joins the pending partitions unless adopted, acknowledged or re-scheduled meanwhile", () => {
  const row = { seq: { N: "5" }, target_id: { S: "T" }, event: { S: "{}" } };
  const entryAdoption = adopted(tables, "outbox", row);
  assert.equal(
    entryAdoption.ConditionExpression,
    "attribute_not_exists(#p) AND attribute_exists(#k)",
  );
  const timerRow = { execution_id: { S: "e" }, path: { S: "p" }, fire_at: { N: "1000" } };
  const timerAdoption = adopted(tables, "timers", timerRow);
  assert.equal(timerAdoption.ConditionExpression, "attribute_not_exists(#p) AND #f = :f");
  assert.deepEqual((timerAdoption.ExpressionAttributeValues as Record<string, unknown>)[":f"], {
    N: "1000",
  });
  assert.deepEqual(timerAdoption.ExpressionAttributeValues[":o"], { N: "1000" });
});

Deno.test("a head behind a lower head becomes a held entry in one operation on its hold", () => {
  const listed = headToHeld({ tables }, "T", "9", true).Update!;
  assert.equal(listed.UpdateExpression, "DELETE #s :s ADD #l :s");
  assert.deepEqual(listed.ExpressionAttributeNames, { "#s": "heads", "#l": "held" });
  assert.deepEqual(listed.ExpressionAttributeValues, { ":s": { NS: ["9"] } });
  assert.equal(headToHeld({ tables }, "T", "9", false).Update!.UpdateExpression, "DELETE #s :s");
});
