// harel's control plane (engine/aio/control.py) on any ExecutionStore: CAS status commits,
// propagated to the children; a cooperative cancel commits a Cancel event for the caller to publish.
import { type Event, type Execution, newEvent, type Status, StoreConflict } from "../../mod.ts";
import type { ExecutionStore } from "../../mod.ts";
import { ExecutionNotFound } from "./sqs_errors.ts";
import { messageBody } from "./_wire.ts";
import type { ControlResult } from "./fleet_types.ts";

/** Whether the active state (or an ancestor below the root) has a Cancel transition. */
export type HasCancelHandler = (
  definitionId: string,
  activePath: string,
  rootPath: string,
) => boolean;

/** harel's `_RETRIES`: attempts of one status commit against concurrent writers. */
export const CONTROL_ATTEMPTS = 5;

/** The statuses harel's control plane leaves alone, but for a CANCELLED. */
const TERMINAL: readonly Status[] = ["CANCELLED", "DONE"];

/** harel's status rule: the status to write over `current`, or null (CANCELLED/DONE take only CANCELLED). */
export function nextStatus(current: Status, wanted: Status): Status | null {
  return TERMINAL.includes(current) && wanted !== "CANCELLED" ? null : wanted;
}

async function loaded(store: ExecutionStore, operation: string, id: string): Promise<Execution> {
  const exe = await store.load(id);
  if (exe === null) throw new ExecutionNotFound(operation, id);
  return exe;
}

/**
 * harel's `_commit_status`: load, apply the rule, commit, again on a lost CAS; the last
 * StoreConflict is thrown after {@linkcode CONTROL_ATTEMPTS} (harel returns in silence there).
 */
export async function commitStatus(
  store: ExecutionStore,
  operation: string,
  id: string,
  wanted: Status,
  cancel?: Event,
): Promise<ControlResult & { outbox: number[] }> {
  let lost: StoreConflict | undefined;
  for (let attempt = 0; attempt < CONTROL_ATTEMPTS; attempt++) {
    const exe = await loaded(store, operation, id);
    const status = nextStatus(exe.status, wanted);
    if (status === null) return { changed: false, status: exe.status, outbox: [] };
    exe.status = status;
    try {
      const { outbox } = await store.commit(
        exe,
        cancel ? { emits: [{ target: exe.id, event: cancel }] } : {},
      );
      return { changed: true, status, outbox };
    } catch (error) {
      if (!(error instanceof StoreConflict)) throw error;
      lost = error;
    }
  }
  throw lost!;
}

/** harel's `_propagate`: the status, by the same rule, to every child, depth first, in parallel. */
export async function propagate(
  store: ExecutionStore,
  operation: string,
  parentId: string,
  wanted: Status,
): Promise<void> {
  const parent = await store.load(parentId);
  if (parent === null) return;
  const children = await Promise.all(Object.keys(parent.children).map((id) => store.load(id)));
  await Promise.all(
    children.filter((child) => child !== null).map(async (child) => {
      await commitStatus(store, operation, child.id, wanted);
      await propagate(store, operation, child.id, wanted);
    }),
  );
}

/** The public part of a status commit's result. */
function shown({ changed, status }: ControlResult): ControlResult {
  return { changed, status };
}

/** Commits `wanted` on the execution (when given, only from status `from`), then on its tree. */
async function change(
  store: ExecutionStore,
  operation: string,
  id: string,
  wanted: Status,
  from?: Status,
): Promise<ControlResult> {
  if (from !== undefined) {
    const exe = await loaded(store, operation, id);
    if (exe.status !== from) return { changed: false, status: exe.status };
  }
  const result = await commitStatus(store, operation, id, wanted);
  await propagate(store, operation, id, wanted);
  return shown(result);
}

/** harel's `terminate`: CANCELLED at once, with no hooks, down the tree. */
export function terminate(store: ExecutionStore, id: string): Promise<ControlResult> {
  return change(store, "terminate", id, "CANCELLED");
}

/** What a cooperative cancel committed: the Cancel event and its outbox seqs, to publish now. */
export interface CommittedCancel {
  event: Event;
  outbox: number[];
}

/** harel's `cancel`: with a handler, CANCELLING with a Cancel event; otherwise terminated. */
export async function cancel(
  store: ExecutionStore,
  id: string,
  reason: Record<string, unknown>,
  hasCancelHandler: HasCancelHandler,
  maxMessageBytes?: number,
): Promise<{ result: ControlResult; cancel: CommittedCancel | null }> {
  const event = newEvent("Cancel", { ...reason });
  messageBody(event, maxMessageBytes);
  const exe = await loaded(store, "cancel", id);
  const active = exe.active_path;
  const handled = typeof active === "string" && active !== exe.root_path &&
    exe.status !== "DONE" && hasCancelHandler(exe.definition_id, active, exe.root_path);
  if (!handled) return { result: await terminate(store, id), cancel: null };
  const result = await commitStatus(store, "cancel", id, "CANCELLING", event);
  await propagate(store, "cancel", id, "CANCELLED");
  return {
    result: shown(result),
    cancel: result.changed ? { event, outbox: result.outbox } : null,
  };
}

/** harel's `suspend`: only a RUNNING execution, then its children. */
export function suspend(store: ExecutionStore, id: string): Promise<ControlResult> {
  return change(store, "suspend", id, "SUSPENDED", "RUNNING");
}

/** harel's `resume`: only a SUSPENDED execution, then its children. */
export function resume(store: ExecutionStore, id: string): Promise<ControlResult> {
  return change(store, "resume", id, "RUNNING", "SUSPENDED");
}
