// The CLI's arguments: usage errors, the limit, statuses and dead-letter keys, and the endpoint.
import { envVar } from "../dynamo/connect.ts";
import type { RelayKind, Timer } from "../core/types.ts";
import { type Status, STATUSES } from "../core/documents.ts";
import { parseTimeText } from "../core/_time_text.ts";

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
  if (kind === "timers") {
    if (key.length !== 3) {
      throw new UsageError(
        `a timer is EXECUTION_ID PATH FIRE_AT, got ${JSON.stringify(key.join(" "))}`,
      );
    }
    return {
      kind,
      key: { executionId: key[0]!, path: key[1]!, fireAt: parseFireAt(key[2]!) },
    };
  }
  if (key.length !== 1) {
    throw new UsageError(
      `${kind} items are keyed by one seq, got ${JSON.stringify(key.join(" "))}`,
    );
  }
  return { kind, key: parseSeq(key[0]!) };
}

/** A seq in decimal digits (maybe signed or fractional), exact in a double; else usage. */
export function parseSeq(text: string): number {
  const value = Number(text);
  if (!/^-?\d+(\.\d+)?$/.test(text) || !(Math.abs(value) <= Number.MAX_SAFE_INTEGER)) {
    throw new UsageError(
      `a seq is written in decimal digits, as \`outbox\` and \`dead-letters\` list it (e.g. 42), ` +
        `at most ${Number.MAX_SAFE_INTEGER}; got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

/** A timer's FIRE_AT: epoch seconds in decimal (an exponent allowed, as JavaScript writes 1e-7). */
export function parseFireAt(text: string): number {
  if (!/^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(text) || !Number.isFinite(Number(text))) {
    throw new UsageError(
      "FIRE_AT is epoch seconds in decimal, as `dead-letters timers` lists it " +
        `(e.g. 1700000000.5); got ${JSON.stringify(text)}`,
    );
  }
  return Number(text);
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

/** A refusal of input before anything is sent (`TypeError`, `RangeError`) as a usage error. */
export function asUsage(error: unknown): unknown {
  return error instanceof TypeError || error instanceof RangeError
    ? new UsageError(error.message)
    : error;
}

export function usage<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw asUsage(error);
  }
}

/** What a store method refuses before sending, as a usage error. */
export function refusedAsUsage<T>(call: Promise<T>): Promise<T> {
  return call.catch((error) => {
    throw asUsage(error);
  });
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
 * `--endpoint`, else `$DYNAMODB_ENDPOINT`, else null (AWS); likewise `--sqs-endpoint` and
 * `$SQS_ENDPOINT`. An empty flag is refused, never taken as AWS; an empty variable counts as
 * unset (the shell idiom), a blank one is refused.
 */
export function endpointOf(
  values: Values,
  flag = "endpoint",
  variable = "DYNAMODB_ENDPOINT",
): string | null {
  const given = values[flag];
  if (typeof given === "string") {
    if (given.trim() === "") {
      throw new UsageError(
        `--${flag} is empty (${JSON.stringify(given)}): pass a URL, or leave --${flag} out ` +
          `to use $${variable}, or AWS when that is unset`,
      );
    }
    return given;
  }
  const value = envVar(variable);
  if (value === undefined || value === "") return null;
  if (value.trim() === "") {
    throw new UsageError(
      `${variable} is blank (${JSON.stringify(value)}): set it to a URL, or unset it to use AWS`,
    );
  }
  return value;
}

/** `--before DATE|EPOCH` as epoch seconds, by the rule the dashboard's `?before=` follows too. */
export function parseBefore(text: string | boolean | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (typeof text !== "string") {
    throw new UsageError(
      "--before needs a date (2026-11-01 or 2026-11-01T12:00:00Z) or epoch seconds (1793491200)",
    );
  }
  return usage(() => parseTimeText("--before", text));
}

/** The kinds `adopt` takes: one named, or (none named) all three. */
export function parseKinds(rest: string[]): RelayKind[] {
  if (rest.length === 0) return ["outbox", "spawns", "timers"];
  const kind = rest[0];
  if (kind !== "outbox" && kind !== "spawns" && kind !== "timers") {
    throw new UsageError(
      `adopt takes a kind: outbox, spawns or timers, got ${JSON.stringify(kind)}`,
    );
  }
  return [kind];
}
