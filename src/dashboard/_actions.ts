// The actions a POST may ask for, checked as the store checks them, reported back by a fixed
// notice code (no text of the request reaches the page).
import { checkKey, checkTime, LIMITS } from "../core/_validate.ts";
import type { RelayKey, RelayKind } from "../core/types.ts";
import { href, itemLabel, kindLabel } from "./_layout.ts";
import { keyFields, keyText } from "./_dead_letters_page.ts";
import { BULK_BUDGET_MS, onEveryDeadLetter } from "./_store_calls.ts";
import type { ExecutionStore } from "../core/types.ts";
import type { FleetControl } from "./dashboard_options.ts";
import type { CONTROL_CALLS } from "./_options.ts";

/** A control-plane operation of an execution's page. */
export type ControlOp = typeof CONTROL_CALLS[number];

/** What a POST asks for. */
export type Action =
  | { do: "retry" | "drop"; kind: RelayKind; key: RelayKey<RelayKind> }
  | { do: "retry-all" | "drop-all"; kind: RelayKind; target: string | null }
  | { do: "delete"; id: string }
  | { do: ControlOp; id: string };

/** The operations of the dead-letter routes. */
export const DEAD_LETTER_OPS = ["retry", "drop", "retry-all", "drop-all"] as const;

/** A number as `String(number)` writes it (what the pages put in their forms). */
const NUMBER = /^-?[0-9]{1,21}(\.[0-9]{1,21})?(e[+-]?[0-9]{1,3})?$/;

/** A form field or route part the action cannot use: answered 400. */
export class BadAction extends Error {
  /** Always `"BadAction"`. */
  override name = "BadAction";
}

/** One value of a form field: exactly one, or a BadAction. */
function one(form: URLSearchParams, name: string): string {
  const values = form.getAll(name);
  if (values.length !== 1) throw new BadAction(`the form needs exactly one ${name}`);
  return values[0]!;
}

/** A key string as the store takes it (non-empty, well-formed, within DynamoDB's limit). */
function key(field: string, value: string, maxBytes: number): string {
  try {
    return checkKey(field, value, maxBytes);
  } catch {
    throw new BadAction(`the form's ${field} is not a valid key`);
  }
}

/** The action of a dead-letter route and its form. */
export function deadLetterAction(
  kind: RelayKind,
  op: typeof DEAD_LETTER_OPS[number],
  form: URLSearchParams,
): Action {
  if (op === "retry-all" || op === "drop-all") {
    const targets = form.getAll("target");
    if (targets.length > 1) throw new BadAction("the form has more than one target");
    if (targets.length === 1 && kind !== "outbox") {
      throw new BadAction("only outbox entries are retried or dropped by target");
    }
    const target = targets.length ? key("target", targets[0]!, LIMITS.partitionKeyBytes) : null;
    return { do: op, kind, target };
  }
  if (kind !== "timers") {
    // Any finite number: another writer's row is retried or dropped by its own key.
    const text = one(form, "seq");
    const seq = Number(text);
    if (!NUMBER.test(text) || !Number.isFinite(seq)) {
      throw new BadAction("the form's seq is not a number");
    }
    return { do: op, kind, key: seq };
  }
  const executionId = key("execution_id", one(form, "execution_id"), LIMITS.partitionKeyBytes);
  const path = key("path", one(form, "path"), LIMITS.sortKeyBytes);
  const fireAtText = one(form, "fire_at");
  const fireAt = Number(fireAtText);
  try {
    if (!NUMBER.test(fireAtText)) throw new RangeError("not a number");
    checkTime("fire_at", fireAt);
  } catch {
    throw new BadAction("the form's fire_at is not a time in epoch seconds");
  }
  return { do: op, kind, key: { executionId, path, fireAt } };
}

/** The action of an execution's delete route. */
export function deleteAction(id: string): Action {
  return { do: "delete", id: key("id", id, LIMITS.partitionKeyBytes) };
}

/** The action of an execution's control route (suspend, resume, cancel, terminate). */
export function controlAction(op: ControlOp, id: string): Action {
  return { do: op, id: key("id", id, LIMITS.partitionKeyBytes) };
}

/** Whether an action destroys something, and so needs a confirmation first. */
export function destructive(action: Action): boolean {
  return action.do === "drop" || action.do === "drop-all" || action.do === "delete" ||
    action.do === "cancel" || action.do === "terminate";
}

/** What the confirmation page of a destructive action says and re-posts. */
export function confirmation(basePath: string, action: Action): {
  title: string;
  question: string;
  label: string;
  path: string;
  fields: Record<string, string>;
  back: string;
} {
  if (action.do === "cancel" || action.do === "terminate") {
    return {
      title: action.do === "cancel" ? "Cancel this execution?" : "Terminate this execution?",
      question: action.do === "cancel"
        ? `Cancel execution ${action.id}? When its active state has a cancel handler it ` +
          "becomes CANCELLING and its Cancel event goes to the workers, whose machine's Cancel " +
          "transition runs; otherwise (or when it never started, or is DONE) it becomes " +
          "CANCELLED at once, as harel makes it. Its children become CANCELLED."
        : `Terminate execution ${action.id}? It and its children become CANCELLED at once, ` +
          "with no hooks run — a DONE one too, as harel's terminate does.",
      label: action.do === "cancel" ? "Cancel execution" : "Terminate",
      path: href(basePath, ["executions", action.id, action.do]),
      fields: {},
      back: href(basePath, ["executions", action.id]),
    };
  }
  if (action.do === "delete") {
    return {
      title: "Delete this execution?",
      question: `Delete execution ${action.id} with its timers, trace steps and dedupe marks ` +
        "(its outbox entries and spawns stay)?",
      label: "Delete",
      path: href(basePath, ["executions", action.id, "delete"]),
      fields: {},
      back: href(basePath, ["executions", action.id]),
    };
  }
  if (!("kind" in action)) throw new TypeError(`${action.do} needs no confirmation`);
  const back = href(basePath, ["dead-letters", action.kind]);
  if (action.do === "drop-all") {
    return {
      title: `Drop all dead ${kindLabel(action.kind)}?`,
      question: action.target === null
        ? `Drop every dead ${itemLabel(action.kind)}?`
        : `Drop every dead outbox entry for target ${action.target}?`,
      label: "Drop all",
      path: href(basePath, ["dead-letters", action.kind, "drop-all"]),
      fields: action.target === null ? {} : { target: action.target },
      back,
    };
  }
  if (action.do !== "drop") throw new TypeError(`${action.do} needs no confirmation`);
  return {
    title: "Drop this dead letter?",
    question: `Drop the dead ${itemLabel(action.kind)} ${
      keyText(action.kind, action.key)
    } for good?`,
    label: "Drop",
    path: href(basePath, ["dead-letters", action.kind, "drop"]),
    fields: keyFields(action.kind, action.key),
    back,
  };
}

/** Runs an action: where to send the browser, with the outcome's notice code. */
export async function runAction(
  store: ExecutionStore,
  basePath: string,
  action: Action,
  signal: AbortSignal,
  fleet: FleetControl | null = null,
): Promise<string> {
  switch (action.do) {
    case "suspend":
    case "resume":
    case "cancel":
    case "terminate": {
      if (fleet === null) throw new TypeError("control actions need the dashboard's fleet option");
      let result: { changed: boolean; status: string };
      try {
        result = await fleet[action.do](action.id);
      } catch (error) {
        const name = (error as Error)?.name;
        if (action.do === "cancel" && /^(CancelNotPublished|PublishOutcomeUnknown)$/.test(name)) {
          return href(basePath, ["executions", action.id], { done: "cancel-unpublished" });
        }
        if (name !== "ExecutionNotFound") throw error;
        return href(basePath, [], { done: "no-such-execution" });
      }
      const done = !result.changed
        ? "unchanged"
        : action.do === "cancel" && result.status === "CANCELLED"
        ? "cancelled"
        : CONTROL_DONE[action.do];
      return href(basePath, ["executions", action.id], { done });
    }
    case "delete": {
      const { execution } = await store.deleteExecution(action.id);
      return href(basePath, [], { done: execution ? "deleted" : "no-execution" });
    }
    case "retry":
    case "drop": {
      const done = action.do === "retry"
        ? await store.retryDeadLetter(action.kind, action.key)
        : await store.dropDeadLetter(action.kind, action.key);
      return href(basePath, ["dead-letters", action.kind], {
        done: done ? (action.do === "retry" ? "retried" : "dropped") : "gone",
      });
    }
    case "retry-all":
    case "drop-all": {
      const budget = new AbortController();
      const timer = setTimeout(
        () => budget.abort(new DOMException("time budget", "TimeoutError")),
        BULK_BUDGET_MS,
      );
      try {
        const outcome = await onEveryDeadLetter(
          store,
          action.kind,
          action.do === "retry-all" ? "retry" : "drop",
          action.target,
          AbortSignal.any([signal, budget.signal]),
        );
        return href(basePath, ["dead-letters", action.kind], {
          done: action.do === "retry-all" ? "retried-all" : "dropped-all",
          n: String(outcome.done),
          ...(outcome.stopped ? { more: "1" } : {}),
        });
      } finally {
        clearTimeout(timer);
      }
    }
  }
}

/** The notice code of each control operation that changed the execution. */
const CONTROL_DONE: Record<ControlOp, string> = {
  suspend: "suspended",
  resume: "resumed",
  cancel: "cancelling",
  terminate: "terminated",
};

/** The query parameters a page takes to show an action's outcome. */
export const NOTICE_PARAMS = ["done", "n", "more"] as const;

/** The notice of an outcome code (from `runAction`'s redirect), or null for none or unknown. */
export function noticeOf(query: URLSearchParams): string | null {
  const done = query.get("done");
  const n = query.get("n") ?? "";
  const count = /^[0-9]{1,7}$/.test(n) ? Number(n) : null;
  const more = query.get("more") === "1"
    ? ` It stopped after ${BULK_BUDGET_MS / 1000} s with more to do: press it again to go on.`
    : "";
  const letters = (k: number) => `${k} dead ${k === 1 ? "letter" : "letters"}`;
  if (done === "retried-all" || done === "dropped-all") {
    const verb = done === "retried-all" ? "Retried" : "Dropped";
    return count === null ? null : `${verb} ${letters(count)}.${more}`;
  }
  return done !== null && Object.hasOwn(NOTICES, done) ? NOTICES[done]! : null;
}

/** The notice of each fixed outcome code. */
const NOTICES: Record<string, string> = {
  retried: "Retried: the dead letter is due again, and the next relay pass takes it up.",
  dropped: "Dropped: the dead letter is gone.",
  gone:
    "Nothing done: that dead letter is no longer there (retried, dropped or delivered meanwhile).",
  deleted: "Deleted the execution with its timers, trace steps and dedupe marks.",
  "no-execution": "Nothing deleted: there was no such execution.",
  suspended:
    "Suspended: workers hold its events until it is resumed; its children are suspended too.",
  resumed: "Resumed: it and its children are RUNNING again, and workers take up its held events.",
  cancelling:
    "Cancelling: its Cancel event went to the workers, and its machine's Cancel transition runs on a worker.",
  "cancel-unpublished":
    "Cancelling, but SQS did not take its Cancel event: it waits in its outbox for the next relay pass, and workers drop its other events meanwhile.",
  cancelled:
    "Cancelled: it and its children are CANCELLED (its active state has no cancel handler, it never started, or it was DONE).",
  terminated: "Terminated: it and its children are CANCELLED.",
  unchanged: "Nothing changed: harel's rules leave an execution in this status as it is.",
  "no-such-execution": "Nothing done: there is no such execution.",
};
