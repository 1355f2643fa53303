// The CLI's control verbs: harel's control plane (suspend, resume, cancel, terminate) on the
// store alone — a cancel's Cancel event goes to the outbox, which the relay publishes.
import * as control from "../sqs/_control.ts";
import type { ExecutionStore } from "../core/types.ts";
import type { ControlResult } from "../sqs/fleet_types.ts";
import { CliError, UsageError, type Values } from "./_args.ts";

/** The control verbs, as commands. */
export const CONTROL_COMMANDS = ["suspend", "resume", "cancel", "terminate"] as const;

/** Whether `command` is a control verb. */
export function isControl(command: string): command is typeof CONTROL_COMMANDS[number] {
  return (CONTROL_COMMANDS as readonly string[]).includes(command);
}

/** `--reason`'s JSON object, for cancel; a usage error otherwise. */
export function parseReason(text: unknown): Record<string, unknown> {
  if (text === undefined) return {};
  let reason: unknown = null;
  try {
    reason = JSON.parse(String(text));
  } catch { /* refused below */ }
  if (typeof reason !== "object" || reason === null || Array.isArray(reason)) {
    throw new UsageError(`--reason must be a JSON object such as '{"by":"ops"}', got ${text}`);
  }
  return reason as Record<string, unknown>;
}

/** Refuses cancel and terminate without --yes (or --json), before any request. */
export function checkConfirmed(command: string, id: string, values: Values): void {
  if ((command === "cancel" || command === "terminate") && !values.yes && !values.json) {
    throw new UsageError(
      `${command} ends execution ${JSON.stringify(id)} and its children` +
        (command === "terminate"
          ? " (a DONE one becomes CANCELLED too, as harel's terminate does)"
          : "") +
        ": run it again with --yes (or with --json, for scripts)",
    );
  }
}

/** Runs a control verb and prints what it did. */
export async function runControl(
  store: ExecutionStore,
  command: typeof CONTROL_COMMANDS[number],
  id: string,
  values: Values,
  out: (line: string) => void,
): Promise<void> {
  const reason = parseReason(values.reason);
  let result: ControlResult;
  try {
    // The CLI knows no definitions: every state has a cancel handler, as `FleetClient`'s default.
    result = command === "cancel"
      ? (await control.cancel(store, id, reason, () => true)).result
      : await control[command](store, id);
  } catch (error) {
    if ((error as Error)?.name === "ExecutionNotFound") {
      throw new CliError(`no execution ${JSON.stringify(id)}: nothing done`, { cause: error });
    }
    throw error;
  }
  if (values.json) return out(JSON.stringify({ id, ...result }, null, 2));
  out(
    result.changed
      ? `${command}: execution ${id} is now ${result.status}` +
        (command === "cancel" && result.status === "CANCELLING"
          ? " (its Cancel event is in the outbox: the next relay pass publishes it)"
          : "")
      : `${command}: execution ${id} is ${result.status}; harel's rules leave it as it is`,
  );
}
