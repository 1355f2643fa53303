// The state store's values, shared by DynamoDBStateStore and its twin: native DynamoDB values,
// other writers' legacy values, and the methods' arguments.
import { checkOptionNames } from "../core/_option_names.ts";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { N } from "../core/_attributes.ts";
import { checkField, checkTtlHorizon, describe } from "../core/_validate.ts";
import { ExactNumber, parseJson, plainValue } from "../core/_json.ts";
import type { SetOptions } from "../core/types.ts";

/** A plain value (from {@linkcode plainValue} or legacy JSON) as a native DynamoDB value. */
export function toAttribute(plain: unknown): AttributeValue {
  if (plain === null) return { NULL: true };
  if (plain instanceof ExactNumber) return { N: plain.text };
  switch (typeof plain) {
    case "string":
      return { S: plain };
    case "boolean":
      return { BOOL: plain };
    case "number":
      return N(plain);
  }
  if (Array.isArray(plain)) return { L: plain.map(toAttribute) };
  const map: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(plain as object)) setOwn(map, k, toAttribute(v));
  return { M: map as Record<string, AttributeValue> };
}

/** An object with no prototype: a field named `toString` or `__proto__` is just a field. */
export function fieldRecord(): Record<string, unknown> {
  return Object.create(null);
}

/** Sets an own property, whatever its name (`__proto__` included). */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** A stored `value` as `get` reads it: JSON (NaN as null), or a legacy raw string as itself. */
export function decodeValue(text: string): unknown {
  const parsed = parseJson(text, false);
  return parsed === undefined ? text : parsed.value;
}

/** The legacy hash a `value` holds, with no prototype; `exact` keeps big numbers' digits. */
export function legacyFields(
  text: string | undefined,
  exact = false,
): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  const value = parseJson(text, exact)?.value;
  if (
    typeof value !== "object" || value === null || Array.isArray(value) ||
    value instanceof ExactNumber
  ) return undefined;
  const fields = fieldRecord();
  for (const [k, v] of Object.entries(value)) setOwn(fields, k, v);
  return fields;
}

/** Refuses a legacy field a DynamoDB Map cannot hold, naming it; the key keeps its legacy hash. */
export function checkMigrating(key: string, field: string, plain: unknown): void {
  const refuse = (what: string, error: unknown): never => {
    const kind = error instanceof RangeError ? RangeError : TypeError;
    throw new kind(
      `key ${JSON.stringify(key)}: legacy field ${
        JSON.stringify(field)
      } ${what}; it cannot migrate to a native Map (read it, then rewrite the key with set() or delete it)`,
    );
  };
  try {
    checkField(field, "its name");
  } catch (error) {
    refuse(`has a name DynamoDB cannot store (${(error as Error).message})`, error);
  }
  try {
    plainValue(JSON.stringify(field), plain, true);
  } catch (error) {
    refuse(`cannot be a DynamoDB value (${(error as Error).message})`, error);
  }
}

/** Most seconds a TTL may run: the expiry must stay a number DynamoDB can store. */
export const MAX_TTL_SECONDS = 1e125;

/** Seconds of life for a `ttl` or `expire`: finite, under 10 years, and storable. */
export function checkTtlSeconds(field: string, seconds: unknown, allowZero: boolean): number {
  checkTtlHorizon(field, seconds);
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || (!allowZero && seconds < 0)) {
    throw new RangeError(
      `${field} must be a finite number${allowZero ? "" : " of seconds >= 0"}, got ${
        describe(seconds)
      }`,
    );
  }
  if (!allowZero && seconds === 0) {
    throw new RangeError(`${field} must be more than 0 seconds, got 0`);
  }
  if (seconds > MAX_TTL_SECONDS) {
    throw new RangeError(
      `${field} is ${seconds} seconds; at most ${MAX_TTL_SECONDS} (a DynamoDB number holds less than 1e126)`,
    );
  }
  return seconds;
}

/** The TTL in `set`'s or `hset`'s options (`null`/`undefined` options mean none), checked. */
export function optionsTtl(method: "set()" | "hset()", options: unknown): number | undefined {
  if (options === null || options === undefined) return undefined;
  if (typeof options !== "object") {
    throw new TypeError(`options must be an object like { ttl: 60 }, got ${describe(options)}`);
  }
  checkOptionNames(method, options);
  const { ttl } = options as SetOptions;
  return ttl === undefined ? undefined : checkTtlSeconds("options.ttl", ttl, false);
}

/** What `MemoryStateStore` keeps per key: the stored layout, with fields as JSON text. */
export interface StateEntry {
  /** `value`: JSON text (or a legacy raw string). */
  value?: string;
  /** `hash`: field → JSON text of its plain value. */
  hash?: Map<string, string>;
  /** `ttl`: epoch seconds. */
  ttl?: number;
}

/** Each `MemoryStateStore`'s entries, for tests that play another writer against the twin. */
export const stateEntries: WeakMap<object, Map<string, StateEntry>> = new WeakMap();

/** A `keys()` pattern: a glob string. */
export function checkPattern(pattern: unknown): string {
  if (typeof pattern !== "string") {
    throw new TypeError(`pattern must be a glob string, got ${describe(pattern)}`);
  }
  return pattern;
}

/** The fields `hdel` removes: at least one, each a valid field name, duplicates dropped. */
export function checkHdelFields(fields: unknown[]): string[] {
  if (fields.length === 0) throw new TypeError("hdel needs at least one field");
  return [...new Set(fields.map((f, i) => checkField(f, `fields[${i}]`)))];
}
