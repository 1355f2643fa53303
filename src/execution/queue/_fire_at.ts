// deleteTimer's guard on `fire_at`. Another writer (Python's Decimal of a float) may store a
// time with more digits than a double holds: it reads back as the nearest double, and an
// equality guard on that double never matches it again, so the timer would fire on every
// sweep. The guard instead matches every decimal that reads back as this very double.
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { N } from "../../core/_attributes.ts";
import { fitsDigits } from "../../core/_json.ts";

/** A finite double as exactly `mantissa * 2 ** exponent`, plus its lowest bit (for ties). */
function exact(x: number): { mantissa: bigint; exponent: number; odd: boolean } {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const field = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & 0xfffffffffffffn;
  const sign = bits >> 63n ? -1n : 1n;
  return field === 0 ? { mantissa: sign * fraction, exponent: -1074, odd: (bits & 1n) === 1n } : {
    mantissa: sign * (fraction | (1n << 52n)),
    exponent: field - 1075,
    odd: (bits & 1n) === 1n,
  };
}

/** The double next to `x` towards `direction` (±1), for a finite `x`. */
function neighbour(x: number, direction: 1 | -1): number {
  if (x === 0) return direction * Number.MIN_VALUE;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, (x > 0) === (direction > 0) ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

/** `(a + b) / 2` exactly, as a decimal string; undefined past DynamoDB's 38 digits. */
function midpoint(a: number, b: number): string | undefined {
  const p = exact(a), q = exact(b);
  const exponent = Math.min(p.exponent, q.exponent) - 1; // the halving
  const mantissa = (p.mantissa << BigInt(p.exponent - exponent - 1)) +
    (q.mantissa << BigInt(q.exponent - exponent - 1));
  let text: string;
  if (exponent >= 0) text = (mantissa << BigInt(exponent)).toString();
  else {
    // m / 2^k = m * 5^k / 10^k: exactly k decimals.
    const k = -exponent;
    const negative = mantissa < 0n;
    const digits = ((negative ? -mantissa : mantissa) * 5n ** BigInt(k)).toString()
      .padStart(k + 1, "0");
    text = `${negative ? "-" : ""}${digits.slice(0, -k)}.${digits.slice(-k)}`
      .replace(/\.?0+$/, "");
  }
  return fitsDigits(text) ? text : undefined;
}

/**
 * The condition (on `#f`) that holds exactly when the stored `fire_at` reads back as `fireAt`:
 * the interval of decimals rounding to it, ends included when a tie rounds to it (lowest bit
 * even); the equality when an end needs over 38 digits.
 */
export function fireAtGuard(
  fireAt: number,
): { condition: string; values: Record<string, AttributeValue> } {
  const lo = midpoint(neighbour(fireAt, -1), fireAt);
  const hi = midpoint(fireAt, neighbour(fireAt, 1));
  if (lo === undefined || hi === undefined) {
    return { condition: "#f = :f", values: { ":f": N(fireAt) } };
  }
  const [above, below] = exact(fireAt).odd ? [">", "<"] : [">=", "<="];
  return {
    condition: `#f ${above} :lo AND #f ${below} :hi`,
    values: { ":lo": { N: lo }, ":hi": { N: hi } },
  };
}
