// What harel's SQS transport puts on the wire: the message body and the group id, checked.
import { HAREL_DEPTH, HAREL_TOO_DEEP, plainValue } from "../core/_json.ts";
import { checkKey, describe, LIMITS, utf8Length } from "../core/_validate.ts";
import { pydanticTime } from "../core/_event_time.ts";
import { storedText } from "../core/_stored_event.ts";

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

/** A string of the event (its id, its kind): non-empty, and no lone surrogate pydantic refuses. */
function eventString(field: string, value: unknown, what: string): string {
  if (typeof value !== "string" || value.length === 0) {
    throw new TypeError(`${field} must be a non-empty string${what}, got ${describe(value)}`);
  }
  if (!value.isWellFormed()) {
    throw new TypeError(
      `${field} holds a lone UTF-16 surrogate, which harel's pydantic Event model refuses`,
    );
  }
  return value;
}

/** An event id: also the range key of a worker's dedupe mark, which DynamoDB caps. */
function eventId(id: unknown): string {
  checkKey("event.id", eventString("event.id", id, " (the dedupe key)"), LIMITS.sortKeyBytes);
  return id as string;
}

/**
 * The `MessageBody` harel's transport sends: `Event.model_dump_json()` (compact, keys in the
 * model's order, unknown fields dropped), or another writer's stored text byte for byte once
 * checked. What the model, a worker or SQS would refuse is an error naming the field.
 */
export function messageBody(event: unknown, maxBytes: number = MAX_BODY_BYTES): string {
  if (typeof event !== "object" || event === null || Array.isArray(event)) {
    throw new TypeError(`event must be an Event object, got ${describe(event)}`);
  }
  const e = event as Record<string, unknown>;
  const stored = storedText(event);
  const body = stored !== undefined && readsAsEvent(stored) ? stored : JSON.stringify(
    plainValue(
      "event",
      {
        id: eventId(e.id),
        kind: eventString("event.kind", e.kind, ""),
        created_time: pydanticTime("event.created_time", e.created_time),
        received_time: pydanticTime("event.received_time", e.received_time),
        data: eventData(e.data),
      },
      false,
      "",
      true,
    ),
  );
  if (NOT_IN_SQS.test(body)) {
    throw new TypeError(
      `${
        notInSqs("event", JSON.parse(body))
      } holds U+FFFE or U+FFFF, which SQS refuses in a message`,
    );
  }
  const bytes = utf8Length(body);
  if (bytes > maxBytes) {
    throw new RangeError(
      `event ${JSON.stringify(e.id)} is ${bytes} bytes as a message body: the queue takes at ` +
        `most ${maxBytes} (its MaximumMessageSize)`,
    );
  }
  return body;
}

function eventData(data: unknown): object {
  if (data === undefined) return {};
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new TypeError(
      `event.data must be a JSON object (harel's data: dict), got ${describe(data)}`,
    );
  }
  return data;
}

/** Whether another writer's event text is strict JSON harel reads (bare NaN is not); else throws. */
function readsAsEvent(text: string): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return false;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return false;
  const e = parsed as Record<string, unknown>;
  if (e.id !== undefined) eventId(e.id);
  eventString("event.kind", e.kind, "");
  pydanticTime("event.created_time", e.created_time);
  pydanticTime("event.received_time", e.received_time);
  checkParsed("event.data", eventData(e.data), 2);
  return true;
}

/** Refuses a lone surrogate in a parsed value's strings and keys, and nesting harel cannot read. */
function checkParsed(path: string, value: unknown, depth: number): void {
  if (typeof value === "string" && !value.isWellFormed()) {
    throw new TypeError(`${path} holds a lone UTF-16 surrogate, which harel's pydantic refuses`);
  }
  if (typeof value !== "object" || value === null) return; // numbers are the stored text's
  if (depth > HAREL_DEPTH) throw new RangeError(`${path} ${HAREL_TOO_DEEP}`);
  for (const [key, item] of Object.entries(value)) {
    const at = Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`;
    checkParsed(at, key, depth);
    checkParsed(at, item, depth + 1);
  }
}

/** The path of the first string or key of a parsed body that holds a character SQS refuses. */
function notInSqs(path: string, value: unknown): string | undefined {
  if (typeof value === "string") return NOT_IN_SQS.test(value) ? path : undefined;
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const at = Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`;
    const found = NOT_IN_SQS.test(key) ? at : notInSqs(at, item);
    if (found !== undefined) return found;
  }
  return undefined;
}
