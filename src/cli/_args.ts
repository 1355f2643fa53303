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

/**
 * A seq as `outbox` and `dead-letters` list it: decimal digits (another writer's odd seq may
 * carry a sign or a fraction), no larger than a double holds exactly. Anything else (`0x10`,
 * `1e300`, `Infinity`) is a usage error, never a key that Number() happens to read.
 */
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

/**
 * A timer's FIRE_AT as `dead-letters timers` lists it: epoch seconds in decimal (JavaScript
 * writes the tiniest with an exponent, e.g. 1e-7). Hexadecimal and the like are usage errors;
 * the store refuses a time it cannot hold (after 9999, e.g. milliseconds) as usage too.
 */
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

/**
 * What a store method refuses before sending (a `TypeError` or `RangeError` naming the input,
 * e.g. a FIRE_AT in milliseconds) as a usage error; what DynamoDB answers stays a runtime one.
 */
export async function refusedAsUsage<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
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

/**
 * `--before DATE|EPOCH` as epoch seconds: an ISO 8601 date (`2026-11-01`, midnight UTC), a date
 * and time with its offset (`2026-11-01T12:00:00Z`), or epoch seconds; an epoch in milliseconds
 * is refused, saying so (the rule the dashboard's `?before=` follows too).
 */
export function parseBefore(text: string | boolean | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (typeof text !== "string") {
    throw new UsageError(
      "--before needs a date (2026-11-01 or 2026-11-01T12:00:00Z) or epoch seconds (1793491200)",
    );
  }
  try {
    return parseTimeText("--before", text);
  } catch (error) {
    if (error instanceof RangeError) throw new UsageError(error.message);
    throw error;
  }
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
