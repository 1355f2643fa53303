// One conformance suite, two backends: DynamoDB (Local) and the in-memory twins.
import {
  executionStoreConformance,
  MemoryStateStore,
  MemoryStore,
  stateStoreConformance,
} from "../../src/testing.ts";
import { freshStateStore, freshStore, ownRegion, pause } from "../_support/env.ts";

/** A database of its own for each DynamoDB run (see `ownRegion`): streamed tables in one. */
const REGION = ownRegion("conf");
const STREAMED_REGION = ownRegion("conf-streams");

Deno.test("DynamoDBStore passes the execution-store conformance suite", (t) =>
  executionStoreConformance(t, (options) => freshStore({ region: REGION, ...options })));

Deno.test("DynamoDBStore with otherWriters: true passes the execution-store conformance suite", (t) =>
  // With the status feed and the other writers' feeds, in a database of its own: DynamoDB Local
  // makes each record written to a stream pay for the stream records written before it.
  executionStoreConformance(
    t,
    (options) => freshStore({ otherWriters: true, region: STREAMED_REGION, ...options }),
  ));

Deno.test("MemoryStore passes the execution-store conformance suite", (t) =>
  executionStoreConformance(t, (options) => Promise.resolve(new MemoryStore(options))));

Deno.test("DynamoDBStateStore passes the state-store conformance suite", (t) =>
  stateStoreConformance(t, async () => {
    // The store's clock: its TTLs run on it, no sleeping.
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
