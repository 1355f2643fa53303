// Input checks that run before anything is sent: DynamoDB would reject these half-way, or worse,
// store something other than what the caller gave.
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { isStorableNumber, NUMBER_RANGE } from "./_json.ts";

const encoder = new TextEncoder();
/** Scratch space `utf8Length` encodes into: 3 bytes a UTF-16 unit covers every string. */
const scratch = new Uint8Array(48 * 1024);

/**
 * UTF-8 length of a string, as `TextEncoder` writes it. It runs on every string a commit sends:
 * short ones are counted in place, longer ones encoded into a kept buffer (no allocation).
 */
export function utf8Length(text: string): number {
  const length = text.length;
  if (length > 32) {
    if (length * 3 <= scratch.length) return encoder.encodeInto(text, scratch).written;
    return encoder.encode(text).length;
  }
  let bytes = length;
  for (let i = 0; i < length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    if (unit < 0x800) bytes += 1;
    else if (
      (unit & 0xfc00) === 0xd800 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    ) {
      bytes += 2; // a pair: two units, four bytes
      i++;
    } else bytes += 2; // three bytes (a lone surrogate too: U+FFFD)
  }
  return bytes;
}

/** DynamoDB's limits, from the developer guide's "Quotas" page. */
export const LIMITS = {
  partitionKeyBytes: 2048,
  sortKeyBytes: 1024,
  itemBytes: 400 * 1024,
  transactionItems: 100,
  transactionBytes: 4 * 1024 * 1024,
  batchWriteItems: 25,
  batchGetKeys: 100,
} as const;

/**
 * A non-empty, well-formed string of at most `maxBytes` UTF-8 bytes: what DynamoDB takes as a
 * key. A lone surrogate would be stored as U+FFFD, silently naming another item.
 */
export function checkKey(field: string, value: unknown, maxBytes: number): string {
  if (typeof value !== "string") {
    throw new TypeError(`${field} must be a string, got ${describe(value)}`);
  }
  if (value.length === 0) throw new TypeError(`${field} must not be empty`);
  if (!value.isWellFormed()) {
    throw new TypeError(`${field} contains a lone UTF-16 surrogate; it cannot be stored as UTF-8`);
  }
  // A UTF-16 unit is at most 3 bytes of UTF-8: most keys need no count.
  const bytes = value.length * 3 <= maxBytes ? 0 : utf8Length(value);
  if (bytes > maxBytes) {
    throw new RangeError(
      `${field} is ${bytes} bytes of UTF-8; DynamoDB keys allow at most ${maxBytes}`,
    );
  }
  return value;
}

/** A hash field name: a Map key, which DynamoDB takes long (64 KB) but never empty. */
export function checkField(field: unknown, name = "field"): string {
  return checkKey(name, field, 65_535);
}

/** The latest time DynamoDB-stored epoch seconds may hold: 9999-12-31T23:59:59Z. */
export const MAX_EPOCH_SECONDS = 253_402_300_799;

/**
 * A finite, non-negative number of seconds (an epoch time or a duration) that DynamoDB can
 * store, at most {@linkcode MAX_EPOCH_SECONDS}: a larger one is almost surely milliseconds
 * (`Date.now()`), which would fire thousands of years late.
 */
export function checkTime(field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new RangeError(
      `${field} must be a finite number of seconds >= 0, got ${describe(value)}`,
    );
  }
  if (value > MAX_EPOCH_SECONDS) {
    throw new RangeError(
      `${field} is ${value}, after 9999-12-31T23:59:59Z (${MAX_EPOCH_SECONDS}): times are epoch seconds, and this is probably milliseconds (use Date.now() / 1000)`,
    );
  }
  if (!isStorableNumber(value)) {
    throw new RangeError(
      `${field} is ${value}, which DynamoDB cannot store as a number (${NUMBER_RANGE})`,
    );
  }
  return value;
}

/**
 * The longest TTL the state stores take: 10 years, in seconds. Longer is almost surely a unit
 * mix-up: an epoch time (Redis's EXPIREAT where EXPIRE is meant), or milliseconds.
 */
export const LONGEST_TTL_SECONDS = 315_360_000;

/**
 * Refuses a state-store TTL above {@linkcode LONGEST_TTL_SECONDS}, saying which mix-up it looks
 * like; anything else (not a finite number, negative) is left to the caller's own checks.
 */
export function checkTtlHorizon(field: string, seconds: unknown): void {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return;
  if (seconds <= LONGEST_TTL_SECONDS) return;
  const years = (seconds / (365 * 86_400)).toPrecision(3);
  // Epoch milliseconds passed 1e11 in 1973; durations in ms that large are centuries.
  const looksLike = seconds >= 1e11
    ? "milliseconds (Date.now() is epoch milliseconds): pass seconds from now, e.g. " +
      "(at - Date.now()) / 1000"
    : "an absolute epoch time in seconds (Redis's EXPIREAT where EXPIRE is meant: pass " +
      "at - Date.now() / 1000) or a duration in milliseconds (divide it by 1000)";
  throw new RangeError(
    `${field} is ${seconds} seconds (${years} years); a TTL is seconds from now, at most ${LONGEST_TTL_SECONDS} (10 years). This looks like ${looksLike}`,
  );
}

/** A whole number in [min, max]. */
export function checkInteger(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(
      `${field} must be an integer from ${min} to ${max}, got ${describe(value)}`,
    );
  }
  return value;
}

/** An optional AbortSignal option, checked. */
export function checkSignal(value: unknown, field = "signal"): AbortSignal | undefined {
  if (value !== undefined && !(value instanceof AbortSignal)) {
    throw new TypeError(`${field} must be an AbortSignal, got ${describe(value)}`);
  }
  return value;
}

/** An optional callback option, checked. */
export function checkCallback<F>(field: string, value: F): F {
  if (value !== undefined && typeof value !== "function") {
    throw new TypeError(`${field} must be a function, got ${describe(value)}`);
  }
  return value;
}

/** A plain object (not null, not an array). */
export function checkObject(field: string, value: unknown): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`${field} must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

/** An event's `kind` (a string) and `data` (an object), as `exe.deferred[i]` has them. */
export function checkEventBody(field: string, event: Record<string, unknown>): void {
  if (typeof event.kind !== "string") {
    throw new TypeError(`${field}.kind must be a string, got ${describe(event.kind)}`);
  }
  checkObject(`${field}.data`, event.data);
}

/** A store's options: `null` or `undefined` mean none; anything else must be an object. */
export function checkOptions<T extends object>(options: T | null | undefined): Partial<T> {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object") {
    throw new TypeError(`options must be an object, got ${describe(options)}`);
  }
  return options;
}

/** A short, printable description of a value for error messages. */
export function describe(value: unknown): string {
  if (typeof value === "string") {
    return value.length > 60 ? `a ${value.length}-character string` : JSON.stringify(value);
  }
  if (typeof value === "bigint") return `${value}n (a BigInt)`;
  if (typeof value === "number" || typeof value === "boolean" || value == null) {
    return String(value);
  }
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/**
 * The stored size of an item as DynamoDB counts it: attribute names plus values, with the
 * documented overheads for numbers, maps and lists. Errs a little high, never low.
 */
export function itemSize(item: Record<string, AttributeValue>): number {
  let total = 0;
  for (const [name, value] of Object.entries(item)) {
    total += utf8Length(name) + attributeSize(value);
  }
  return total;
}

/** The stored size of one attribute value, as {@linkcode itemSize} counts it. */
export function attributeSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8Length(value.S);
  if (value.N !== undefined) return Math.ceil(value.N.replace(/[^0-9]/g, "").length / 2) + 1;
  if (value.B !== undefined) return value.B.length;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.M !== undefined) {
    let size = 3;
    for (const [k, v] of Object.entries(value.M)) size += utf8Length(k) + attributeSize(v) + 1;
    return size;
  }
  if (value.L !== undefined) return value.L.reduce((size, v) => size + attributeSize(v) + 1, 3);
  if (value.SS !== undefined) return value.SS.reduce((size, s) => size + utf8Length(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((size, n) => size + n.length, 0);
  if (value.BS !== undefined) return value.BS.reduce((size, b) => size + b.length, 0);
  return 0;
}

/** Throws when an item would exceed DynamoDB's 400 KB item limit. */
export function checkItemSize(field: string, item: Record<string, AttributeValue>): number {
  return checkItemBytes(field, itemSize(item));
}

/** Throws when an item of `size` bytes (as {@linkcode itemSize} counts) would exceed 400 KB. */
export function checkItemBytes(field: string, size: number): number {
  if (size > LIMITS.itemBytes) {
    throw new RangeError(
      `${field} would be a ${size}-byte item; DynamoDB items hold at most ${LIMITS.itemBytes} bytes (400 KB)`,
    );
  }
  return size;
}

const hasOwn = Object.prototype.hasOwnProperty;

const HINT = "build executions with newExecution() and change the fields you need";

/**
 * Checks that `exe` is an Execution document (DESIGN.md): the engine's fields with their types;
 * extra fields round-trip. Keys and `version` are checked by the caller.
 */
export function checkExecution(
  exe: Record<string, unknown>,
  statuses: readonly string[],
): void {
  const fail = (field: string, wanted: string, value: unknown): never => {
    throw new TypeError(`exe.${field} must be ${wanted}, got ${describe(value)} (${HINT})`);
  };
  const string = (field: string) => {
    if (typeof exe[field] !== "string") fail(field, "a string", exe[field]);
  };
  const optionalString = (field: string) => {
    const value = exe[field];
    if (value !== undefined && value !== null && typeof value !== "string") {
      fail(field, "a string or null", value);
    }
  };
  const record = (field: string, value: unknown = exe[field]) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      fail(field, "an object", value);
    }
    return value as Record<string, unknown>;
  };
  if (!statuses.includes(exe.status as string)) {
    fail("status", `one of ${statuses.join(", ")}`, exe.status);
  }
  string("root_path");
  for (
    const field of ["definition_fqn", "outcome", "error", "active_path", "parent_id", "child_id"]
  ) {
    optionalString(field);
  }
  const history = record("history");
  for (const key in history) {
    if (hasOwn.call(history, key) && typeof history[key] !== "string") {
      fail(`history.${key}`, "a string", history[key]);
    }
  }
  record("context");
  const processed = exe.processed_events;
  if (typeof processed !== "number" || !Number.isSafeInteger(processed) || processed < 0) {
    fail("processed_events", "an integer >= 0", processed);
  }
  const priority = exe.priority;
  if (typeof priority !== "number" || !Number.isInteger(priority) || priority < 0 || priority > 4) {
    fail("priority", "an integer from 0 to 4", priority);
  }
  if (!Array.isArray(exe.deferred)) fail("deferred", "an array of events", exe.deferred);
  (exe.deferred as unknown[]).forEach((event, i) => {
    const e = record(`deferred[${i}]`, event);
    if (typeof e.id !== "string") fail(`deferred[${i}].id`, "a string", e.id);
    if (typeof e.kind !== "string") fail(`deferred[${i}].kind`, "a string", e.kind);
    record(`deferred[${i}].data`, e.data);
  });
  const children = record("children");
  for (const key in children) {
    if (hasOwn.call(children, key)) record(`children.${key}`, children[key]);
  }
  const invokeSeq = record("invoke_seq");
  for (const key in invokeSeq) {
    if (!hasOwn.call(invokeSeq, key)) continue;
    const value = invokeSeq[key];
    if (typeof value !== "number" || !Number.isFinite(value)) {
      fail(`invoke_seq.${key}`, "a number", value);
    }
  }
}

/** The most trace steps a ring keeps (`traceMax`). */
const MAX_TRACE = 1_000_000;
/** The longest dedupe-mark lifetime: ten years. */
const MAX_PROCESSED_TTL = 10 * 365 * 86_400;

/** The options both execution stores take, checked: `traceMax` and `processedTtlSeconds`. */
export function checkExecutionStoreOptions(
  traceMax: unknown,
  processedTtlSeconds: unknown,
): { traceMax: number; processedTtl: number | null } {
  return {
    traceMax: checkInteger("traceMax", traceMax, 0, MAX_TRACE),
    processedTtl: processedTtlSeconds === null
      ? null
      : checkInteger("processedTtlSeconds", processedTtlSeconds, 1, MAX_PROCESSED_TTL),
  };
}

/**
 * Refuses an option name not in `known`, naming the near miss (`definitonId`: did you mean
 * `definitionId`?): a typo must never silently become a default, least of all in a delete.
 */
export function checkKnownOptions(
  what: string,
  options: object,
  known: readonly string[],
): void {
  // A Map, an array or a Date holds no named options: read as one, it is all defaults.
  const tag = Object.prototype.toString.call(options).slice(8, -1);
  if (tag !== "Object") {
    throw new TypeError(`${what} takes an object of named options, got a ${tag}`);
  }
  // Every name a read of an option would find: own (enumerable or not) and inherited (but not
  // Object.prototype's own, whatever a library added there).
  const names = new Set(Object.getOwnPropertyNames(options));
  for (const name in options) if (hasOwn.call(options, name) || !(name in {})) names.add(name);
  for (const name of names) {
    if (known.includes(name)) continue;
    const near = nearMiss(name, known);
    throw new TypeError(
      `${what} has no option ${JSON.stringify(name)}` +
        (near ? `: did you mean ${JSON.stringify(near)}?` : `; it takes ${known.join(", ")}`),
    );
  }
}

/**
 * The name in `known` closest to `name` (ignoring case) within an edit distance of 2, the first
 * listed on a tie; undefined when none is that close.
 */
export function nearMiss(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined, bestDistance = 3;
  for (const option of known) {
    const distance = editDistance(option.toLowerCase(), name.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [option, distance];
  }
  return best;
}

/** Levenshtein distance, for near misses of option names (short strings). */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(
        row[j]! + 1,
        next[j - 1]! + 1,
        row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    row = next;
  }
  return row[b.length]!;
}
