// Python's repr() of a float, so ids built from a time match the Python engine's byte for byte.

/**
 * `repr(float(value))` as CPython prints it: the shortest digits that round-trip (JavaScript
 * finds the same ones), fixed notation with at least one decimal (`1700000001.0`) while the
 * decimal exponent is in [-4, 16), else `d.ddde±XX` with at least two exponent digits.
 */
export function pythonFloatRepr(value: number): string {
  if (Number.isNaN(value)) return "nan";
  if (value === Infinity) return "inf";
  if (value === -Infinity) return "-inf";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const sign = value < 0 ? "-" : "";
  // toExponential() without an argument gives the shortest round-trip digits.
  const [mantissa, exponentText] = Math.abs(value).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const exponent = Number(exponentText); // value = d.ddd × 10^exponent
  if (exponent < -4 || exponent >= 16) {
    const rest = digits.length > 1 ? `.${digits.slice(1)}` : "";
    const magnitude = String(Math.abs(exponent)).padStart(2, "0");
    return `${sign}${digits[0]}${rest}e${exponent < 0 ? "-" : "+"}${magnitude}`;
  }
  const point = exponent + 1; // digits before the decimal point
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}.0`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
