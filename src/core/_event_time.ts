// An event's `created_time` / `received_time` as harel's pydantic `Event` reads and dumps it: one
// rule for the commit (what a Python worker's outbox read must parse) and the SQS wire.
import { describe } from "./_validate.ts";

/** An ISO 8601 date-time as JavaScript and Python write it: date, clock, fraction, offset. */
const ISO_TIME =
  /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d))?(?:[.,](\d{1,}))?(Z|z|([+-])(\d\d):?(\d\d))?$/;

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Whether a date and a clock name a real moment (no February 30th, no 25 o'clock, no year 0),
 * by arithmetic: it runs on every event a commit writes.
 */
function realTime(y: number, m: number, d: number, hh: number, mm: number, ss: number): boolean {
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  const days = m === 2 && leap ? 29 : MONTH_DAYS[m - 1]!;
  return y >= 1 && m >= 1 && m <= 12 && d >= 1 && d <= days && hh <= 23 && mm <= 59 && ss <= 59;
}

/** The parts of a time pydantic reads (`ISO_TIME`'s groups); else a TypeError naming the field. */
function timeParts(field: string, text: unknown): RegExpExecArray {
  const match = typeof text === "string" ? ISO_TIME.exec(text) : null;
  if (
    !match ||
    !realTime(+match[1]!, +match[2]!, +match[3]!, +match[4]!, +match[5]!, +(match[6] ?? 0))
  ) {
    throw new TypeError(
      `${field} must be null or an ISO 8601 date-time such as "2026-01-31T12:00:00Z" ` +
        `(harel's Event model parses it as a datetime), got ${describe(text)}`,
    );
  }
  const [, , , , , , , , , sign, hours, minutes] = match;
  if (Number(hours) > 23 || Number(minutes) > 59) {
    throw new TypeError(
      `${field} has the offset ${sign}${hours}:${minutes}: an offset must be within ±23:59 ` +
        `(harel's Event model refuses it), got ${describe(text)}`,
    );
  }
  return match;
}

/**
 * A date-time as pydantic 2 dumps a `datetime` it parsed from `text` (seconds always, microseconds,
 * UTC as `Z`). A time pydantic would refuse is a TypeError naming the field.
 */
export function pydanticTime(field: string, text: unknown): string | null {
  if (text === null || text === undefined) return null;
  const [, y, mo, d, hh, mi, ss = "00", fraction, zone, sign, hours, minutes] = timeParts(
    field,
    text,
  );
  const micros = (fraction ?? "").slice(0, 6).padEnd(6, "0");
  const frac = /^0*$/.test(micros) ? "" : `.${micros}`;
  let offset = "";
  if (zone !== undefined) {
    const hhmm = sign === undefined ? "+00:00" : `${sign}${hours}:${minutes}`;
    offset = hhmm === "+00:00" || hhmm === "-00:00" ? "Z" : hhmm;
  }
  return `${y}-${mo}-${d}T${hh}:${mi}:${ss}${frac}${offset}`;
}

/** Checks an event's two times by {@linkcode pydanticTime}'s rule (`field` names the event). */
export function checkEventTimes(field: string, event: Record<string, unknown>): void {
  if (event.created_time != null) timeParts(`${field}.created_time`, event.created_time);
  if (event.received_time != null) timeParts(`${field}.received_time`, event.received_time);
}

/**
 * An event's `created_time` in epoch seconds (ISO 8601; without an offset it is UTC, as harel
 * engines write it), or null.
 */
export function createdTime(text: unknown): number | null {
  if (typeof text !== "string") return null;
  const match = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d(?:\.\d+)?)?)(Z|[+-]\d\d:?\d\d)?$/i
    .exec(text.trim());
  if (!match) return null;
  const [, date, time, offset] = match;
  const ms = Date.parse(`${date}T${time}${offset ?? "Z"}`);
  return Number.isFinite(ms) ? ms / 1000 : null;
}
