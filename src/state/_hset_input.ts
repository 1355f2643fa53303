// What `hset` takes, checked alike by DynamoDBStateStore and its twin, within DynamoDB's 4 KB
// update expression.
import { checkField, describe } from "../core/_validate.ts";
import { plainValue } from "../core/_json.ts";
import { optionsTtl } from "./_state_values.ts";

/** An `hset` call's fields (name and plain value, in the caller's order) and TTL in seconds. */
export interface HsetInput {
  readonly fields: readonly (readonly [string, unknown])[];
  readonly ttl: number | undefined;
}

/** The fields `hset(key, field, value)` or `hset(key, fields, options)` sets, checked. */
export function checkHsetInput(fieldOrFields: unknown, valueOrOptions: unknown): HsetInput {
  if (typeof fieldOrFields === "string") {
    const field = checkField(fieldOrFields);
    const plain = plainValue("value", valueOrOptions, true, `hash field ${JSON.stringify(field)}`);
    return { fields: [[field, plain]], ttl: undefined };
  }
  if (
    fieldOrFields === null || typeof fieldOrFields !== "object" || Array.isArray(fieldOrFields) ||
    !isPlainObject(fieldOrFields)
  ) {
    throw new TypeError(
      `hset takes a field name and a value, or an object of fields like { step: 1 }, got ${
        describe(fieldOrFields)
      }`,
    );
  }
  const entries = Object.entries(fieldOrFields);
  if (entries.length === 0) {
    throw new TypeError("fields is an empty object: hset needs at least one field");
  }
  const fields = entries.map(([name, value]) => {
    const field = checkField(name, "a field name in fields");
    return [field, plainValue(`fields[${JSON.stringify(field)}]`, value, true)] as const;
  });
  checkFieldCount(fields.length);
  return { fields, ttl: optionsTtl("hset()", valueOrOptions) };
}

/** An object literal or one without a prototype: not a Map, a Date or a class instance. */
function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** DynamoDB's limit on one request's update expression, in bytes. */
const EXPRESSION_BYTES = 4 * 1024;

/** The update expression of an `hset` of `count` fields, then `tail`: the one the limit is checked on. */
export function hsetExpression(count: number, tail: string): string {
  const sets = Array.from({ length: count }, (_, i) => `#h.#f${i} = :v${i}`);
  return `SET ${[...sets, tail].join(", ")}`;
}

/** The longest `tail` a hash write adds (`updated_at`, the TTL, the write ids), generously. */
const TAIL_BYTES = 160;

/** Most fields one `hset` call sets: what fits DynamoDB's 4 KB update expression. */
export const MAX_HSET_FIELDS: number = (() => {
  let n = 1;
  while (hsetExpression(n + 1, "").length + TAIL_BYTES <= EXPRESSION_BYTES) n++;
  return n;
})();

/** Refuses more fields than one write can name (it must be one write: all of it or none). */
function checkFieldCount(count: number): void {
  if (count > MAX_HSET_FIELDS) {
    throw new RangeError(
      `hset of ${count} fields: at most ${MAX_HSET_FIELDS} fit in one write (DynamoDB's ` +
        `${EXPRESSION_BYTES}-byte update expression limit); split the fields over several calls`,
    );
  }
}
