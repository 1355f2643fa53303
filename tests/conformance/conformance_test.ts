// One conformance suite, two backends: DynamoDB (Local) and the in-memory twins.
import {
  executionStoreConformance,
  MemoryStateStore,
  MemoryStore,
  stateStoreConformance,
} from "../../src/testing.ts";
import { freshStateStore, freshStore, pause } from "../_support/env.ts";

Deno.test("DynamoDBStore passes the execution-store conformance suite", (t) =>
  executionStoreConformance(t, (options) => freshStore(options)));

Deno.test("DynamoDBStore with otherWriters: true passes the execution-store conformance suite", (t) =>
  // With the status feed and the other writers' upkeep, in a database of its own (DynamoDB Local
  // slows every write of a database by its streams).
  executionStoreConformance(
    t,
    (options) => freshStore({ otherWriters: true, region: "eu-conformance-1", ...options }),
  ));

Deno.test("MemoryStore passes the execution-store conformance suite", (t) =>
  executionStoreConformance(t, (options) => Promise.resolve(new MemoryStore(options))));

Deno.test("DynamoDBStateStore passes the state-store conformance suite", (t) =>
  stateStoreConformance(t, async () => {
    // The store's clock (#26): its TTLs run on it, no sleeping.
    let now = Date.now();
    return {
      store: await freshStateStore({ now: () => now }),
      advance: (seconds) => Promise.resolve(void (now += seconds * 1000)),
    };
  }));

Deno.test("DynamoDBStateStore passes the state-store conformance suite in real time too", (t) =>
  stateStoreConformance(t, async () => ({
    store: await freshStateStore(),
    advance: (seconds) => pause(seconds * 1000),
  })));

Deno.test("MemoryStateStore passes the state-store conformance suite", (t) =>
  stateStoreConformance(t, () => {
    let now = Date.now();
    return Promise.resolve({
      store: new MemoryStateStore({ now: () => now }),
      advance: (seconds) => Promise.resolve(void (now += seconds * 1000)),
    });
  }));
