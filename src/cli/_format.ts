// How the CLI prints: tables, timers, outbox rows, dead letters and `show`'s outbox, as text.
import type { ShownOutboxRow } from "./_cli_reads.ts";
import type { ExecutionOutbox, OutboxEntryState, RelayKind, Timer } from "../core/types.ts";
import type { TimerState } from "../core/operator_types.ts";

/** Epoch seconds as an ISO 8601 time to the second (`2026-11-01T12:00:00Z`). */
export function isoSeconds(seconds: number): string {
  return Number.isFinite(seconds) && Math.abs(seconds) < 8.64e12
    ? new Date(Math.floor(seconds) * 1000).toISOString().replace(".000Z", "Z")
    : String(seconds);
}

/** A timer's relay bookkeeping as the timer table shows it: pending, waiting or dead. */
export function withState(timer: TimerState): Timer & { state?: string; attempts?: number } {
  const { executionId, path, fireAt, attempts } = timer;
  const state = timer.deadAt !== null ? "dead" : timer.retryAt !== null ? "waiting" : undefined;
  return { executionId, path, fireAt, ...(state ? { state, attempts } : {}) };
}

/** `n` and a noun that agrees with it: "1 timer", "2 timers", "1 entry", "0 entries". */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}

/** What `dead-letters KIND` counts: its noun in the singular and the plural. */
export const DEAD_LETTERS: Record<RelayKind, [string, string]> = {
  outbox: ["dead outbox entry", "dead outbox entries"],
  spawns: ["dead spawn", "dead spawns"],
  timers: ["dead timer", "dead timers"],
};

export function timerText(timer: Timer): string {
  return `${timer.executionId} ${timer.path} ${timer.fireAt}`;
}

/** A dead letter's item in a few words (stored fields of another type as JSON). */
export function deadLetterWhat(item: unknown): string {
  const it = item as { event?: { kind?: unknown }; targetId?: string | null; childId?: string };
  if (it.event) return `${cell(it.event.kind)} to ${cell(it.targetId) || "(none)"}`;
  if (it.childId) return `start ${cell(it.childId)}`;
  return "fire";
}

/** An outbox row's cells; an unreadable one shows its raw text, quoted and cut short. */
export function outboxCells(row: ShownOutboxRow): string[] {
  const seq = row.seqText ?? String(row.seq);
  const target = row.targetId ?? "(broadcast)";
  const state = stateCell(row);
  if (row.unreadable !== undefined) {
    return [seq, target, "(unreadable)", row.raw === undefined ? "" : shorten(row.raw, 60), state];
  }
  return [seq, target, cell(row.event?.kind), cell(row.event?.id), state];
}

/** A field as a cell: a plain string as it is; anything else, or control characters, as JSON. */
export function cell(value: unknown): string {
  if (value === undefined || value === null) return "";
  // deno-lint-ignore no-control-regex
  if (typeof value === "string" && !/[\u0000-\u001f\u007f]/.test(value)) return value;
  return JSON.stringify(value) ?? String(value);
}

/** `text` as JSON (quoted, escapes visible), cut to about `max` characters. */
export function shorten(text: string, max: number): string {
  const quoted = JSON.stringify(text);
  return quoted.length <= max ? quoted : `${quoted.slice(0, max - 4)}..."`;
}

export function timerTable(
  timers: (Timer & { state?: string; attempts?: number })[],
  now = Date.now() / 1000,
): string {
  return table(
    ["EXECUTION", "PATH", "FIRE AT", "IN", "STATE"],
    timers.map((t) => [
      t.executionId,
      t.path,
      Number.isFinite(t.fireAt) && Math.abs(t.fireAt) < 8.64e12
        ? new Date(t.fireAt * 1000).toISOString()
        : String(t.fireAt),
      relative(t.fireAt - now),
      stateCell(t),
    ]),
  );
}

export function relative(seconds: number): string {
  const abs = Math.abs(seconds);
  const text = abs < 120
    ? `${Math.round(abs)} s`
    : abs < 7200
    ? `${Math.round(abs / 60)} min`
    : abs < 172_800
    ? `${Math.round(abs / 3600)} h`
    : `${Math.round(abs / 86_400)} d`;
  return seconds < 0 ? `${text} ago` : text;
}

/** Columns padded to their widest cell. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)).join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

export function indent(text: string): string {
  return text.split("\n").map((line) => `  ${line}`).join("\n");
}

/** A relay's verdict in a cell: pending, waiting or dead after n attempts, or held behind a seq. */
function stateCell(
  row: { state?: string; attempts?: number; heldBehind?: number },
): string {
  if (row.state === undefined) return "pending";
  const attempts = row.attempts ? counted(row.attempts, "attempt") : "";
  if (row.state === "held") {
    return `held behind ${row.heldBehind}${attempts ? ` (${attempts})` : ""}`;
  }
  return `${row.state} (${attempts || "0 attempts"})`;
}

/** The lines `show ID` prints for an execution's outbox. */
export function outboxLines(outbox: ExecutionOutbox): string[] {
  const state = (e: OutboxEntryState) =>
    e.state === "held"
      ? `held behind ${e.heldBehind ?? "(being released)"}`
      : e.state === "pending"
      ? "pending"
      : `${e.state} (${counted(e.attempts, "attempt")})`;
  const rows = (entries: OutboxEntryState[], who: string, whom: (e: OutboxEntryState) => string) =>
    table(
      ["SEQ", who, "EVENT", "EVENT ID", "STATE"],
      entries.map((e) => [
        String(e.seq),
        whom(e),
        e.event === null ? "(unreadable)" : cell(e.event.kind),
        e.event === null ? "" : cell(e.event.id),
        state(e),
      ]),
    );
  const lines = [
    `outbox entries it emitted, not delivered yet (${outbox.emitted.length}${
      outbox.emittedPartial
        ? "; some may be missing: its item does not list every target it emitted to, or there are more"
        : ""
    }):`,
  ];
  if (outbox.emitted.length) {
    lines.push(indent(rows(outbox.emitted, "TARGET", (e) => cell(e.targetId) || "(broadcast)")));
  }
  lines.push(
    `outbox entries to it that failed or are held (${outbox.targeting.length}${
      outbox.targetingPartial ? "; the lowest, there are more" : ""
    }):`,
  );
  if (outbox.targeting.length) {
    lines.push(indent(rows(outbox.targeting, "SOURCE", (e) => cell(e.sourceId) || "unknown")));
  }
  if ([...outbox.emitted, ...outbox.targeting].some((e) => e.state === "dead")) {
    lines.push(
      "dead ones: `retry outbox SEQ` makes one due again, `drop outbox SEQ --yes` drops it",
    );
  }
  return lines;
}
