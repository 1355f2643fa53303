// Attribute values and error classification that load no SDK code, so that the in-memory twins
// (which run without permissions) share the layout and the commit's checks.
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { numberText } from "./_json.ts";

/** A stored item or key, as the SDK's low-level commands read and write it. */
export type Item = Record<string, AttributeValue>;

export const S = (value: string): AttributeValue => ({ S: value });
/**
 * A number attribute (seqs, versions, epoch seconds, indexes, hash values): DynamoDB's text of
 * it, integers beyond 2^53 with their exact digits.
 */
export const N = (value: number): AttributeValue => ({ N: numberText(value) });

/** Whether `error` is an Error named `name` (the SDK names its service errors this way). */
export function isNamed(error: unknown, name: string): boolean {
  return error instanceof Error && error.name === name;
}

const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNABORTED",
  "UND_ERR_SOCKET",
]);
const NOT_READY_NAMES = new Set([
  "TimeoutError",
  "RequestTimeout",
  "RequestTimeoutException",
  "ServiceUnavailable",
  "ServiceUnavailableException",
  "InternalServerError",
  "InternalFailure",
]);

/**
 * Connection failures, timeouts and 5xx answers: DynamoDB unreachable or not ready yet. Auth and
 * validation errors are not: waiting longer does not fix them.
 */
export function isUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const e = error as Error & {
    code?: string;
    $metadata?: { httpStatusCode?: number };
  };
  if (e.code !== undefined && UNREACHABLE_CODES.has(e.code)) return true;
  if (NOT_READY_NAMES.has(e.name)) return true;
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  return e.cause !== undefined && e.cause !== e && isUnreachable(e.cause);
}

/**
 * A stored attribute value as plain JavaScript, for every reader: maps as objects (`__proto__`
 * an own key), sets as arrays, binary as base64; `exactNumbers`: a number beyond a double as its
 * text. Never throws.
 */
export function plainAttribute(value: AttributeValue, exactNumbers = false): unknown {
  const number = (text: string) => {
    const n = Number(text);
    return !exactNumbers || (Number.isFinite(n) && String(n) === text) ? n : text;
  };
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return number(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.L !== undefined) return value.L.map((v) => plainAttribute(v, exactNumbers));
  if (value.M !== undefined) return plainMap(value.M, {}, exactNumbers);
  if (value.SS !== undefined) return [...value.SS];
  if (value.NS !== undefined) return value.NS.map(number);
  if (value.B !== undefined) return value.B.toBase64();
  if (value.BS !== undefined) return value.BS.map((b) => b.toBase64());
  return null;
}

/** A map's entries as own properties of `target` (see {@linkcode plainAttribute}). */
export function plainMap<T extends Record<string, unknown>>(
  map: Record<string, AttributeValue>,
  target: T,
  exactNumbers = false,
): T {
  for (const [key, v] of Object.entries(map)) {
    Object.defineProperty(target, key, {
      value: plainAttribute(v, exactNumbers),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return target;
}

/** A stored number as a finite JS number, or undefined (absent, or not finite). */
export function numberOf(value: AttributeValue | undefined): number | undefined {
  if (value?.N === undefined) return undefined;
  const n = Number(value.N);
  return Number.isFinite(n) ? n : undefined;
}
