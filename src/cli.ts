/**
 * The operator CLI: look at executions, the outbox and timers, create and check the tables,
 * print the IAM policy, delete executions, retry or drop dead letters, harel's control plane,
 * and `relay` (one pass publishing to harel's SQS queue). `--help` lists the commands.
 *
 * ```sh
 * deno run -A jsr:@harel/dynamodb/cli executions --status RUNNING --limit 20
 * deno run -A jsr:@harel/dynamodb/cli show 3f2b9c0e8d7a4b1c9e6f5a4b3c2d1e0f --json
 * ```
 *
 * Exit codes: 0 done, 1 a runtime error, 2 a usage error, 3 `check-tables` found differences.
 * The endpoint is `--endpoint`, else `$DYNAMODB_ENDPOINT`, else AWS; an empty `--endpoint` is a
 * usage error, never "production".
 *
 * @module
 */
import { parseArgs } from "node:util";
import { markHeld, oldestOutbox, soonestTimers } from "./cli/_cli_reads.ts";
import { checkConfirmed, isControl, parseReason, runControl } from "./cli/_control.ts";
import { runRelay } from "./cli/_relay.ts";
import { listCommand, otherWriterCommitTime } from "./cli/_executions.ts";
import { DynamoDBStateStore } from "./state/state_store.ts";
import { DynamoDBStore } from "./execution/execution_store.ts";
import { UnreadableExecution } from "./core/errors.ts";
import type { TableProgress } from "./dynamo/tables.ts";
import { byFireAt } from "./core/_bounded.ts";
import type { TimerState } from "./core/operator_types.ts";
import {
  bulkDeadLetterOptions,
  bulkDeleteOptions,
  runBulkDeadLetters,
  runBulkDelete,
} from "./cli/_bulk.ts";
import {
  CliError,
  endpointOf,
  parseDeadLetter,
  parseKinds,
  parseLimit,
  parseStatuses,
  refusedAsUsage,
  usage,
  UsageError,
  type Values,
} from "./cli/_args.ts";
import { connect, count, describeFailure, onTable, progress } from "./cli/_client.ts";
import {
  cell,
  counted,
  DEAD_LETTERS,
  deadLetterWhat,
  indent,
  isoSeconds,
  outboxCells,
  outboxLines,
  relative,
  shorten,
  table,
  timerTable,
  timerText,
  withState,
} from "./cli/_format.ts";

import { checkTablesCommand, offlineCommand } from "./cli/_tables.ts";

export {
  leastPrivilegePolicy,
  type PolicyDocument,
  type PolicyOptions,
} from "./dynamo/iam_policy.ts";

const USAGE = `Usage: harel-dynamodb <command> [options]

Commands:
  executions [--status S[,S...]] [--definition D] [--before DATE|EPOCH] [--limit N]
             [--cursor C] [--scan] [--include-undated] [--other-writers]
                       list executions (summaries), one page; with --status newest
                       commit first; --before: last committed before DATE (stuck ones)
  show ID              an execution: its document, when it was last committed and
                       expires, its trace, armed timers and outbox entries (those it
                       emitted, those to it that failed or are held)
  delete ID --yes      delete an execution with its timers, trace and dedupe marks
                       (not its outbox entries and spawns); --json needs no --yes
  delete --status S --before DATE|EPOCH [--definition D] [--scan] [--include-undated]
         [--allow-open] --yes
                       delete every execution in S (finished ones unless --allow-open)
                       last committed before DATE, each as above; progress on stderr;
                       Ctrl-C stops, running it again continues
  outbox [--limit N] [--other-writers]
                       the outbox backlog (and pending spawns) and its N oldest entries
                       (default 100), each pending, waiting, dead or held behind an earlier
                       entry of its target; an entry whose event is not JSON is flagged
  timers [--due] [--limit N] [--other-writers]
                       armed timers, the N soonest (default 100; --due: only those due now)
  dead-letters KIND [--limit N]
                       what a relay gave up on (KIND: outbox, spawns or timers), the N lowest
  retry KIND KEY       make a dead letter due again; KEY: a seq (e.g. 42), or for timers
                       EXECUTION_ID PATH FIRE_AT (epoch seconds), as dead-letters lists them
  drop KIND KEY --yes  delete a dead letter for good (a pending item is refused);
                       --json needs no --yes
  retry KIND --all [--target T | --untargeted] --yes
  drop KIND --all [--target T | --untargeted] --yes
                       every dead letter of KIND (outbox: of target T, or of no target);
                       progress on stderr; Ctrl-C stops, running it again continues
  adopt [KIND]         adopt into the relay index the rows another writer wrote without
                       its attributes (the Python store): one scan
  suspend ID           harel's suspend: a RUNNING execution and its children become SUSPENDED
  resume ID            harel's resume: a SUSPENDED execution and its children become RUNNING
  cancel ID [--reason JSON] --yes
                       harel's cancel as if every state had a cancel handler (the CLI knows
                       no definitions): CANCELLING, with a Cancel event (the reason as its
                       data) in the outbox for the relay; children CANCELLED; one that never
                       started, or is DONE, becomes CANCELLED at once, as harel makes it
  terminate ID --yes   harel's terminate: it and its children CANCELLED at once (a DONE
                       one too, as harel does)
  relay [--queue Q] [--sqs-endpoint URL] [--limit N]
                       one pass of FleetClient.relay() for a cron: the N lowest outbox
                       entries and N soonest due timers (default 1000, as FleetClient.relay())
                       published to harel's SQS FIFO queue Q (default stm.fifo; SQS at
                       --sqs-endpoint, else $SQS_ENDPOINT, else AWS); a failed publish is
                       retried by later passes for ever, an event harel cannot read is set aside
  ensure-tables [--other-writers]
                       create the missing tables (execution store and state store); with
                       --other-writers, as a store built with otherWriters: true needs them;
                       each step on stderr; a change DynamoDB refuses fails at once, and it
                       gives up after 10 minutes (running it again goes on from there)
  check-tables [--other-writers]
                       compare the tables with their definitions: every difference and
                       its fix (exit code 3 when one differs)
  tables --format cloudformation|terraform|json [--other-writers] [--account A]
                       the tables' definitions and the IAM policy, for --prefix,
                       --state-table, --region and --account (no DynamoDB needed)
  policy [--account A] [--other-writers]
                       the least-privilege IAM policy for --prefix and --state-table (JSON);
                       --other-writers adds the stream reads of stores built with
                       otherWriters: true

Options:
  --endpoint URL       DynamoDB endpoint (default: $DYNAMODB_ENDPOINT; none = AWS); an empty
                       --endpoint is an error, an empty DYNAMODB_ENDPOINT counts as unset
  --region R           AWS region (default: $AWS_REGION; us-east-1 with an endpoint)
  --prefix P           table prefix (default: harel)
  --state-table T      the state store's table (default: the prefix's, P_state: harel_state)
  --json               print JSON for scripts instead of tables
  -h, --help           this help

DATE is ISO 8601 (2026-11-01, or 2026-11-01T12:00:00Z with its offset) or epoch seconds.
--scan reads the whole table instead of the status index: it also finds executions the
Python store wrote; --include-undated also takes those whose last commit time is unknown.
--other-writers (tables shared with the Python store): executions --status also lists what
other writers committed that the index does not show yet, read from the executions table's
stream (first, within --limit); outbox and timers read the whole table, every writer's rows,
with or without it. None of them writes anything.

Exit codes: 0 done, 1 runtime error, 2 usage error, 3 check-tables found differences.`;

/** Where the CLI writes: stdout and stderr by default, capturable in tests. */
export interface CliOutput {
  /** Prints a line of results. @default {console.log} */
  out?: (line: string) => void;
  /** Prints a line of diagnostics. @default {console.error} */
  err?: (line: string) => void;
}

/**
 * Runs the CLI on `args` and returns its exit code (0 done, 1 runtime error, 2 usage error).
 *
 * @example Printing the policy of a prefix
 * ```ts
 * import { main } from "@harel/dynamodb/cli";
 *
 * Deno.exitCode = await main(["policy", "--prefix", "prod"]);
 * ```
 *
 * @param args The command line, without the program name.
 * @param output Where to print.
 */
export async function main(args: string[], output: CliOutput = {}): Promise<number> {
  const out = (line: string): void => void (output.out ?? console.log)(line);
  const err = output.err ?? ((line: string) => console.error(line));
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        endpoint: { type: "string" },
        region: { type: "string" },
        prefix: { type: "string" },
        "state-table": { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        status: { type: "string" },
        definition: { type: "string" },
        limit: { type: "string" },
        cursor: { type: "string" },
        due: { type: "boolean" },
        account: { type: "string" },
        "other-writers": { type: "boolean" },
        yes: { type: "boolean" },
        before: { type: "string" },
        scan: { type: "boolean" },
        "include-undated": { type: "boolean" },
        "allow-open": { type: "boolean" },
        all: { type: "boolean" },
        target: { type: "string" },
        untargeted: { type: "boolean" },
        reason: { type: "string" },
        queue: { type: "string" },
        "sqs-endpoint": { type: "string" },
        format: { type: "string" },
      },
    }));
  } catch (error) {
    err(`error: ${(error as Error).message}`);
    err("Run with --help for usage.");
    return 2;
  }
  if (values.help) {
    out(USAGE);
    return 0;
  }
  try {
    return await run(positionals, values, out, err) ?? 0;
  } catch (error) {
    if (error instanceof UsageError) {
      err(`error: ${error.message}`);
      err("Run with --help for usage.");
      return 2;
    }
    err(`error: ${describeFailure(error, values)}`);
    return 1;
  }
}

const COMMANDS: Record<string, { positionals: number | number[]; flags: string[] }> = {
  executions: {
    positionals: 0,
    flags: [
      "status",
      "definition",
      "limit",
      "cursor",
      "before",
      "scan",
      "include-undated",
      "other-writers",
    ],
  },
  show: { positionals: 1, flags: [] },
  // An execution id, or a bulk delete's filter (--status and --before).
  delete: {
    positionals: [1, 0],
    flags: ["yes", "status", "definition", "before", "scan", "include-undated", "allow-open"],
  },
  outbox: { positionals: 0, flags: ["limit", "other-writers"] },
  timers: { positionals: 0, flags: ["due", "limit", "other-writers"] },
  "dead-letters": { positionals: 1, flags: ["limit"] },
  // KIND and a seq, or KIND and a timer's execution id, path and fire_at.
  // ... or KIND alone with --all (every dead letter; outbox: of one target).
  retry: { positionals: [1, 2, 4], flags: ["all", "target", "untargeted", "yes"] },
  drop: { positionals: [1, 2, 4], flags: ["all", "target", "untargeted", "yes"] },
  adopt: { positionals: [0, 1], flags: [] },
  suspend: { positionals: 1, flags: [] },
  resume: { positionals: 1, flags: [] },
  cancel: { positionals: 1, flags: ["reason", "yes"] },
  terminate: { positionals: 1, flags: ["yes"] },
  relay: { positionals: 0, flags: ["queue", "sqs-endpoint", "limit"] },
  "ensure-tables": { positionals: 0, flags: ["other-writers"] },
  policy: { positionals: 0, flags: ["account", "other-writers"] },
  tables: { positionals: 0, flags: ["format", "account", "other-writers"] },
  "check-tables": { positionals: 0, flags: ["other-writers"] },
};

const WHAT_THEY_TAKE: Record<string, string> = {
  show: "an execution id",
  suspend: "an execution id",
  resume: "an execution id",
  cancel: "an execution id",
  terminate: "an execution id",
  delete: "an execution id, or none with --status and --before",
  "dead-letters": "a kind: outbox, spawns or timers",
  retry: "a kind and a key: a seq, or for timers EXECUTION_ID PATH FIRE_AT; or a kind with --all",
  drop: "a kind and a key: a seq, or for timers EXECUTION_ID PATH FIRE_AT; or a kind with --all",
  adopt: "a kind (outbox, spawns or timers), or none for all three",
};
const COMMON = new Set(["endpoint", "region", "prefix", "state-table", "json", "help"]);

async function run(
  positionals: string[],
  values: Values,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number | void> {
  const [command, ...rest] = positionals;
  if (command === undefined) throw new UsageError("no command given");
  const spec = COMMANDS[command];
  if (!spec) {
    throw new UsageError(
      `unknown command ${JSON.stringify(command)}; commands: ${Object.keys(COMMANDS).join(", ")}`,
    );
  }
  const counts = [spec.positionals].flat();
  if (!counts.includes(rest.length)) {
    throw new UsageError(
      counts[0] === 0
        ? `${command} takes no arguments, got ${JSON.stringify(rest.join(" "))}`
        : `${command} needs exactly ${counts.join(" or ")} argument${
          counts.length > 1 || counts[0]! > 1 ? "s" : ""
        } (${WHAT_THEY_TAKE[command]}), got ${JSON.stringify(rest.join(" "))}`,
    );
  }
  for (const flag of Object.keys(values)) {
    if (!COMMON.has(flag) && !spec.flags.includes(flag)) {
      throw new UsageError(`--${flag} does not apply to ${command}`);
    }
  }
  const prefix = values.prefix as string | undefined ?? "harel";
  const stateTable = values["state-table"] as string | undefined ?? `${prefix}_state`;
  const json = values.json === true;
  const print = (value: unknown) => out(JSON.stringify(value, null, 2));

  const definitions = {
    prefix,
    stateTable,
    region: values.region as string | undefined,
    account: values.account as string | undefined,
    otherWriters: values["other-writers"] === true,
  };
  if (offlineCommand(command, values.format, definitions, out, print)) return;
  const all = (command === "retry" || command === "drop") && values.all === true
    ? bulkDeadLetterOptions(command, rest, values)
    : undefined;
  if (!all && (values.target !== undefined || values.untargeted === true)) {
    throw new UsageError(`--target and --untargeted go with ${command} KIND --all`);
  }
  if (!all && (command === "retry" || command === "drop") && rest.length === 1) {
    throw new UsageError(
      `${command} needs a key after the kind (${WHAT_THEY_TAKE[command]}), got ${
        JSON.stringify(rest.join(" "))
      }`,
    );
  }
  const deadLetter = !all && ["dead-letters", "retry", "drop"].includes(command)
    ? parseDeadLetter(command, rest)
    : undefined;
  const adopt = command === "adopt" ? parseKinds(rest) : undefined;
  if (command === "drop" && !all && !json && values.yes !== true) {
    throw new UsageError(
      `drop deletes ${rest.join(" ")} for good: run it again with --yes (or with --json)`,
    );
  }
  const bulk = command === "delete" && rest.length === 0
    ? bulkDeleteOptions(values, json)
    : undefined;
  if (command === "delete" && !bulk && (values.status ?? values.before) !== undefined) {
    throw new UsageError(
      "delete takes an execution id or --status and --before, not both",
    );
  }
  if (command === "delete" && !bulk && !json && values.yes !== true) {
    throw new UsageError(
      `delete removes execution ${JSON.stringify(rest[0])} with its timers, trace and dedupe ` +
        "marks for good: run it again with --yes (or with --json, for scripts)",
    );
  }
  if (isControl(command)) {
    checkConfirmed(command, rest[0]!, values);
    parseReason(values.reason);
  }
  // A relay pass takes what FleetClient.relay() takes by default (1,000); a view, a screenful.
  const limit = parseLimit(
    values.limit,
    command === "executions" ? 20 : command === "relay" ? 1000 : 100,
  );
  const status = parseStatuses(values.status);
  const endpoint = endpointOf(values);
  // Checked before any request: a bad prefix is a usage error, not a runtime one.
  const store = usage(() => new DynamoDBStore(PLACEHOLDER, { prefix }));
  usage(() => new DynamoDBStateStore(PLACEHOLDER, { tableName: stateTable }));
  const tables = store.tables;

  const client = await connect(
    endpoint,
    values,
    tables.executions.name,
    (retry) => err(progress(retry)),
  );
  try {
    // The relay publishes a fleet's rows: its store is the mixed fleet's. The views
    // (executions, outbox, timers) write nothing: their store runs no feed of its own.
    const reader = new DynamoDBStore(client, {
      prefix,
      otherWriters: command === "relay" ||
        (definitions.otherWriters && !["executions", "outbox", "timers"].includes(command)),
    });
    if (command === "executions") {
      await listCommand(reader, client, { limit, status, values, json, out });
    } else if (command === "show") {
      const id = rest[0]!;
      const seen = await onTable(
        tables.executions.name,
        refusedAsUsage(reader.inspectExecution(id)).catch((error) => {
          // Its document cannot be read: say so, and show the rest.
          if (error instanceof UnreadableExecution) return error;
          throw error;
        }),
      );
      if (!seen) {
        throw new CliError(`no execution ${JSON.stringify(id)} in ${tables.executions.name}`);
      }
      if (seen instanceof UnreadableExecution) {
        const [trace, timers] = await Promise.all([
          onTable(tables.trace.name, reader.readTrace(id)),
          onTable(tables.timers.name, reader.readTimers(id)),
        ]);
        const { reason, data } = seen;
        if (json) return print({ unreadable: { id, reason, data }, trace, timers });
        out(`execution ${JSON.stringify(id)} is unreadable: ${reason}`);
        out(`data as stored: ${data === null ? "(none)" : shorten(data, 2000)}`);
        out("");
        printTraceAndTimers(out, trace, timers, Date.now() / 1000);
        return;
      }
      const { execution, timers, expiresAt } = seen;
      // The time the listing gives it (from the stream) when its item does not say.
      const updatedAt = seen.updatedAt ??
        await onTable(tables.executions.name, otherWriterCommitTime(client, tables, id));
      const trace = await onTable(tables.trace.name, reader.readTrace(id));
      const outbox = await onTable(tables.outbox.name, reader.executionOutbox(id));
      if (json) return print({ execution, updatedAt, expiresAt, trace, timers, outbox });
      const now = Date.now() / 1000;
      const when = (at: number | null, otherwise: string) =>
        at === null ? otherwise : `${isoSeconds(at)} (${relative(at - now)})`;
      out(JSON.stringify(execution, null, 2));
      out("");
      out(`updated: ${when(updatedAt, "unknown (last written by another writer)")}`);
      out(`expires: ${when(expiresAt, "never (kept until deleted)")}`);
      out("");
      printTraceAndTimers(out, trace, timers, now);
      out("");
      for (const line of outboxLines(outbox)) out(line);
    } else if (isControl(command)) {
      await onTable(tables.executions.name, runControl(reader, command, rest[0]!, values, out));
    } else if (all) {
      await onTable(tables[all.kind].name, runBulkDeadLetters(reader, all, json, out, err));
    } else if (adopt) {
      const adopted: Record<string, number> = {};
      for (const kind of adopt) {
        adopted[kind] = await onTable(tables[kind].name, reader.adoptRows(kind));
      }
      if (json) return print(adopted);
      for (const [kind, n] of Object.entries(adopted)) {
        out(`${kind}: adopted ${counted(n, "row")} into the relay index`);
      }
    } else if (command === "delete" && bulk) {
      await onTable(
        tables.executions.name,
        runBulkDelete(reader, bulk, json, out, err),
      );
    } else if (command === "delete") {
      const id = rest[0]!;
      const removed = await onTable(
        tables.executions.name,
        refusedAsUsage(reader.deleteExecution(id)),
      );
      if (json) return print({ id, ...removed });
      out(
        `${removed.execution ? "deleted execution" : "no execution"} ${id}; removed ` +
          `${counted(removed.timers, "timer")}, ${counted(removed.trace, "trace step")}, ` +
          `${counted(removed.processed, "dedupe mark")} (its outbox entries and spawns stay)`,
      );
    } else if (deadLetter && command === "dead-letters") {
      const letters = await reader.deadLetters(deadLetter.kind, { limit });
      if (json) return print(letters);
      out(counted(letters.length, ...DEAD_LETTERS[deadLetter.kind]));
      if (letters.length) {
        out(table(
          ["KEY", "ATTEMPTS", "DEAD SINCE", "LAST ERROR", "WHAT", "SOURCE"],
          letters.map((letter) => [
            typeof letter.key === "number" ? String(letter.key) : timerText(letter.key),
            String(letter.attempts),
            new Date(letter.deadAt * 1000).toISOString(),
            cell((letter.lastError ?? "").slice(0, 60)),
            letter.item === null ? "(unreadable)" : deadLetterWhat(letter.item),
            // The execution it came from; the Python store's rows do not say.
            cell(letter.sourceId) || "unknown",
          ]),
        ));
      }
    } else if (deadLetter && (command === "retry" || command === "drop")) {
      const done = await refusedAsUsage(
        command === "retry"
          ? reader.retryDeadLetter(deadLetter.kind, deadLetter.key)
          : reader.dropDeadLetter(deadLetter.kind, deadLetter.key),
      );
      if (json) return print({ kind: deadLetter.kind, key: deadLetter.key, done });
      if (!done) {
        throw new CliError(
          `no dead ${deadLetter.kind} item ${rest.slice(1).join(" ")}: it is not there, or it is ` +
            `pending (the relay delivers it), or (timers) it fires at another time; ` +
            `\`dead-letters ${deadLetter.kind}\` lists them`,
        );
      }
      out(
        command === "retry"
          ? `${deadLetter.kind} ${rest.slice(1).join(" ")}: due again; the next pass takes it up`
          : `${deadLetter.kind} ${rest.slice(1).join(" ")}: gone`,
      );
    } else if (command === "outbox") {
      const outbox = await count(client, tables.outbox.name);
      const spawns = await count(client, tables.spawns.name);
      const oldest = markHeld(
        await onTable(tables.outbox.name, oldestOutbox(client, tables.outbox.name, limit)),
        Date.now() / 1000,
      );
      if (json) return print({ outbox, spawns, oldest });
      out(`outbox backlog: ${counted(outbox, "entry", "entries")}; pending spawns: ${spawns}`);
      if (oldest.length) {
        out(`oldest ${oldest.length}:`);
        out(
          indent(table(["SEQ", "TARGET", "EVENT", "EVENT ID", "STATE"], oldest.map(outboxCells))),
        );
        const dead = oldest.filter((row) => row.state === "dead").length;
        if (dead) out(`${dead} of them dead-lettered (see dead-letters outbox)`);
        const held = oldest.filter((row) => row.state === "held").length;
        if (held) {
          out(`${held} of them held behind an earlier dead or waiting entry of their target`);
        }
        const unreadable = oldest.filter((row) => row.unreadable !== undefined).length;
        if (unreadable) {
          out(`${unreadable} of them unreadable (raw text shown; --json says why)`);
        }
      }
    } else if (command === "timers") {
      const now = Date.now() / 1000;
      const { total, timers } = await onTable(
        tables.timers.name,
        soonestTimers(client, tables.timers.name, { limit, dueAt: values.due ? now : undefined }),
      );
      if (json) return print({ total, timers });
      out(
        `${counted(total, values.due ? "due timer" : "armed timer")}${
          total > timers.length ? `; the ${timers.length} soonest:` : ""
        }`,
      );
      if (timers.length) out(timerTable(timers, now));
    } else if (command === "relay") {
      await runRelay(reader, values, limit, out, err);
    } else if (command === "check-tables") {
      return await checkTablesCommand(client, definitions, json, out, print);
    } else if (command === "ensure-tables") {
      // Each change and wait on stderr: on AWS an index can take minutes to build.
      const ensuring = {
        onProgress: (p: TableProgress) =>
          err(`${p.table}: ${p.step} (${(p.elapsedMs / 1000).toFixed(1)} s)`),
      };
      await reader.ensureTables(ensuring);
      await new DynamoDBStateStore(client, { tableName: stateTable }).ensureTable(ensuring);
      const names = [...Object.values(tables).map((spec) => spec.name), stateTable];
      if (json) return print({ tables: names });
      out(`tables ready (${endpoint ? `at ${endpoint}` : "on AWS"}): ${names.join(", ")}`);
    }
  } finally {
    client.destroy();
  }
}

/** `show`'s trace (oldest first) and armed timers. */
function printTraceAndTimers(
  out: (line: string) => void,
  trace: Record<string, unknown>[],
  timers: TimerState[],
  now: number,
): void {
  out(`trace (${counted(trace.length, "step")}, oldest first):`);
  for (const step of trace) out(`  ${JSON.stringify(step)}`);
  out("");
  out(`armed timers (${timers.length}):`);
  if (timers.length) out(indent(timerTable(timers.toSorted(byFireAt).map(withState), now)));
}

/** A client the store constructors accept for validating options; never sent on. */
const PLACEHOLDER = {
  send: () => Promise.reject(new CliError("not connected")),
} as never;

if (import.meta.main) Deno.exitCode = await main(Deno.args);
