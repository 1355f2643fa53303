// A time as an operator types it (the CLI's `--before`, the dashboard's `?before=`): one rule for
// both, so that what one takes the other takes, and milliseconds are refused the same way.
import { checkTime, MAX_EPOCH_SECONDS } from "./_validate.ts";

/** What a time may be written as, for the messages. */
const EXPECTED = "a date (2026-11-01 or 2026-11-01T12:00:00Z) or epoch seconds (1793491200)";

/**
 * `text` as epoch seconds: an ISO 8601 date (midnight UTC), a date and time with its offset, or
 * epoch seconds. Anything else (milliseconds, a time without offset, no such day) is a RangeError.
 */
export function parseTimeText(name: string, text: string): number {
  const dateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(
    text,
  );
  const refuse = () => {
    const hint = /T/.test(text) && !dateTime ? " (a time needs its offset: Z or +02:00)" : "";
    const shown = text.length > 60 ? `${text.slice(0, 60)}…` : text;
    return new RangeError(`${name} needs ${EXPECTED}, got ${JSON.stringify(shown)}${hint}`);
  };
  if (/^\d+(\.\d+)?$/.test(text)) {
    if (text.length > 30) throw refuse();
    const seconds = Number(text);
    if (seconds > MAX_EPOCH_SECONDS) {
      throw new RangeError(
        `${name} ${text} is epoch milliseconds (a date after 9999): give epoch seconds ` +
          `(${Math.floor(seconds / 1000)}) or a date`,
      );
    }
    return checkTime(name, seconds);
  }
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text);
  if (!date && !dateTime) throw refuse();
  const ms = Date.parse(date ? `${text}T00:00:00Z` : text);
  // Date.parse rolls 2026-02-30 over to March 2: a day that does not exist is refused.
  const [year, month, day] = text.slice(0, 10).split("-").map(Number) as [number, number, number];
  const real = new Date(Date.UTC(year, month - 1, day)).toISOString().slice(0, 10);
  if (Number.isNaN(ms) || real !== text.slice(0, 10) || ms < 0) throw refuse();
  return ms / 1000;
}
