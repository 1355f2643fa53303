// What this module stores of a caller's value, in one place: the one walker that checks a value
// and gives JSON's own view of it, and DynamoDB's number limits. Every writer goes through it
// (the execution store's documents and the state store's values as JSON text, hash fields as
// native DynamoDB values), so both stores and their twins accept and refuse the same values.

/** DynamoDB's numbers: at most 38 significant digits, magnitude 0 or in [1e-130, 1e126). */
export const NUMBER_LIMITS = { digits: 38, min: 1e-130, max: 1e126 } as const;

/** {@linkcode NUMBER_LIMITS}' magnitudes, as error messages say them. */
export const NUMBER_RANGE =
  `0, or a magnitude from ${NUMBER_LIMITS.min} to below ${NUMBER_LIMITS.max}`;

/** Whether DynamoDB can store `n` as a number (a JS number never has over 38 digits). */
export function isStorableNumber(n: number): boolean {
  const size = Math.abs(n);
  return Number.isFinite(n) &&
    (size === 0 || (size >= NUMBER_LIMITS.min && size < NUMBER_LIMITS.max));
}

/** Whether a decimal number's text ("-0.00120e5") has at most DynamoDB's 38 significant digits. */
export function fitsDigits(text: string): boolean {
  const digits = text.replace(/^-/, "").replace(/[eE].*$/, "").replace(".", "")
    .replace(/^0+/, "").replace(/0+$/, "");
  return digits.length <= NUMBER_LIMITS.digits;
}

/**
 * A number as the text a DynamoDB `N` holds: integers beyond 2^53 as their exact decimal
 * digits (when 38 digits carry them), everything else as JavaScript's shortest round-trip form.
 */
export function numberText(n: number): string {
  if (Number.isInteger(n) && !Number.isSafeInteger(n)) {
    const exact = BigInt(n).toString();
    if (fitsDigits(exact)) return exact;
  }
  return String(n);
}

/** `JSON.rawJSON` (V8 has it; TypeScript's lib does not declare it yet). */
const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

/**
 * A number token of stored JSON whose digits are kept exactly (a legacy hash about to migrate).
 * Made only from text that {@linkcode fitsDigits} and is storable; the walker passes it as is.
 */
export class ExactNumber {
  constructor(readonly text: string) {}
  /** `JSON.stringify` writes the digits as they were. */
  toJSON(): unknown {
    return rawJson(this.text);
  }
}

/** DynamoDB nests maps and lists at most 32 levels deep. */
const DYNAMODB_DEPTH = 32;

/**
 * Levels of maps and lists a hash field's value may hold. DynamoDB's 32 levels count the
 * item's `hash` Map (level 1) and the innermost value (a scalar or an empty map) as levels of
 * their own: DynamoDB Local refuses 31 nested maps under `hash`, takes 30.
 */
export const FIELD_DEPTH = DYNAMODB_DEPTH - 2;

/**
 * Levels of objects and arrays a JSON document (an execution, event, context, trace step or
 * `set()` value) may hold. Python's `json` recurses once a level and gives up near its
 * recursion limit (1000): a deeper document could be written here and not read by a Python
 * worker. Half of that leaves the reading worker's own frames room.
 */
export const DOCUMENT_DEPTH = 500;

/**
 * Levels a document harel's pydantic models read (an execution, an event, a context) may hold,
 * counted from the document itself: pydantic-core's JSON parser gives up past 201 levels, and
 * the engine nests what it is given a level or two deeper (a Start's data becomes the context,
 * a deferred event sits at level 3). Half of that is room to spare.
 */
export const HAREL_DEPTH = 100;

/** Why a document deeper than {@linkcode HAREL_DEPTH} is refused, after its path. */
export const HAREL_TOO_DEEP = `nests deeper than ${HAREL_DEPTH} levels of objects and arrays ` +
  "(counted from the document): harel's pydantic models read at most 201";

/** `toJSON(key)` applied, boxed primitives unboxed: the value as `JSON.stringify` sees it. */
function jsonView(value: unknown, key: string): unknown {
  if (typeof value !== "object" || value === null || value instanceof ExactNumber) return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") value = toJSON.call(value, key);
  else if (isPlainProto(value as object)) return value; // no box: the common case, told at once
  if (
    value instanceof Number || value instanceof String || value instanceof Boolean ||
    value instanceof BigInt
  ) return value.valueOf();
  return value;
}

/** Whether `v`'s prototype is a plain object's or an array's own (or none). */
function isPlainProto(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === Array.prototype || proto === null;
}

const hasOwn = Object.prototype.hasOwnProperty;

/** How `__proto__` is written: as an ordinary own property. */
const OWN = { enumerable: true, writable: true, configurable: true } as const;

/** Maps and sets: JSON would store them as `{}`. */
const COLLECTIONS = [Map, Set, WeakMap, WeakSet];

/**
 * `value` as the stores keep it — JSON's own view of it (`toJSON` applied once, as
 * `JSON.stringify` does; boxed primitives unboxed; `undefined` properties dropped; holes in
 * arrays as null) — as a fresh tree of plain objects, arrays and primitives that each caller
 * encodes (JSON text, or a native DynamoDB value). What JSON would silently change is refused
 * with a `TypeError` naming the path: class instances (but for their `toJSON`), Map, Set,
 * BigInt, NaN, ±Infinity, functions, symbols, `undefined` in an array or on its own, cycles.
 * Deeper than {@linkcode DOCUMENT_DEPTH} levels is a `RangeError`. `native` adds DynamoDB's
 * own rules for a hash field's value: numbers DynamoDB can store, at most
 * {@linkcode FIELD_DEPTH} levels (`RangeError`), no empty key (`TypeError`). `where` (say,
 * which hash field) is added to the message. `wellFormed` refuses what harel's pydantic models
 * cannot read: a string, key or value holding a lone UTF-16 surrogate (`TypeError`), and more
 * than {@linkcode HAREL_DEPTH} levels (`RangeError`); `"depth"`, the levels alone.
 */
export function plainValue(
  field: string,
  value: unknown,
  native = false,
  where = "",
  wellFormed: boolean | "depth" = false,
): unknown {
  const maxDepth = native ? FIELD_DEPTH : wellFormed ? HAREL_DEPTH : DOCUMENT_DEPTH;
  const surrogates = wellFormed === true;
  // The containers from the root to here (a document is shallow: a list beats a Set's hashing).
  const ancestors: object[] = [];
  // The keys (strings) and indexes (numbers) from the root to here: the path, and the depth.
  const trail: (string | number)[] = [];
  const refuse = (kind: typeof TypeError, message: string) => {
    const path = field + trail.map((k) => typeof k === "number" ? `[${k}]` : `.${k}`).join("");
    return new kind(`${path} ${message}${where ? ` (${where})` : ""}`);
  };

  // A primitive kept as it is (most of a document): no path to track, nothing to visit.
  const kept = (v: unknown): boolean =>
    (typeof v === "string" && (!surrogates || v.isWellFormed())) ||
    typeof v === "boolean" || v === null ||
    (typeof v === "number" && (native ? isStorableNumber(v) : Number.isFinite(v)));

  const visit = (v: unknown): unknown => {
    switch (typeof v) {
      case "string":
        if (surrogates && !v.isWellFormed()) throw refuse(TypeError, LONE_SURROGATE);
        return v;
      case "boolean":
        return v;
      case "number":
        if (!Number.isFinite(v)) throw refuse(TypeError, `is ${v}, which JSON cannot carry`);
        if (native && !isStorableNumber(v)) {
          throw refuse(RangeError, `is ${v}; a DynamoDB number must be ${NUMBER_RANGE}`);
        }
        return v;
      case "object":
        if (v === null || v instanceof ExactNumber) return v;
        return container(v);
      case "bigint":
        throw refuse(TypeError, `is ${v}n (a BigInt), which JSON cannot carry`);
      default:
        throw refuse(
          TypeError,
          `is ${v === undefined ? "undefined" : `a ${typeof v}`}, which JSON cannot carry`,
        );
    }
  };

  const container = (v: object): unknown => {
    if (ancestors.includes(v)) throw refuse(TypeError, "refers back to itself (a cycle)");
    const unlike = isPlainProto(v) ? undefined : notPlain(v);
    if (unlike) throw refuse(TypeError, unlike);
    if (trail.length >= maxDepth) {
      throw refuse(
        RangeError,
        native
          ? `nests deeper than ${FIELD_DEPTH} levels of maps and lists: DynamoDB's ${DYNAMODB_DEPTH} levels count the hash Map and the innermost value`
          : wellFormed
          ? HAREL_TOO_DEEP
          : `nests deeper than ${DOCUMENT_DEPTH} levels of objects and arrays, more than a Python worker's json module reads`,
      );
    }
    ancestors.push(v);
    let result: unknown[] | Record<string, unknown>;
    if (Array.isArray(v)) {
      result = [];
      for (let i = 0; i < v.length; i++) {
        let item = i in v ? v[i] : null; // a hole: JSON writes null
        if (kept(item)) {
          result.push(item);
          continue;
        }
        trail.push(i);
        if (typeof item === "object" && item !== null) item = jsonView(item, String(i));
        if (item === undefined) throw refuse(TypeError, "is undefined, which JSON cannot carry");
        result.push(visit(item));
        trail.pop();
      }
    } else {
      const out: Record<string, unknown> = {};
      // Own enumerable string keys, in their order, as Object.keys lists them (without its list).
      for (const k in v) {
        if (!hasOwn.call(v, k)) continue;
        const value = (v as Record<string, unknown>)[k];
        const item = typeof value === "object" && value !== null ? jsonView(value, k) : value;
        if (item === undefined) continue;
        if (native && k === "") {
          throw refuse(TypeError, `has an empty key "", which a DynamoDB map cannot hold`);
        }
        if (surrogates && !k.isWellFormed()) {
          throw refuse(TypeError, `has the key ${JSON.stringify(k)}, which ${LONE_SURROGATE}`);
        }
        let plain: unknown = item;
        if (!kept(item)) {
          trail.push(k);
          plain = visit(item);
          trail.pop();
        }
        // `out.__proto__ = x` would set the prototype, not a key.
        if (k === "__proto__") Object.defineProperty(out, k, { ...OWN, value: plain });
        else out[k] = plain;
      }
      result = out;
    }
    ancestors.pop();
    return result;
  };

  return visit(jsonView(value, ""));
}

/** Why JSON would store `v` without its class, or undefined: plain objects and arrays pass. */
function notPlain(v: object): string | undefined {
  const proto = Object.getPrototypeOf(v);
  if (Array.isArray(v) || proto === Object.prototype || proto === null) return undefined;
  const name = (proto as { constructor?: { name?: unknown } }).constructor?.name;
  const kind = typeof name === "string" && name !== "" ? name : "non-plain object";
  return COLLECTIONS.some((c) => v instanceof c)
    ? `is a ${kind}, which JSON would store as {}; convert it (Object.fromEntries(map), [...set])`
    : `is a ${kind}, which JSON would store as a plain object without its class; pass a plain object, or give the class a toJSON() method`;
}

/** Why a string with a lone surrogate is refused, as {@linkcode plainValue} says it. */
const LONE_SURROGATE = "holds a lone UTF-16 surrogate (half of a pair, such as " +
  '"\\ud83d"), which harel\'s pydantic models refuse: a Python worker could not read it';

/**
 * A document's JSON text, checked by {@linkcode plainValue}'s rule (the error names `field`
 * and the path inside it); `wellFormed` refuses what harel's models cannot read too.
 */
export function toJson(field: string, value: unknown, wellFormed = false): string {
  const plain = plainValue(field, value, false, "", wellFormed && "depth");
  const text = JSON.stringify(plain);
  // JSON.stringify writes a lone surrogate as an escape from `\ud800` to `\udfff`: a text without
  // `\ud` holds none, and the copy of one with it is walked again for the path (`isWellFormed`
  // on every string and key costs more than the rest of the walk).
  if (wellFormed && text.includes("\\ud")) plainValue(field, plain, false, "", true);
  return text;
}

/** Python's `json.dumps` writes NaN, Infinity and -Infinity as bare words; JSON has no such. */
const PYTHON_WORDS = /"(?:[^"\\]|\\.)*"|-?Infinity|NaN/g;

/**
 * Parses JSON text, reading Python's bare NaN/Infinity words and numbers beyond a double's
 * range as `null` (JSON's own word for them). With `exact`, big number tokens keep their
 * digits (for a migration to write back unchanged). Undefined when the text is not JSON.
 */
export function parseJson(text: string, exact: boolean): { value: unknown } | undefined {
  const reviver = function (_key: string, v: unknown, context?: { source?: string }): unknown {
    if (typeof v !== "number") return v;
    if (!Number.isFinite(v)) return null;
    const source = context?.source;
    const big = Number.isInteger(v) && !Number.isSafeInteger(v);
    if (exact && big && source !== undefined && validNumberText(source)) {
      return new ExactNumber(source);
    }
    return v;
  };
  try {
    return { value: JSON.parse(text, reviver as (key: string, value: unknown) => unknown) };
  } catch {
    // Python's dialect only ever appears inside a document (an object or an array).
    if (!/^\s*[[{]/.test(text)) return undefined;
    try {
      const replaced = text.replace(
        PYTHON_WORDS,
        (match) => match.startsWith('"') ? match : "null",
      );
      return { value: JSON.parse(replaced, reviver as (key: string, value: unknown) => unknown) };
    } catch {
      return undefined;
    }
  }
}

/**
 * A JSON document another writer stored (an execution, event, context or trace step): plain
 * JSON as it is, else Python's dialect with NaN/Infinity/-Infinity read as `null`. Throws the
 * original SyntaxError when it is neither.
 */
export function parseDocument(text: string): unknown {
  try {
    return JSON.parse(text); // what we write: no reviver's cost on the common path
  } catch (error) {
    const parsed = parseJson(text, false);
    if (parsed === undefined) throw error;
    return parsed.value;
  }
}

/** Whether a JSON number token can be a DynamoDB number as it is. */
function validNumberText(source: string): boolean {
  return fitsDigits(source) && isStorableNumber(Number(source));
}
