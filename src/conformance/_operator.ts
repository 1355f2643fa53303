// The conformance steps for the operator calls: listings by status, the stuck ones, bulk deletes,
// and one execution inspected with its timers.
import assert from "node:assert/strict";
import { type Execution, newEvent, newExecution, type Status } from "../core/documents.ts";
import { InvalidCursor } from "../core/errors.ts";
import type { ExecutionStore, ListOptions, ListPage } from "../core/types.ts";
import type { DeleteProgress } from "../core/operator_types.ts";
import { rejection, walk } from "./_shared.ts";
import type { Step } from "./_steps.ts";

/** A pause long enough for the next commit to get a later time (ms resolution). */
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

/** Saves executions of `statuses` one after the other (each committed later), oldest first. */
async function saveInOrder(
  store: ExecutionStore,
  specs: { status: Status; definition_id?: string }[],
): Promise<Execution[]> {
  const saved: Execution[] = [];
  for (const spec of specs) {
    const exe = newExecution({ definition_id: "order", ...spec });
    await store.save(exe);
    saved.push(exe);
    await tick();
  }
  return saved;
}

/** Every id a listing returns, page after page, no page over its limit. */
async function walkIds(store: ExecutionStore, options: ListOptions): Promise<string[]> {
  const { seen, sizes } = await walk(store, options);
  assert.ok(sizes.every((n) => n <= (options.limit ?? 100)), `${sizes}`);
  return seen;
}

const newestFirst = (exes: Execution[]) => exes.map((e) => e.id).reverse();

/** The operator steps, in the suite's order. */
export async function operatorSteps(step: Step): Promise<void> {
  await step(
    "listExecutions({ status }) returns the latest to enter the status first, each with updated_at, across pages",
    async (store) => {
      const started = Date.now() / 1000;
      const running = await saveInOrder(store, [
        { status: "RUNNING" },
        { status: "RUNNING", definition_id: "billing" },
        { status: "RUNNING" },
        { status: "RUNNING", definition_id: "billing" },
        { status: "RUNNING" },
      ]);
      const done = await saveInOrder(store, [{ status: "DONE" }, { status: "DONE" }]);
      // A commit that keeps the status keeps the place; entering the status again moves it first.
      await store.save(running[2]!);
      const [first] = running.splice(0, 1);
      first!.status = "SUSPENDED";
      await store.save(first!);
      await tick();
      first!.status = "RUNNING";
      await store.save(first!);
      running.push(first!);
      assert.deepEqual(await walkIds(store, { status: "RUNNING", limit: 2 }), newestFirst(running));
      assert.deepEqual(
        await walkIds(store, { status: ["DONE", "RUNNING"], limit: 3 }),
        [first!.id, ...newestFirst(done), ...newestFirst(running).slice(1)],
      );
      assert.deepEqual(
        await walkIds(store, { status: "RUNNING", definitionId: "billing", limit: 1 }),
        newestFirst(running.filter((e) => e.definition_id === "billing")),
      );
      const page = await store.listExecutions({ status: "RUNNING" });
      const times = page.items.map((s) => s.updated_at!);
      assert.ok(
        times.every((t) => t >= Math.floor(started) && t <= Date.now() / 1000 + 1),
        `${times}`,
      );
      assert.ok(times[0]! > times[1]!, "the execution that re-entered was committed last");
      assert.deepEqual(page.items[0], {
        id: first!.id,
        definition_id: "order",
        status: "RUNNING",
        outcome: null,
        active_path: null,
        version: 3,
        parent_id: null,
        updated_at: times[0],
      });
    },
  );

  await step(
    "listExecutions() with updatedBefore finds the executions not committed since, newest first",
    async (store) => {
      const old = await saveInOrder(store, [
        { status: "RUNNING" },
        { status: "RUNNING" },
        { status: "SUSPENDED" },
      ]);
      const cutoff = (await store.listExecutions({ status: "RUNNING", limit: 1 })).items[0]!
        .updated_at!;
      await tick();
      await saveInOrder(store, [{ status: "RUNNING" }]);
      await store.save(old[0]!); // committed again: no longer stuck
      const stuck = await walkIds(store, {
        status: ["RUNNING", "SUSPENDED"],
        updatedBefore: cutoff + 0.0005,
        limit: 1,
      });
      assert.deepEqual(stuck, [old[1]!.id]);
      assert.deepEqual(
        await walkIds(store, { status: "SUSPENDED", updatedBefore: Date.now() / 1000 + 60 }),
        [old[2]!.id],
      );
      const ms = await rejection(
        store.listExecutions({ status: "RUNNING", updatedBefore: Date.now() }),
      );
      assert.ok(ms instanceof RangeError && /epoch seconds/.test(ms.message), String(ms));
    },
  );

  await step(
    "a listing's cursor is refused by a listing with other filters, and stays base64url",
    async (store) => {
      await saveInOrder(store, [{ status: "DONE" }, { status: "DONE" }, { status: "FAILED" }]);
      const page = await store.listExecutions({ status: "DONE", limit: 1 });
      assert.match(page.nextCursor!, /^[A-Za-z0-9_-]+$/);
      for (
        const other of [
          { status: "FAILED" as const },
          { status: "DONE" as const, definitionId: "order" },
          { status: "DONE" as const, updatedBefore: 1e9 },
          {},
        ]
      ) {
        const error = await rejection(store.listExecutions({ ...other, cursor: page.nextCursor }));
        assert.ok(error instanceof InvalidCursor, `${JSON.stringify(other)}: ${error}`);
      }
      const next = await store.listExecutions({ status: "DONE", cursor: page.nextCursor });
      assert.equal(next.items.length, 1);
      const typo = await rejection(store.listExecutions({ statuses: "DONE" } as ListOptions));
      assert.ok(typo instanceof TypeError && /did you mean "status"/.test(typo.message));
    },
  );

  await step(
    "deleteExecutions() removes finished executions last committed before a time, as deleteExecution does, and counts them",
    async (store) => {
      const work = { timers: [{ action: "schedule" as const, path: "wait", fireAt: 100 }] };
      const old = await saveInOrder(store, [
        { status: "DONE" },
        { status: "DONE" },
        { status: "DONE", definition_id: "billing" },
        { status: "FAILED" },
        { status: "RUNNING" },
      ]);
      await store.commit(old[0]!, {
        ...work,
        processedEventId: "e-1",
        trace: { n: 1 },
        emits: [{ target: null, event: newEvent("stays") }],
      });
      await tick(); // the cutoff is after every commit above, to the millisecond
      const cutoff = Date.now() / 1000;
      await tick();
      const [fresh] = await saveInOrder(store, [{ status: "DONE" }]);
      const none = await snapshot(store);
      const refusals: [unknown, RegExp][] = [
        [{ updatedBefore: cutoff }, /needs a status/],
        [{ status: "DONE" }, /needs updatedBefore/],
        [{ status: "RUNNING", updatedBefore: cutoff }, /RUNNING is open: pass allowOpen: true/],
        [
          { status: "DONE", updatedBefore: cutoff, definitonId: "x" },
          /did you mean "definitionId"/,
        ],
        [{ status: "DONE", updatedBefore: Date.now() }, /epoch seconds/],
      ];
      for (const [options, message] of refusals) {
        const error = await rejection(store.deleteExecutions(options as never));
        assert.match(error.message, message, JSON.stringify(options));
      }
      assert.deepEqual(await snapshot(store), none, "a refused call deletes nothing");
      const stopped = new AbortController();
      stopped.abort();
      assert.equal(
        await store.deleteExecutions({
          status: "DONE",
          updatedBefore: cutoff,
          signal: stopped.signal,
        }),
        0,
      );

      const progress: DeleteProgress[] = [];
      const deleted = await store.deleteExecutions({
        status: "DONE",
        definitionId: "order",
        updatedBefore: cutoff,
        onProgress: (p) => progress.push(p),
      });
      assert.equal(deleted, 2);
      assert.deepEqual(progress.at(-1)?.deleted, 2);
      assert.equal(await store.load(old[0]!.id), null);
      assert.equal(await store.load(old[1]!.id), null);
      assert.deepEqual(await store.readTrace(old[0]!.id), []);
      assert.equal(await store.isProcessed(old[0]!.id, "e-1"), false);
      assert.equal(await store.inspectExecution(old[0]!.id), null);
      assert.equal((await store.pendingOutbox()).length, 1, "outbox entries stay with the relay");
      assert.deepEqual(
        (await snapshot(store)).live.sort(),
        [old[2]!.id, old[3]!.id, old[4]!.id, fresh!.id].sort(),
      );
      assert.equal(
        await store.deleteExecutions({
          status: "DONE",
          updatedBefore: cutoff,
          definitionId: "order",
        }),
        0,
        "a second run finds nothing",
      );
      assert.equal(
        await store.deleteExecutions({
          status: ["RUNNING", "FAILED", "DONE"],
          updatedBefore: cutoff,
          allowOpen: true,
        }),
        3,
      );
      assert.deepEqual((await snapshot(store)).live, [fresh!.id]);
    },
  );

  await step(
    "inspectExecution() shows the document, when it was last committed, its expiry and its timers with their bookkeeping",
    async (store) => {
      const before = Date.now() / 1000;
      const exe = newExecution({ definition_id: "order", status: "RUNNING" });
      await store.commit(exe, {
        timers: [
          { action: "schedule", path: "late", fireAt: 300 },
          { action: "schedule", path: "early", fireAt: 200 },
        ],
      });
      const key = { executionId: exe.id, path: "late", fireAt: 300 };
      assert.equal(
        await store.recordFailure("timers", key, { attempts: 2, retryAt: 400, error: "down" }),
        true,
      );
      const seen = await store.inspectExecution(exe.id);
      assert.ok(seen);
      assert.deepEqual(seen.execution, { ...exe });
      assert.ok(seen.updatedAt! >= Math.floor(before) && seen.updatedAt! <= Date.now() / 1000 + 1);
      assert.equal(seen.expiresAt, null);
      assert.deepEqual(seen.timers, [
        {
          executionId: exe.id,
          path: "early",
          fireAt: 200,
          attempts: 0,
          retryAt: null,
          deadAt: null,
          lastError: null,
        },
        { ...key, attempts: 2, retryAt: 400, deadAt: null, lastError: "down" },
      ]);
      assert.equal(await store.inspectExecution("no-such-execution"), null);
      await assert.rejects(store.inspectExecution(""), TypeError);
    },
  );

  await step(
    "listExecutions({ maxExamined }) answers short pages with a cursor, whose pages find each match once; a signal stops it",
    async (store) => {
      const saved = await saveInOrder(
        store,
        ["b", "a", "a", "b", "a", "a", "a"].map((definition_id) => ({
          status: "RUNNING" as Status,
          definition_id,
        })),
      );
      const wanted = saved.filter((exe) => exe.definition_id === "b").map((exe) => exe.id);
      for (const options of [{ status: "RUNNING" as Status }, {}]) {
        const found: string[] = [];
        let cursor: string | null = null, pages = 0, short = 0;
        do {
          const page: ListPage = await store.listExecutions({
            ...options,
            definitionId: "b",
            limit: 5,
            maxExamined: 2,
            cursor,
          });
          found.push(...page.items.map((s) => s.id));
          if (page.items.length < 5 && page.nextCursor !== null) short++;
          cursor = page.nextCursor;
          assert.ok(++pages < 40, "the pages end");
        } while (cursor);
        assert.deepEqual(found.toSorted(), wanted.toSorted(), JSON.stringify(options));
        assert.ok(short > 0, `some page stopped at its budget: ${JSON.stringify(options)}`);
      }
      await assert.rejects(store.listExecutions({ maxExamined: 0 }), RangeError);
      const controller = new AbortController();
      const reason = new Error("gone");
      controller.abort(reason);
      for (
        const call of [
          () => store.listExecutions({ status: "RUNNING", signal: controller.signal }),
          () => store.listExecutions({ signal: controller.signal }),
          () => store.backlog("outbox", { signal: controller.signal }),
        ]
      ) {
        assert.equal(await rejection(call()), reason);
      }
      await assert.rejects(store.listExecutions({ signal: "no" as never }), TypeError);
    },
  );

  await step(
    "readTimers() pages through an execution's timers by path, and inspectExecution({ timerLimit }) reads the first only",
    async (store) => {
      const exe = newExecution({ definition_id: "order", status: "RUNNING" });
      const paths = ["e", "a", "d", "b", "c"];
      await store.commit(exe, {
        timers: paths.map((path, i) => ({
          action: "schedule" as const,
          path,
          fireAt: 1000 - i,
        })),
      });
      const pathsOf = (timers: { path: string }[]) => timers.map((timer) => timer.path);
      assert.deepEqual(pathsOf(await store.readTimers(exe.id)), ["a", "b", "c", "d", "e"]);
      const first = await store.readTimers(exe.id, { limit: 2 });
      assert.deepEqual(pathsOf(first), ["a", "b"]);
      assert.deepEqual(first[0], {
        executionId: exe.id,
        path: "a",
        fireAt: 999,
        attempts: 0,
        retryAt: null,
        deadAt: null,
        lastError: null,
      });
      assert.deepEqual(pathsOf(await store.readTimers(exe.id, { limit: 2, after: "b" })), [
        "c",
        "d",
      ]);
      assert.deepEqual(pathsOf(await store.readTimers(exe.id, { after: "d" })), ["e"]);
      assert.deepEqual(await store.readTimers(exe.id, { after: "e" }), []);
      const seen = await store.inspectExecution(exe.id, { timerLimit: 3 });
      assert.deepEqual(
        pathsOf(seen!.timers),
        ["c", "b", "a"],
        "the first 3 by path, earliest first",
      );
      assert.deepEqual((await store.inspectExecution(exe.id, { timerLimit: 0 }))!.timers, []);
      assert.equal((await store.inspectExecution(exe.id, { timerLimit: 0 }))!.execution.id, exe.id);
      for (const limit of [0, -1, 1.5, NaN]) {
        await assert.rejects(store.readTimers(exe.id, { limit }), RangeError, `limit ${limit}`);
      }
      await assert.rejects(
        store.inspectExecution(exe.id, { timerLimit: -1 }),
        /timerLimit must be 0/,
      );
      await assert.rejects(store.readTimers(exe.id, { after: "" }), TypeError);
      await assert.rejects(
        store.readTimers(exe.id, { afer: "b" } as never),
        /did you mean "after"/,
      );
    },
  );

  await step(
    "readTrace({ limit, before }) reads the newest steps a page at a time, each page oldest first",
    async (store) => {
      const exe = newExecution({ definition_id: "order", status: "RUNNING" });
      for (let i = 0; i < 7; i++) await store.commit(exe, { trace: { step: i } });
      const indexes = (steps: Record<string, unknown>[]) => steps.map((step) => step.index);
      assert.deepEqual(indexes(await store.readTrace(exe.id, { limit: 3 })), [4, 5, 6]);
      assert.deepEqual(await store.readTrace(exe.id, { limit: 1 }), [{ step: 6, index: 6 }]);
      assert.deepEqual(indexes(await store.readTrace(exe.id, { limit: 3, before: 4 })), [1, 2, 3]);
      assert.deepEqual(indexes(await store.readTrace(exe.id, { limit: 3, before: 1 })), [0]);
      assert.deepEqual(await store.readTrace(exe.id, { limit: 3, before: 0 }), []);
      assert.deepEqual(indexes(await store.readTrace(exe.id, { before: 2 })), [0, 1]);
      assert.deepEqual(
        await store.readTrace(exe.id, { limit: Infinity }),
        await store.readTrace(exe.id),
      );
      await assert.rejects(store.readTrace(exe.id, { limit: 0 }), RangeError);
      await assert.rejects(
        store.readTrace(exe.id, { before: 1.5 }),
        /before must be a trace index/,
      );
      await assert.rejects(store.readTrace(exe.id, { limt: 3 } as never), /did you mean "limit"/);
    },
  );
}

/** The ids of the live executions, by a listing of every status. */
async function snapshot(store: ExecutionStore): Promise<{ live: string[] }> {
  return { live: await walkIds(store, { limit: 1000 }) };
}
