// The CLI's arguments: usage errors, the limit, statuses and dead-letter keys, and the endpoint.
import { envVar } from "../dynamo/connect.ts";
import type { RelayKind, Timer } from "../core/types.ts";
import { type Status, STATUSES } from "../core/documents.ts";

/** A dead letter's queue and key, from the command line. */
export function parseDeadLetter(
  command: string,
  rest: string[],
): { kind: RelayKind; key: number | Timer } {
  const [kind, ...key] = rest;
  if (kind !== "outbox" && kind !== "spawns" && kind !== "timers") {
    throw new UsageError(
      `${command} needs a kind: outbox, spawns or timers, got ${JSON.stringify(kind)}`,
    );
  }
  if (command === "dead-letters") return { kind, key: 0 };
  const number = (text: string, what: string) => {
    const value = Number(text);
    if (text.trim() === "" || !Number.isFinite(value)) {
      throw new UsageError(`${what} must be a number, got ${JSON.stringify(text)}`);
    }
    return value;
  };
  if (kind === "timers") {
    if (key.length !== 3) {
      throw new UsageError(
        `a timer is EXECUTION_ID PATH FIRE_AT, got ${JSON.stringify(key.join(" "))}`,
      );
    }
    return {
      kind,
      key: { executionId: key[0]!, path: key[1]!, fireAt: number(key[2]!, "FIRE_AT") },
    };
  }
  if (key.length !== 1) {
    throw new UsageError(
      `${kind} items are keyed by one seq, got ${JSON.stringify(key.join(" "))}`,
    );
  }
  return { kind, key: number(key[0]!, "the seq") };
}

/** A usage error: exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A runtime error with a message fit for an operator: exit code 1. */
export class CliError extends Error {
  override name = "CliError";
}

export type Values = Record<string, string | boolean | undefined>;

export function usage<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) {
      throw new UsageError(error.message);
    }
    throw error;
  }
}

export function parseLimit(text: string | boolean | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (typeof text !== "string" || !/^\d+$/.test(text) || n < 1 || n > 1000) {
    throw new UsageError(`--limit must be a whole number from 1 to 1000, got ${String(text)}`);
  }
  return n;
}

export function parseStatuses(text: string | boolean | undefined): Status[] | undefined {
  if (typeof text !== "string") return undefined;
  const statuses = text.split(",").map((s) => s.trim().toUpperCase());
  for (const status of statuses) {
    if (!STATUSES.includes(status as Status)) {
      throw new UsageError(
        `--status ${JSON.stringify(status)} is not a status; one of ${STATUSES.join(", ")}`,
      );
    }
  }
  return statuses as Status[];
}

/**
 * The endpoint to use: `--endpoint`, else `$DYNAMODB_ENDPOINT`, else null (AWS). An explicit
 * empty `--endpoint` is refused, never taken as AWS; an empty variable counts as unset (the
 * shell idiom), a blank one is refused.
 */
export function endpointOf(values: Values): string | null {
  const given = values.endpoint;
  if (typeof given === "string") {
    if (given.trim() === "") {
      throw new UsageError(
        `--endpoint is empty (${JSON.stringify(given)}): pass a URL, or leave --endpoint out ` +
          "to use $DYNAMODB_ENDPOINT, or AWS when that is unset",
      );
    }
    return given;
  }
  const variable = envVar("DYNAMODB_ENDPOINT");
  if (variable === undefined || variable === "") return null;
  if (variable.trim() === "") {
    throw new UsageError(
      `DYNAMODB_ENDPOINT is blank (${JSON.stringify(variable)}): set it to a URL, or unset it ` +
        "to use AWS",
    );
  }
  return variable;
}
