/**
 * The operator CLI: look at executions, the outbox and timers without writing code, create
 * the tables, print the IAM policy, delete an execution. Everything but `ensure-tables` and
 * `delete` only reads.
 *
 * ```sh
 * deno run -A jsr:@harel/dynamodb/cli executions --status RUNNING --limit 20
 * deno run -A jsr:@harel/dynamodb/cli show 3f2b9c0e8d7a4b1c9e6f5a4b3c2d1e0f --json
 * ```
 *
 * Exit codes: 0 done, 1 a runtime error (DynamoDB unreachable, a missing table, an unknown
 * execution), 2 a usage error.
 *
 * `outbox` and `timers` read in memory bounded by `--limit` (default 100), whatever the
 * backlog: the backlog is counted, the oldest (soonest) `--limit` rows are kept. An outbox row
 * another writer stored oddly (an event that is not JSON) is shown flagged, with its raw text.
 *
 * The endpoint is `--endpoint`, else `$DYNAMODB_ENDPOINT`, else AWS. An empty or blank
 * `--endpoint ""` is a usage error (an unset variable in a script must not mean "production");
 * an empty `DYNAMODB_ENDPOINT=` counts as unset (the shell idiom), so it means AWS, and a blank
 * one is a usage error.
 *
 * @example Running the CLI from code (as the tests do)
 * ```ts
 * import assert from "node:assert/strict";
 * import { main } from "@harel/dynamodb/cli";
 *
 * const code = await main(["policy", "--prefix", "prod"]);
 * assert.equal(code, 0);
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import { type DynamoDBClient, QueryCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import { awaitAnswer, buildClient, checkSetup, type ConnectRetry } from "./connect.ts";
import { isNamed, isUnreachable, type Item, pages, S } from "./_dynamo.ts";
import { TIMER, timerFromItem } from "./_layout.ts";
import { oldestOutbox, type OutboxRow, soonestTimers } from "./_cli_reads.ts";
import type { RelayKind, Timer } from "./types.ts";
import { type Status, STATUSES } from "./documents.ts";
import { DynamoDBStateStore } from "./state_store.ts";
import { DynamoDBStore } from "./execution_store.ts";
import { MissingSetup } from "./errors.ts";
import { leastPrivilegePolicy } from "./iam_policy.ts";

export { leastPrivilegePolicy, type PolicyDocument, type PolicyOptions } from "./iam_policy.ts";

const USAGE = `Usage: harel-dynamodb <command> [options]

Commands:
  executions [--status S[,S...]] [--definition D] [--limit N] [--cursor C]
                       list executions (summaries), one page
  show ID              an execution: its document, trace and armed timers
  delete ID --yes      delete an execution with its timers, trace and dedupe marks
                       (not its outbox entries and spawns); --json needs no --yes
  outbox [--limit N]   the outbox backlog (and pending spawns) and its N oldest entries
                       (default 100); an entry whose event is not JSON is flagged
  timers [--due] [--limit N]
                       armed timers, the N soonest (default 100; --due: only those due now)
  dead-letters KIND [--limit N]
                       what a relay gave up on (KIND: outbox, spawns or timers), the N lowest
  retry KIND KEY       make a dead letter due again; KEY: a seq, or for timers
                       EXECUTION_ID PATH FIRE_AT
  drop KIND KEY --yes  delete a dead letter for good (a pending item is refused);
                       --json needs no --yes
  ensure-tables        create the missing tables (execution store and state store)
  policy [--account A] the least-privilege IAM policy for --prefix (JSON)

Options:
  --endpoint URL       DynamoDB endpoint (default: $DYNAMODB_ENDPOINT; none = AWS); an empty
                       --endpoint is an error, an empty DYNAMODB_ENDPOINT counts as unset
  --region R           AWS region (default: $AWS_REGION; us-east-1 with an endpoint)
  --prefix P           table prefix (default: harel)
  --state-table T      the state store's table (default: harel_state)
  --json               print JSON for scripts instead of tables
  -h, --help           this help

Exit codes: 0 done, 1 runtime error, 2 usage error.`;

/** A dead letter's queue and key, from the command line. */
function parseDeadLetter(
  command: string,
  rest: string[],
): { kind: RelayKind; key: number | Timer } {
  const [kind, ...key] = rest;
  if (kind !== "outbox" && kind !== "spawns" && kind !== "timers") {
    throw new UsageError(
      `${command} needs a kind: outbox, spawns or timers, got ${JSON.stringify(kind)}`,
    );
  }
  if (command === "dead-letters") return { kind, key: 0 };
  const number = (text: string, what: string) => {
    const value = Number(text);
    if (text.trim() === "" || !Number.isFinite(value)) {
      throw new UsageError(`${what} must be a number, got ${JSON.stringify(text)}`);
    }
    return value;
  };
  if (kind === "timers") {
    if (key.length !== 3) {
      throw new UsageError(
        `a timer is EXECUTION_ID PATH FIRE_AT, got ${JSON.stringify(key.join(" "))}`,
      );
    }
    return {
      kind,
      key: { executionId: key[0]!, path: key[1]!, fireAt: number(key[2]!, "FIRE_AT") },
    };
  }
  if (key.length !== 1) {
    throw new UsageError(
      `${kind} items are keyed by one seq, got ${JSON.stringify(key.join(" "))}`,
    );
  }
  return { kind, key: number(key[0]!, "the seq") };
}

function timerText(timer: Timer): string {
  return `${timer.executionId} ${timer.path} ${timer.fireAt}`;
}

/** A dead letter's item in a few words. */
function deadLetterWhat(item: unknown): string {
  const it = item as { event?: { kind?: string }; targetId?: string | null; childId?: string };
  if (it.event) return `${it.event.kind} to ${it.targetId ?? "(none)"}`;
  if (it.childId) return `start ${it.childId}`;
  return "fire";
}

/** A usage error: exit code 2. */
class UsageError extends Error {
  override name = "UsageError";
}

/** A runtime error with a message fit for an operator: exit code 1. */
class CliError extends Error {
  override name = "CliError";
}

type Values = Record<string, string | boolean | undefined>;

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
 * @returns The exit code.
 */
export async function main(args: string[], output: CliOutput = {}): Promise<number> {
  const out = output.out ?? ((line: string) => console.log(line));
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
        yes: { type: "boolean" },
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
    await run(positionals, values, out, err);
    return 0;
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
  executions: { positionals: 0, flags: ["status", "definition", "limit", "cursor"] },
  show: { positionals: 1, flags: [] },
  delete: { positionals: 1, flags: ["yes"] },
  outbox: { positionals: 0, flags: ["limit"] },
  timers: { positionals: 0, flags: ["due", "limit"] },
  "dead-letters": { positionals: 1, flags: ["limit"] },
  // KIND and a seq, or KIND and a timer's execution id, path and fire_at.
  retry: { positionals: [2, 4], flags: [] },
  drop: { positionals: [2, 4], flags: ["yes"] },
  "ensure-tables": { positionals: 0, flags: [] },
  policy: { positionals: 0, flags: ["account"] },
};

const WHAT_THEY_TAKE: Record<string, string> = {
  show: "an execution id",
  delete: "an execution id",
  "dead-letters": "a kind: outbox, spawns or timers",
  retry: "a kind and a key: a seq, or for timers EXECUTION_ID PATH FIRE_AT",
  drop: "a kind and a key: a seq, or for timers EXECUTION_ID PATH FIRE_AT",
};
const COMMON = new Set(["endpoint", "region", "prefix", "state-table", "json", "help"]);

async function run(
  positionals: string[],
  values: Values,
  out: (line: string) => void,
  err: (line: string) => void,
) {
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
  const stateTable = values["state-table"] as string | undefined ?? "harel_state";
  const json = values.json === true;
  const print = (value: unknown) => out(JSON.stringify(value, null, 2));

  if (command === "policy") {
    print(usage(() =>
      leastPrivilegePolicy({
        prefix,
        stateTable,
        region: values.region as string | undefined,
        account: values.account as string | undefined,
      })
    ));
    return;
  }
  const deadLetter = ["dead-letters", "retry", "drop"].includes(command)
    ? parseDeadLetter(command, rest)
    : undefined;
  if (command === "drop" && !json && values.yes !== true) {
    throw new UsageError(
      `drop deletes ${rest.join(" ")} for good: run it again with --yes (or with --json)`,
    );
  }
  if (command === "delete" && !json && values.yes !== true) {
    throw new UsageError(
      `delete removes execution ${JSON.stringify(rest[0])} with its timers, trace and dedupe ` +
        "marks for good: run it again with --yes (or with --json, for scripts)",
    );
  }
  const limit = parseLimit(values.limit, command === "executions" ? 20 : 100);
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
    const reader = new DynamoDBStore(client, { prefix });
    if (command === "executions") {
      const page = await onTable(
        tables.executions.name,
        reader.listExecutions({
          limit,
          status,
          definitionId: values.definition as string | undefined,
          cursor: values.cursor as string | undefined ?? null,
        }).catch((error) => {
          // Input validation (before any request): a TypeError or RangeError is usage.
          throw error instanceof TypeError || error instanceof RangeError
            ? new UsageError(error.message)
            : error;
        }),
      );
      if (json) return print(page);
      out(table(
        ["ID", "DEFINITION", "STATUS", "ACTIVE PATH", "VERSION", "PARENT"],
        page.items.map((s) => [
          s.id,
          s.definition_id,
          s.status,
          s.active_path ?? "",
          String(s.version),
          s.parent_id ?? "",
        ]),
      ));
      out(
        page.nextCursor
          ? `${page.items.length} shown; more with --cursor ${page.nextCursor}`
          : `${page.items.length} shown; no more`,
      );
    } else if (command === "show") {
      const id = rest[0]!;
      const execution = await onTable(
        tables.executions.name,
        reader.load(id).catch((error) => {
          // Input validation (before any request): a TypeError or RangeError is usage.
          throw error instanceof TypeError || error instanceof RangeError
            ? new UsageError(error.message)
            : error;
        }),
      );
      if (!execution) {
        throw new CliError(`no execution ${JSON.stringify(id)} in ${tables.executions.name}`);
      }
      const trace = await onTable(tables.trace.name, reader.readTrace(id));
      const timers = (await queryAll(client, {
        TableName: tables.timers.name,
        KeyConditionExpression: "#e = :id",
        ExpressionAttributeNames: { "#e": TIMER.executionId },
        ExpressionAttributeValues: { ":id": S(id) },
      })).map(timerFromItem);
      if (json) return print({ execution, trace, timers });
      out(JSON.stringify(execution, null, 2));
      out("");
      out(`trace (${trace.length} steps, oldest first):`);
      for (const step of trace) out(`  ${JSON.stringify(step)}`);
      out("");
      out(`armed timers (${timers.length}):`);
      if (timers.length) out(indent(timerTable(timers)));
    } else if (command === "delete") {
      const id = rest[0]!;
      const removed = await onTable(
        tables.executions.name,
        reader.deleteExecution(id).catch((error) => {
          // Input validation (before any request): a TypeError or RangeError is usage.
          throw error instanceof TypeError || error instanceof RangeError
            ? new UsageError(error.message)
            : error;
        }),
      );
      if (json) return print({ id, ...removed });
      out(
        `${removed.execution ? "deleted execution" : "no execution"} ${id}; removed ` +
          `${removed.timers} timers, ${removed.trace} trace steps, ${removed.processed} ` +
          "dedupe marks (its outbox entries and spawns stay)",
      );
    } else if (deadLetter && command === "dead-letters") {
      const letters = await reader.deadLetters(deadLetter.kind, { limit });
      if (json) return print(letters);
      out(
        `${letters.length} dead ${
          deadLetter.kind === "outbox" ? "outbox entries" : deadLetter.kind
        }`,
      );
      if (letters.length) {
        out(table(
          ["KEY", "ATTEMPTS", "DEAD SINCE", "LAST ERROR", "WHAT"],
          letters.map((letter) => [
            typeof letter.key === "number" ? String(letter.key) : timerText(letter.key),
            String(letter.attempts),
            new Date(letter.deadAt * 1000).toISOString(),
            (letter.lastError ?? "").slice(0, 60),
            letter.item === null ? "(unreadable)" : deadLetterWhat(letter.item),
          ]),
        ));
      }
    } else if (deadLetter && (command === "retry" || command === "drop")) {
      const done = command === "retry"
        ? await reader.retryDeadLetter(deadLetter.kind, deadLetter.key)
        : await reader.dropDeadLetter(deadLetter.kind, deadLetter.key);
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
      const oldest = await onTable(
        tables.outbox.name,
        oldestOutbox(client, tables.outbox.name, limit),
      );
      if (json) return print({ outbox, spawns, oldest });
      out(`outbox backlog: ${outbox} entries; pending spawns: ${spawns}`);
      if (oldest.length) {
        out(`oldest ${oldest.length}:`);
        out(
          indent(table(["SEQ", "TARGET", "EVENT", "EVENT ID", "STATE"], oldest.map(outboxCells))),
        );
        const dead = oldest.filter((row) => row.state === "dead").length;
        if (dead) out(`${dead} of them dead-lettered (see dead-letters outbox)`);
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
        `${total} ${values.due ? "due" : "armed"} timers${
          total > timers.length ? `; the ${timers.length} soonest:` : ""
        }`,
      );
      if (timers.length) out(timerTable(timers, now));
    } else if (command === "ensure-tables") {
      await reader.ensureTables();
      await new DynamoDBStateStore(client, { tableName: stateTable }).ensureTable();
      const names = [...Object.values(tables).map((spec) => spec.name), stateTable];
      if (json) return print({ tables: names });
      out(`tables ready (${endpoint ? `at ${endpoint}` : "on AWS"}): ${names.join(", ")}`);
    }
  } finally {
    client.destroy();
  }
}

/** A client the store constructors accept for validating options; never sent on. */
const PLACEHOLDER = {
  send: () => Promise.reject(new CliError("not connected")),
} as never;

function usage<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) {
      throw new UsageError(error.message);
    }
    throw error;
  }
}

function parseLimit(text: string | boolean | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (typeof text !== "string" || !/^\d+$/.test(text) || n < 1 || n > 1000) {
    throw new UsageError(`--limit must be a whole number from 1 to 1000, got ${String(text)}`);
  }
  return n;
}

function parseStatuses(text: string | boolean | undefined): Status[] | undefined {
  if (typeof text !== "string") return undefined;
  const statuses = text.split(",").map((s) => s.trim().toUpperCase());
  for (const status of statuses) {
    if (!STATUSES.includes(status as Status)) {
      throw new UsageError(
        `--status ${JSON.stringify(status)} is not a status; one of ${STATUSES.join(", ")}`,
      );
    }
  }
  return statuses as Status[];
}

/**
 * The endpoint to use: `--endpoint`, else `$DYNAMODB_ENDPOINT`, else null (AWS). An explicit
 * empty `--endpoint` is refused, never taken as AWS; an empty variable counts as unset (the
 * shell idiom), a blank one is refused.
 */
function endpointOf(values: Values): string | null {
  const given = values.endpoint;
  if (typeof given === "string") {
    if (given.trim() === "") {
      throw new UsageError(
        `--endpoint is empty (${JSON.stringify(given)}): pass a URL, or leave --endpoint out ` +
          "to use $DYNAMODB_ENDPOINT, or AWS when that is unset",
      );
    }
    return given;
  }
  const variable = envVar("DYNAMODB_ENDPOINT");
  if (variable === undefined || variable === "") return null;
  if (variable.trim() === "") {
    throw new UsageError(
      `DYNAMODB_ENDPOINT is blank (${JSON.stringify(variable)}): set it to a URL, or unset it ` +
        "to use AWS",
    );
  }
  return variable;
}

/** How long the CLI waits for DynamoDB to answer: an operator is waiting. */
const CLI_DEADLINE_MS = 5_000;

/** A line on stderr per failed attempt while the CLI waits for DynamoDB. */
function progress(retry: ConnectRetry): string {
  const why = retry.error instanceof Error
    ? retry.error.message.split("\n")[0]
    : String(retry.error);
  return `waiting for DynamoDB at ${retry.endpoint}: attempt ${retry.attempt} failed (${why}); ` +
    `retrying in ${(retry.delayMs / 1000).toFixed(1)} s (gives up after ${
      retry.deadlineMs / 1000
    } s)`;
}

/**
 * A client for the options, once DynamoDB answers (within a few seconds, reporting each
 * failed attempt); one quick try per request after that, since an operator is waiting.
 */
async function connect(
  endpoint: string | null,
  values: Values,
  probeTable: string,
  onRetry: (retry: ConnectRetry) => void,
): Promise<DynamoDBClient> {
  const client = usage(() =>
    buildClient({
      endpoint,
      region: values.region as string | undefined,
      requestTimeoutMs: 10_000,
      clientConfig: { maxAttempts: 2 },
    })
  );
  try {
    const region = await checkSetup(client);
    await awaitAnswer(client, probeTable, {
      endpoint: endpoint || null,
      deadlineMs: CLI_DEADLINE_MS,
      backoff: { minDelayMs: 250, maxDelayMs: 1_000 },
      onRetry,
    }, region);
  } catch (error) {
    client.destroy();
    if (error instanceof MissingSetup && error.missing === "region") {
      throw new CliError(
        "no AWS region: pass --region or set AWS_REGION for AWS, " +
          "or pass --endpoint or set DYNAMODB_ENDPOINT for a local DynamoDB",
        { cause: error },
      );
    }
    throw error;
  }
  return client;
}

function envVar(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

function describeFailure(error: unknown, values: Values): string {
  if (isUnreachable(error)) {
    let where = "AWS";
    try {
      where = endpointOf(values) ?? "AWS";
    } catch { /* refused before connecting: not this failure */ }
    return `cannot reach DynamoDB at ${where}: ${(error as Error).message || String(error)}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** `work`, with a missing table reported by its name (DynamoDB's message names none). */
async function onTable<T>(tableName: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (!isNamed(error, "ResourceNotFoundException")) throw error;
    throw new CliError(
      `table ${tableName} does not exist; check --prefix and --endpoint, ` +
        "or create the tables with `ensure-tables`",
      { cause: error },
    );
  }
}

function queryAll(
  client: DynamoDBClient,
  input: ConstructorParameters<typeof QueryCommand>[0],
): Promise<Item[]> {
  return onTable(input.TableName!, queryPages(client, input));
}

async function queryPages(
  client: DynamoDBClient,
  input: ConstructorParameters<typeof QueryCommand>[0],
): Promise<Item[]> {
  const items: Item[] = [];
  const query = (start: Item | undefined) =>
    client.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
  for await (const page of pages(query)) items.push(...page.Items ?? []);
  return items;
}

/** The number of items in a table, by `Select: "COUNT"` scans (every page). */
function count(client: DynamoDBClient, tableName: string): Promise<number> {
  return onTable(tableName, countPages(client, tableName));
}

async function countPages(client: DynamoDBClient, tableName: string): Promise<number> {
  let total = 0;
  const scan = (start: Item | undefined) =>
    client.send(
      new ScanCommand({ TableName: tableName, Select: "COUNT", ExclusiveStartKey: start }),
    );
  for await (const page of pages(scan)) total += page.Count ?? 0;
  return total;
}

/** An outbox row's cells; an unreadable one shows its raw text, quoted and cut short. */
function outboxCells(row: OutboxRow): string[] {
  const seq = row.seqText ?? String(row.seq);
  const target = row.targetId ?? "(broadcast)";
  const state = stateCell(row);
  if (row.unreadable !== undefined) {
    return [seq, target, "(unreadable)", row.raw === undefined ? "" : shorten(row.raw, 60), state];
  }
  return [seq, target, cell(row.event?.kind), cell(row.event?.id), state];
}

/** A relay's verdict in a cell: "pending", or "waiting"/"dead" after n attempts. */
function stateCell(row: { state?: string; attempts?: number }): string {
  return row.state === undefined ? "pending" : `${row.state} (${row.attempts} attempts)`;
}

/**
 * A document field as a table cell: a plain string as it is; anything else, or a string with
 * control characters (a newline, a terminal escape another writer stored), as JSON.
 */
function cell(value: unknown): string {
  if (value === undefined || value === null) return "";
  // deno-lint-ignore no-control-regex
  if (typeof value === "string" && !/[\u0000-\u001f\u007f]/.test(value)) return value;
  return JSON.stringify(value) ?? String(value);
}

/** `text` as JSON (quoted, escapes visible), cut to about `max` characters. */
function shorten(text: string, max: number): string {
  const quoted = JSON.stringify(text);
  return quoted.length <= max ? quoted : `${quoted.slice(0, max - 4)}..."`;
}

function timerTable(
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

function relative(seconds: number): string {
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
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)).join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

function indent(text: string): string {
  return text.split("\n").map((line) => `  ${line}`).join("\n");
}

if (import.meta.main) Deno.exitCode = await main(Deno.args);
