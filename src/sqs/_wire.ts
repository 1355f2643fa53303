// What harel's SQS transport puts on the wire, as pure functions: the message body (the Event as
// its pydantic model dumps it) and the checks of a group id, both before anything is sent.
import { plainValue } from "../core/_json.ts";
import { describe, utf8Length } from "../core/_validate.ts";

/** SQS's limit on a `MessageGroupId`, in characters. */
export const MAX_GROUP_ID_LENGTH = 128;

/** SQS's largest message body, in bytes (1 MiB; a queue's `MaximumMessageSize` may be lower). */
export const MAX_BODY_BYTES = 1_048_576;

/** The characters SQS takes in a `MessageGroupId`: letters, digits and ASCII punctuation. */
const GROUP_ID = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]+$/;

/** Characters SQS refuses in a message body (outside #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD and astral). */
const NOT_IN_SQS = /[\uFFFE\uFFFF]/;

/** The group id, checked as SQS checks a `MessageGroupId`; a RangeError or TypeError otherwise. */
export function checkGroupId(field: string, groupId: unknown): string {
  if (typeof groupId !== "string" || groupId.length === 0) {
    throw new TypeError(`${field} must be a non-empty string, got ${describe(groupId)}`);
  }
  if (groupId.length > MAX_GROUP_ID_LENGTH) {
    throw new RangeError(
      `${field} is ${groupId.length} characters: an SQS MessageGroupId holds at most ` +
        `${MAX_GROUP_ID_LENGTH}, so execution ${JSON.stringify(groupId.slice(0, 40))}... ` +
        "cannot be driven through SQS",
    );
  }
  if (!GROUP_ID.test(groupId)) {
    throw new TypeError(
      `${field} ${JSON.stringify(groupId)} holds a character an SQS MessageGroupId refuses ` +
        "(it takes letters, digits and ASCII punctuation, no spaces)",
    );
  }
  return groupId;
}

/** An ISO 8601 date-time as JavaScript and Python write it. */
const ISO_TIME =
  /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d)?)(?:[.,](\d{1,}))?(Z|z|[+-]\d\d:?\d\d)?$/;

/** Whether a date and a clock name a real moment (no February 30th, no 25 o'clock). */
function realTime(date: string, clock: string): boolean {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  const [hh, mm, ss = 0] = clock.split(":").map(Number) as [number, number, number?];
  const at = new Date(Date.UTC(y, m - 1, d, hh, mm, ss));
  return at.getUTCFullYear() === y && at.getUTCMonth() === m - 1 && at.getUTCDate() === d &&
    at.getUTCHours() === hh && at.getUTCMinutes() === mm && at.getUTCSeconds() === ss;
}

/**
 * A date-time as pydantic 2 dumps a `datetime` it parsed from `text`: seconds always, the
 * fraction as microseconds (none when zero), UTC as `Z`, other offsets as `+HH:MM`. A time
 * pydantic would refuse is a TypeError naming the field.
 */
export function pydanticTime(field: string, text: unknown): string | null {
  if (text === null || text === undefined) return null;
  const match = typeof text === "string" ? ISO_TIME.exec(text) : null;
  if (!match || !realTime(match[1]!, match[2]!)) {
    throw new TypeError(
      `${field} must be null or an ISO 8601 date-time such as "2026-01-31T12:00:00Z" ` +
        `(harel's Event model parses it as a datetime), got ${describe(text)}`,
    );
  }
  const [, date, clock, fraction, zone] = match;
  const time = clock!.length === 5 ? `${clock}:00` : clock!;
  const micros = (fraction ?? "").slice(0, 6).padEnd(6, "0");
  const frac = /^0*$/.test(micros) ? "" : `.${micros}`;
  let offset = "";
  if (zone !== undefined) {
    const hhmm = zone.toUpperCase() === "Z"
      ? "+00:00"
      : zone.replace(/^([+-]\d\d):?(\d\d)$/, "$1:$2");
    offset = hhmm === "+00:00" || hhmm === "-00:00" ? "Z" : hhmm;
  }
  return `${date}T${time}${frac}${offset}`;
}

/**
 * The `MessageBody` harel's transport sends for `event`: `Event.model_dump_json()`, compact JSON
 * with the keys `id, kind, created_time, received_time, data` in that order and raw UTF-8.
 * Fields the model does not have are dropped, as pydantic drops them. What the model or SQS
 * would refuse (no id, a kind that is not a string, data that is not a JSON object, a time that
 * is not ISO 8601, a body over 1 MiB) is an error naming the field, before anything is sent.
 */
export function messageBody(event: unknown): string {
  if (typeof event !== "object" || event === null || Array.isArray(event)) {
    throw new TypeError(`event must be an Event object, got ${describe(event)}`);
  }
  const e = event as Record<string, unknown>;
  if (typeof e.id !== "string" || e.id.length === 0) {
    throw new TypeError(
      `event.id must be a non-empty string (the dedupe key), got ${describe(e.id)}`,
    );
  }
  if (typeof e.kind !== "string" || e.kind.length === 0) {
    throw new TypeError(`event.kind must be a non-empty string, got ${describe(e.kind)}`);
  }
  const data = e.data === undefined ? {} : e.data;
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new TypeError(
      `event.data must be a JSON object (harel's data: dict), got ${describe(data)}`,
    );
  }
  const body = JSON.stringify({
    id: e.id,
    kind: e.kind,
    created_time: pydanticTime("event.created_time", e.created_time),
    received_time: pydanticTime("event.received_time", e.received_time),
    data: plainValue("event.data", data),
  });
  if (NOT_IN_SQS.test(body)) {
    throw new TypeError(
      `event ${JSON.stringify(e.id)} holds U+FFFE or U+FFFF, which SQS refuses in a message`,
    );
  }
  const bytes = utf8Length(body);
  if (bytes > MAX_BODY_BYTES) {
    throw new RangeError(
      `event ${JSON.stringify(e.id)} is ${bytes} bytes as a message body: SQS takes at most ` +
        `${MAX_BODY_BYTES} (1 MiB)`,
    );
  }
  return body;
}
