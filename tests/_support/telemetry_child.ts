// Run by telemetry_test.ts as a child `deno run` with OTEL_DENO=true: store calls whose spans
// the test's OTLP receiver must see. Prints the execution ids it used, as JSON, on stdout.
import {
  DynamoDBStateStore,
  DynamoDBStore,
  newEvent,
  newExecution,
  relayOutbox,
  StoreConflict,
} from "../../mod.ts";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CommitOutcomeUnknown } from "../../mod.ts";
import { endpoint, uniqueName } from "./env.ts";
import { FaultProxy } from "./fault_proxy.ts";

const prefix = uniqueName("otel");
// A long deadline: create() also creates the tables, which a loaded DynamoDB Local takes long over.
const deadlineMs = 180_000;
await using store = await DynamoDBStore.create({ endpoint: endpoint(), prefix, deadlineMs });
await using other = await DynamoDBStore.create({ endpoint: endpoint(), prefix, deadlineMs });

// Committed at the first send.
const plain = newExecution({ definition_id: "otel" });
// Its emit reserves this store's seq block before the other store reserves a later one.
await store.commit(plain, { trace: { step: 1 }, emits: [{ target: null, event: newEvent("a") }] });
await store.load(plain.id);

// A conflict: a copy at the old version loses.
const stale = { ...plain, version: 0 };
try {
  await store.commit(stale);
  throw new Error("the stale commit was not refused");
} catch (error) {
  if (!(error instanceof StoreConflict)) throw error;
}

// A retry: another store (a later seq block) emitted last, so this store's next emit fails the
// execution's seq watermark and is re-sent with a fresh block.
const moved = (await other.load(plain.id))!;
await other.commit(moved, { trace: { step: 2 }, emits: [{ target: null, event: newEvent("b") }] });
const again = (await store.load(plain.id))!;
await store.commit(again, { trace: { step: 3 }, emits: [{ target: null, event: newEvent("c") }] });

// A relay pass: the three emits above are delivered, one of them fails.
let deliveries = 0;
await relayOutbox(store, () => {
  if (deliveries++ === 1) return Promise.reject(new Error("the receiver is down"));
  return Promise.resolve();
}, { limit: Infinity, concurrency: 1 });

await using state = await DynamoDBStateStore.create({
  endpoint: endpoint(),
  tableName: uniqueName("otel_state"),
  deadlineMs,
});
await state.set("k", 1);
await state.get("k");

// Unknown: every answer to the commit is lost, and so is the one re-send.
await using proxy = new FaultProxy(endpoint(), {
  request: ({ operation }) =>
    operation === "TransactWriteItems" ? { kind: "drop-response" } : { kind: "pass" },
});
const lossy = new DynamoDBClient({
  endpoint: proxy.endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
  maxAttempts: 1,
});
const lost = newExecution({ definition_id: "otel" });
try {
  await new DynamoDBStore(lossy, { prefix, ambiguousRetries: 1 }).commit(lost);
  throw new Error("the lost commit did not report an unknown outcome");
} catch (error) {
  if (!(error instanceof CommitOutcomeUnknown)) throw error;
} finally {
  lossy.destroy();
}

console.log(JSON.stringify({ executionId: plain.id, lostId: lost.id }));
