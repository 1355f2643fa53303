// `show ID`'s outbox: the entries an execution emitted that are not delivered yet, and those
// to it that failed or are held, each with the relay's state of it, as tables for people.
import type { ExecutionOutbox, OutboxEntryState } from "../core/types.ts";
import { cell, counted, indent, table } from "./_format.ts";

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
