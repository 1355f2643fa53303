// Load with injected faults, invariants checked against a model built from what each call said.
// FAULT_SEED=n repeats a run's fault schedule; the seed is printed on failure.
import assert from "node:assert/strict";
import { DynamoDBClient, PutItemCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import {
  CommitOutcomeUnknown,
  DynamoDBStateStore,
  DynamoDBStore,
  type Execution,
  newEvent,
  newExecution,
  StoreConflict,
  type TimerChange,
} from "../../mod.ts";
import { endpoint, freshStateStore, freshStore, testClient } from "../_support/env.ts";
import { type Fault, FaultProxy, seededRandom } from "../_support/fault_proxy.ts";

const SEED = Number(Deno.env.get("FAULT_SEED") ?? 20261130);
const INSTANCES = 8;
const COMMITS_PER_INSTANCE = 200;
const EXECUTIONS = 40;
const TRACE_MAX = 5;

/** About 9% of requests: lost answers, resets, cut answers and delays. */
function faultSchedule(random: () => number) {
  return (): Fault => {
    const r = random();
    if (r < 0.03) return { kind: "drop-response" };
    if (r < 0.05) return { kind: "reset" };
    if (r < 0.06) return { kind: "truncate", bytes: Math.floor(random() * 200) };
    if (r < 0.09) return { kind: "delay", ms: 10 + Math.floor(random() * 60) };
    return { kind: "pass" };
  };
}

function proxiedClient(proxy: FaultProxy, maxAttempts = 3): DynamoDBClient {
  return new DynamoDBClient({
    endpoint: proxy.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts,
  });
}

/** Retries a read until it gets through the faults. */
async function persist<T>(action: () => Promise<T>): Promise<T> {
  for (let attempt = 0;; attempt++) {
    try {
      return await action();
    } catch (error) {
      if (attempt >= 50) throw error;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

async function withSeed(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    console.error(`fault load test failed with FAULT_SEED=${SEED}`);
    throw error;
  }
}

interface Applied {
  commitId: string;
  version: number;
  emits: number;
  spawns: number;
  timers: TimerChange[];
}

Deno.test(`8 store instances x 200 commits over 40 executions with injected faults lose, duplicate and tear nothing (seed ${SEED})`, () =>
  withSeed(async () => {
    const direct = await freshStore({ traceMax: TRACE_MAX });
    const prefix = direct.tables.executions.name.replace(/_executions$/, "");
    const random = seededRandom(SEED);
    const nextFault = faultSchedule(random);
    await using proxy = new FaultProxy(endpoint(), { request: nextFault });
    // Half the instances give up at the first fault, so unknown outcomes and failed seq
    // reservations happen too, not only retries that succeed.
    const clients = Array.from(
      { length: INSTANCES },
      (_, w) => proxiedClient(proxy, w % 2 ? 1 : 3),
    );
    const stores = clients.map((client, w) =>
      new DynamoDBStore(client, {
        prefix,
        traceMax: TRACE_MAX,
        seqBlockSize: 7,
        ambiguousRetries: w % 2 ? 0 : 3,
      })
    );
    const ids = Array.from({ length: EXECUTIONS }, (_, i) => `exe-${SEED}-${i}`);
    const applied = new Map<string, Applied[]>(ids.map((id) => [id, []]));
    const counts = {
      attempted: 0,
      succeeded: 0,
      conflicts: 0,
      unknown: 0,
      unknownApplied: 0,
      otherErrors: 0,
      appliedAfterError: 0,
    };

    const worker = async (w: number) => {
      const store = stores[w]!;
      const pick = seededRandom(SEED * 31 + w);
      for (let i = 0; i < COMMITS_PER_INSTANCE; i++) {
        const id = ids[Math.floor(pick() * ids.length)]!;
        const exe: Execution = (await persist(() => store.load(id))) ??
          newExecution({ id, definition_id: "load" });
        const commitId = `${w}.${i}`;
        const version = exe.version + 1;
        exe.context = { last: commitId };
        const emits = 1 + Math.floor(pick() * 2);
        const spawns = Math.floor(pick() * 2);
        const timers: TimerChange[] = pick() < 0.5
          ? [{ action: "schedule", path: `p${Math.floor(pick() * 3)}`, fireAt: version }]
          : [{ action: "cancel", path: `p${Math.floor(pick() * 3)}` }];
        const record: Applied = { commitId, version, emits, spawns, timers };
        counts.attempted++;
        try {
          await store.commit(exe, {
            emits: Array.from({ length: emits }, (_, k) => ({
              target: null,
              event: newEvent("load", { id, commitId, version, k }),
            })),
            spawns: Array.from({ length: spawns }, (_, k) => ({
              childId: `${commitId}.${k}`,
              rootPath: "fork",
              context: { id, commitId, version, k },
            })),
            processedEventId: commitId,
            timers,
            trace: { commitId, version },
          });
          counts.succeeded++;
          applied.get(id)!.push(record);
          continue;
        } catch (error) {
          if (error instanceof StoreConflict) {
            counts.conflicts++;
            continue;
          }
          if (error instanceof CommitOutcomeUnknown) counts.unknown++;
          else counts.otherErrors++;
          // Read back to learn whether it was applied: its dedupe mark is written with it and,
          // unlike the document, no later commit of another instance overwrites it.
          const wasApplied = await persist(() => store.isProcessed(id, commitId));
          if (!wasApplied) continue;
          if (error instanceof CommitOutcomeUnknown) counts.unknownApplied++;
          else counts.appliedAfterError++;
          applied.get(id)!.push(record);
        }
      }
    };
    await Promise.all(Array.from({ length: INSTANCES }, (_, w) => worker(w)));
    clients.forEach((client) => client.destroy());
    await proxy.close();

    const faultShare = proxy.stats.faults / proxy.stats.requests;
    console.log(
      `seed ${SEED}: ${proxy.stats.requests} requests, ${proxy.stats.faults} faults (${
        (faultShare * 100).toFixed(1)
      }%: ${JSON.stringify(proxy.stats.byKind)}); commits ${JSON.stringify(counts)}`,
    );
    assert.ok(
      faultShare >= 0.05,
      `only ${(faultShare * 100).toFixed(1)}% of requests were faulted`,
    );
    assert.equal(
      counts.appliedAfterError,
      0,
      "an error that claimed failure hid an applied commit",
    );

    // Versions: each execution's version is its number of applied commits, in order.
    for (const [id, commits] of applied) {
      commits.sort((a, b) => a.version - b.version);
      assert.deepEqual(
        commits.map((c) => c.version),
        commits.map((_, i) => i + 1),
        `versions of ${id}`,
      );
      assert.equal(
        (await direct.load(id))?.version ?? 0,
        commits.length,
        `stored version of ${id}`,
      );
    }
    const appliedById = new Map([...applied.values()].flat().map((c) => [c.commitId, c]));

    // Outbox: exactly the emits of applied commits, none lost, none twice; seqs rise per
    // execution in commit order.
    const outbox = await direct.pendingOutbox({ limit: Infinity });
    assert.equal(new Set(outbox.map((e) => e.seq)).size, outbox.length, "outbox seqs are unique");
    const emitted = new Map<string, number>();
    for (const entry of outbox) {
      const { commitId } = entry.event.data as { commitId: string };
      assert.ok(
        appliedById.has(commitId),
        `outbox entry of a commit that was not applied: ${commitId}`,
      );
      emitted.set(commitId, (emitted.get(commitId) ?? 0) + 1);
    }
    for (const c of appliedById.values()) {
      assert.equal(emitted.get(c.commitId) ?? 0, c.emits, `outbox entries of ${c.commitId}`);
    }
    const inOrder = (entries: { seq: number; id: string; version: number; k: number }[]) => {
      const byExe = Map.groupBy(entries, (e) => e.id);
      for (const [id, list] of byExe) {
        for (let i = 1; i < list.length; i++) {
          const [a, b] = [list[i - 1]!, list[i]!];
          assert.ok(
            a.version < b.version || (a.version === b.version && a.k < b.k),
            `seq order of ${id}: ${JSON.stringify([a, b])}`,
          );
        }
      }
    };
    inOrder(
      outbox.map((e) => ({
        seq: e.seq,
        ...(e.event.data as { id: string; version: number; k: number }),
      })),
    );

    // Spawns: the same.
    const spawns = await direct.pendingSpawns({ limit: Infinity });
    assert.equal(new Set(spawns.map((s) => s.seq)).size, spawns.length);
    const spawned = Map.groupBy(spawns, (s) => (s.context as { commitId: string }).commitId);
    for (const c of appliedById.values()) {
      assert.equal(spawned.get(c.commitId)?.length ?? 0, c.spawns);
    }
    assert.equal(spawns.length, [...appliedById.values()].reduce((n, c) => n + c.spawns, 0));
    inOrder(
      spawns.map((s) => ({
        seq: s.seq,
        ...(s.context as { id: string; version: number; k: number }),
      })),
    );

    // Trace rings: exactly the last TRACE_MAX steps, contiguous, one per applied commit.
    for (const [id, commits] of applied) {
      const trace = await direct.readTrace(id);
      const expected = commits.slice(-TRACE_MAX).map((c) => ({
        commitId: c.commitId,
        version: c.version,
        index: c.version - 1,
      }));
      assert.deepEqual(trace, expected, `trace of ${id}`);
    }

    // Timers: the last change of each path, in commit order.
    const timers = await direct.dueTimers(1e11, { limit: Infinity });
    for (const [id, commits] of applied) {
      const model = new Map<string, number>();
      for (const c of commits) {
        for (const t of c.timers) {
          t.action === "schedule" ? model.set(t.path, t.fireAt) : model.delete(t.path);
        }
      }
      const stored = timers.filter((t) => t.executionId === id).map((t) =>
        [t.path, t.fireAt] as const
      );
      assert.deepEqual(new Map(stored), model, `timers of ${id}`);
    }

    // Dedupe marks: one per applied commit, none for the others.
    const client = testClient();
    try {
      const marks = new Set<string>();
      let start: Record<string, { S?: string }> | undefined;
      do {
        const page = await client.send(
          new ScanCommand({
            TableName: direct.tables.processed.name,
            ExclusiveStartKey: start as never,
          }),
        );
        for (const item of page.Items ?? []) marks.add(item.event_id!.S!);
        start = page.LastEvaluatedKey as never;
      } while (start);
      assert.deepEqual([...marks].sort(), [...appliedById.keys()].sort());
    } finally {
      client.destroy();
      await direct.close();
    }
  }));

Deno.test(`concurrent hset/hdel with injected faults end in the model's hash (seed ${SEED})`, () =>
  withSeed(async () => {
    const state = await freshStateStore();
    const random = seededRandom(SEED + 1);
    await using proxy = new FaultProxy(endpoint(), { request: faultSchedule(random) });
    const clients = Array.from({ length: 8 }, () => proxiedClient(proxy));
    const raw = testClient();
    try {
      // One key starts in the legacy layout: its old fields must survive the migration race.
      await raw.send(
        new PutItemCommand({
          TableName: state.tableName,
          Item: { pk: { S: "legacy" }, value: { S: JSON.stringify({ old: 1, kept: "yes" }) } },
        }),
      );
      const model = new Map<string, Map<string, number>>([
        ["fresh", new Map()],
        ["legacy", new Map<string, number>([["old", 1], ["kept", "yes" as never]])],
      ]);
      const worker = async (w: number) => {
        const store = new DynamoDBStateStore(clients[w]!, { tableName: state.tableName });
        const pick = seededRandom(SEED * 17 + w);
        for (let i = 0; i < 60; i++) {
          const key = pick() < 0.5 ? "fresh" : "legacy";
          const field = `w${w}.f${Math.floor(pick() * 6)}`; // each worker owns its fields
          if (pick() < 0.7) {
            await persist(() => store.hset(key, field, i));
            model.get(key)!.set(field, i);
          } else {
            await persist(() => store.hdel(key, field));
            model.get(key)!.delete(field);
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
      console.log(
        `seed ${SEED}: state store ${proxy.stats.requests} requests, ${proxy.stats.faults} faults`,
      );
      assert.ok(proxy.stats.faults / proxy.stats.requests >= 0.05);
      for (const [key, fields] of model) {
        assert.deepEqual({ ...await state.hgetall(key) }, Object.fromEntries(fields), key);
      }
    } finally {
      clients.forEach((client) => client.destroy());
      raw.destroy();
      await state.close();
    }
  }));
