/**
 * The operator CLI: look at executions, the outbox and timers without writing code, create
 * the tables, print the IAM policy. Everything but `ensure-tables` only reads.
 *
 * ```sh
 * deno run -A jsr:@harel/dynamodb/cli executions --status RUNNING --limit 20
 * deno run -A jsr:@harel/dynamodb/cli show 3f2b9c0e8d7a4b1c9e6f5a4b3c2d1e0f --json
 * ```
 *
 * Exit codes: 0 done, 1 a runtime error (DynamoDB unreachable, a missing table, an unknown
 * execution), 2 a usage error.
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
import {
  type DynamoDBClient,
  QueryCommand,
  ScanCommand,
  type ScanCommandInput,
} from "@aws-sdk/client-dynamodb";
import { awaitAnswer, buildClient, checkSetup, type ConnectRetry } from "./connect.ts";
import { isNamed, isUnreachable, type Item, N, pages, S } from "./_dynamo.ts";
import { OUTBOX, TIMER, timerFromItem } from "./_layout.ts";
import type { Timer } from "./types.ts";
import { type Status, STATUSES } from "./documents.ts";
import { DynamoDBStateStore } from "./state_store.ts";
import { DynamoDBStore } from "./execution_store.ts";
import { MissingSetup } from "./errors.ts";
import { parseDocument } from "./_state_values.ts";
import { leastPrivilegePolicy } from "./iam_policy.ts";

export { leastPrivilegePolicy, type PolicyDocument, type PolicyOptions } from "./iam_policy.ts";

const USAGE = `Usage: harel-dynamodb <command> [options]

Commands:
  executions [--status S[,S...]] [--definition D] [--limit N] [--cursor C]
                       list executions (summaries), one page
  show ID              an execution: its document, trace and armed timers
  outbox [--limit N]   the outbox backlog (and pending spawns) and its oldest entries
  timers [--due] [--limit N]
                       armed timers, soonest first (--due: only those due now)
  ensure-tables        create the missing tables (execution store and state store)
  policy [--account A] the least-privilege IAM policy for --prefix (JSON)

Options:
  --endpoint URL       DynamoDB endpoint (default: $DYNAMODB_ENDPOINT; none = AWS)
  --region R           AWS region (default: $AWS_REGION; us-east-1 with an endpoint)
  --prefix P           table prefix (default: harel)
  --state-table T      the state store's table (default: harel_state)
  --json               print JSON for scripts instead of tables
  -h, --help           this help

Exit codes: 0 done, 1 runtime error, 2 usage error.`;

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

const COMMANDS: Record<string, { positionals: number; flags: string[] }> = {
  executions: { positionals: 0, flags: ["status", "definition", "limit", "cursor"] },
  show: { positionals: 1, flags: [] },
  outbox: { positionals: 0, flags: ["limit"] },
  timers: { positionals: 0, flags: ["due", "limit"] },
  "ensure-tables": { positionals: 0, flags: [] },
  policy: { positionals: 0, flags: ["account"] },
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
  if (rest.length !== spec.positionals) {
    throw new UsageError(
      spec.positionals === 0
        ? `${command} takes no arguments, got ${JSON.stringify(rest.join(" "))}`
        : `${command} needs exactly ${spec.positionals} argument (an execution id)`,
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
  const limit = parseLimit(values.limit, command === "executions" ? 20 : 10);
  const status = parseStatuses(values.status);
  // Checked before any request: a bad prefix is a usage error, not a runtime one.
  const store = usage(() => new DynamoDBStore(PLACEHOLDER, { prefix }));
  usage(() => new DynamoDBStateStore(PLACEHOLDER, { tableName: stateTable }));
  const tables = store.tables;

  const client = await connect(values, tables.executions.name, (retry) => err(progress(retry)));
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
    } else if (command === "outbox") {
      const outbox = await count(client, tables.outbox.name);
      const spawns = await count(client, tables.spawns.name);
      const oldest = (await scanAll(client, { TableName: tables.outbox.name }))
        .map((item) => ({
          // Read leniently (no JSON text shows as no event; Python's NaN as null): this command is for looking.
          seq: Number(item[OUTBOX.seq]?.N),
          targetId: item[OUTBOX.targetId]?.S ?? null,
          event: parseDocument(item[OUTBOX.event]?.S ?? "null") as
            | { id?: string; kind?: string }
            | null,
        }))
        .sort((a, b) => a.seq - b.seq)
        .slice(0, limit);
      if (json) return print({ outbox, spawns, oldest });
      out(`outbox backlog: ${outbox} entries; pending spawns: ${spawns}`);
      if (oldest.length) {
        out(`oldest ${oldest.length}:`);
        out(indent(table(
          ["SEQ", "TARGET", "EVENT", "EVENT ID"],
          oldest.map((e) => [
            String(e.seq),
            e.targetId ?? "(broadcast)",
            e.event?.kind ?? "",
            e.event?.id ?? "",
          ]),
        )));
      }
    } else if (command === "timers") {
      const now = Date.now() / 1000;
      const input: ScanCommandInput = { TableName: tables.timers.name };
      if (values.due) {
        Object.assign(input, {
          FilterExpression: "#f <= :now",
          ExpressionAttributeNames: { "#f": TIMER.fireAt },
          ExpressionAttributeValues: { ":now": N(now) },
        });
      }
      const all = (await scanAll(client, input)).map(timerFromItem)
        .sort((a, b) => a.fireAt - b.fireAt || a.executionId.localeCompare(b.executionId));
      const timers = all.slice(0, limit);
      if (json) return print({ total: all.length, timers });
      out(
        `${all.length} ${values.due ? "due" : "armed"} timers${
          all.length > timers.length ? `; the ${timers.length} soonest:` : ""
        }`,
      );
      if (timers.length) out(timerTable(timers, now));
    } else if (command === "ensure-tables") {
      await reader.ensureTables();
      await new DynamoDBStateStore(client, { tableName: stateTable }).ensureTable();
      const names = [...Object.values(tables).map((spec) => spec.name), stateTable];
      if (json) return print({ tables: names });
      out(`tables ready: ${names.join(", ")}`);
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
  values: Values,
  probeTable: string,
  onRetry: (retry: ConnectRetry) => void,
): Promise<DynamoDBClient> {
  const endpoint = values.endpoint as string | undefined ?? envVar("DYNAMODB_ENDPOINT") ?? null;
  const client = usage(() =>
    buildClient({
      endpoint: endpoint || null,
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
  const where = values.endpoint ?? envVar("DYNAMODB_ENDPOINT") ?? "AWS";
  if (isUnreachable(error)) {
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

function scanAll(client: DynamoDBClient, input: ScanCommandInput): Promise<Item[]> {
  return onTable(input.TableName!, scanPages(client, input));
}

async function scanPages(client: DynamoDBClient, input: ScanCommandInput): Promise<Item[]> {
  const items: Item[] = [];
  const scan = (start: Item | undefined) =>
    client.send(new ScanCommand({ ...input, ExclusiveStartKey: start }));
  for await (const page of pages(scan)) items.push(...page.Items ?? []);
  return items;
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

function timerTable(timers: Timer[], now = Date.now() / 1000): string {
  return table(
    ["EXECUTION", "PATH", "FIRE AT", "IN"],
    timers.map((t) => [
      t.executionId,
      t.path,
      Number.isFinite(t.fireAt) && Math.abs(t.fireAt) < 8.64e12
        ? new Date(t.fireAt * 1000).toISOString()
        : String(t.fireAt),
      relative(t.fireAt - now),
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
