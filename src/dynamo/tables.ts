/**
 * The tables both stores keep, and creating them idempotently.
 *
 * @module
 */
import {
  type AttributeDefinition,
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type GlobalSecondaryIndex,
  type TableDescription,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import type { DynamoDBSender } from "./_dynamo.ts";
import { isNamed } from "./_dynamo.ts";
import { abortable } from "./_abortable.ts";
import { STREAM, type TableDefinition } from "./table_definitions.ts";
import { backoffDelay, sleep } from "../core/_backoff.ts";
import { checkCallback, checkOptions, describe } from "../core/_validate.ts";
import { checkOptionNames } from "../core/_option_names.ts";

export {
  checkTableName,
  type ExecutionTables,
  executionTables,
  type IndexSpec,
  type TableSpec,
} from "../core/table_specs.ts";

/**
 * Options of `ensureTables()` and `ensureTable()`: how long they may take, and what they say
 * meanwhile.
 *
 * @example Creating the tables at deploy time, saying what is done
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *   ensureTables: false,
 * });
 * await store.ensureTables({
 *   deadlineMs: 120_000,
 *   onProgress: (p) => console.error(`${p.table}: ${p.step} (${p.elapsedMs} ms)`),
 * });
 * ```
 */
export interface EnsureTablesOptions {
  /**
   * Gives up after this many ms with a {@linkcode TableNotReady} naming the table and step;
   * ensuring again goes on from there (`Infinity`: no deadline).
   * @default {600000} (10 minutes)
   */
  deadlineMs?: number;
  /** Told of each change sent to a table, of each wait (every 5 s at most), and when it is ready. */
  onProgress?: (progress: TableProgress) => void;
}

/**
 * One step of `ensureTables()`, as `onProgress` is told of it.
 *
 * @example A line per step
 * ```ts
 * import type { TableProgress } from "@harel/dynamodb";
 *
 * const line = (p: TableProgress) => `${p.table}: ${p.step} (${Math.round(p.elapsedMs / 1000)} s)`;
 * console.log(line({ table: "harel_outbox", step: "creating the table", elapsedMs: 12 }));
 * ```
 */
export interface TableProgress {
  /** The table. */
  table: string;
  /** What is done or awaited, in words: `"creating the table"`, ..., `"ready"`. */
  step: string;
  /** Milliseconds since `ensureTables()` began. */
  elapsedMs: number;
}

/**
 * `ensureTables()` or `ensureTable()` could not make a table ready: DynamoDB refused a change
 * for good, or the deadline passed. `table` and `step` say where; `cause` is DynamoDB's refusal.
 *
 * @example Saying which table and step failed
 * ```ts
 * import { DynamoDBStore, TableNotReady } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *   ensureTables: false,
 * });
 * try {
 *   await store.ensureTables({ deadlineMs: 60_000 });
 * } catch (error) {
 *   if (!(error instanceof TableNotReady)) throw error;
 *   console.error(error.table, error.step, error.message);
 * }
 * ```
 */
export class TableNotReady extends Error {
  /** Always `"TableNotReady"`. */
  override name = "TableNotReady";

  /** Builds the error; `step` is where it stopped, `options.cause` DynamoDB's refusal. */
  constructor(
    readonly table: string,
    readonly step: string,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(`table ${table}: ${step}: ${reason}`, options);
  }
}

/** How long ensuring the tables may take by default: 10 minutes. */
const ENSURE_DEADLINE_MS = 600_000;

/** One `ensureTables()` call: its deadline (a signal), its start, and where progress goes. */
export interface EnsureRun {
  signal: AbortSignal;
  deadlineMs: number;
  started: number;
  onProgress?: (progress: TableProgress) => void;
}

/** The options checked, and the run they start now. */
export function ensureRun(options?: EnsureTablesOptions): EnsureRun {
  const given = checkOptions(options);
  checkOptionNames("ensureTables()", given);
  const { deadlineMs = ENSURE_DEADLINE_MS, onProgress } = given;
  if (typeof deadlineMs !== "number" || !(deadlineMs > 0)) {
    throw new RangeError(
      `deadlineMs must be a number of milliseconds above 0 (Infinity: none), got ${
        describe(deadlineMs)
      }`,
    );
  }
  checkCallback("onProgress", onProgress);
  // setTimeout holds at most 2^31 - 1 ms; beyond that, no deadline.
  const signal = deadlineMs < 2 ** 31
    ? AbortSignal.timeout(deadlineMs)
    : new AbortController().signal;
  return { signal, deadlineMs, started: Date.now(), onProgress };
}

/** One table being ensured: its client (stopping at the deadline) and the step it is at. */
class TableSteps {
  readonly client: DynamoDBSender;
  #step = "reading its description";
  #reported = 0;

  constructor(client: DynamoDBSender, readonly table: string, readonly run: EnsureRun) {
    this.client = abortable(client, run.signal);
  }

  /** Says what is done now. */
  begin(step: string): void {
    this.#step = step;
    this.#report(step);
  }

  /** Polls `done` (with backoff) until true, saying what it waits for every 5 s at most. */
  async until(waitingFor: string, done: () => Promise<boolean>): Promise<void> {
    let attempt = 0;
    while (!(await done())) {
      if (Date.now() - this.#reported >= 5_000) this.#report(`waiting: ${waitingFor}`);
      await sleep(backoffDelay(attempt++, POLL), this.run.signal);
    }
  }

  /** The error to throw for `error`: the deadline's as a {@linkcode TableNotReady}. */
  failure(error: unknown): unknown {
    const { signal, deadlineMs } = this.run;
    if (!signal.aborted || error instanceof TableNotReady) return error;
    return new TableNotReady(
      this.table,
      this.#step,
      `not done after ${deadlineMs / 1000} s (deadlineMs); ensuring the tables again goes on ` +
        "from here",
      { cause: error },
    );
  }

  /** A refusal that retrying cannot cure, as a {@linkcode TableNotReady}. */
  refused(error: unknown): TableNotReady {
    const said = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return new TableNotReady(
      this.table,
      this.#step,
      `DynamoDB refused it (${said}) with the table ACTIVE and nothing in progress, so ` +
        "retrying cannot help",
      { cause: error },
    );
  }

  async describe(): Promise<TableDescription | undefined> {
    return (await this.client.send(new DescribeTableCommand({ TableName: this.table }))).Table;
  }

  #report(step: string): void {
    this.#reported = Date.now();
    this.run.onProgress?.({ table: this.table, step, elapsedMs: Date.now() - this.run.started });
  }
}

/** Creates the table as `input` defines it unless it exists, then waits until it is ACTIVE. */
export async function ensureTable(
  client: DynamoDBSender,
  input: CreateTableCommandInput,
  run: EnsureRun = ensureRun(),
): Promise<void> {
  const steps = new TableSteps(client, input.TableName!, run);
  try {
    await createTable(steps, input);
  } catch (error) {
    throw steps.failure(error);
  }
}

async function createTable(steps: TableSteps, input: CreateTableCommandInput): Promise<void> {
  let status: string | undefined;
  try {
    status = (await steps.describe())?.TableStatus;
  } catch (error) {
    if (!isNamed(error, "ResourceNotFoundException")) throw error;
    steps.begin("creating the table");
    try {
      const created = await steps.client.send(new CreateTableCommand(input));
      status = created.TableDescription?.TableStatus;
    } catch (createError) {
      if (!isNamed(createError, "ResourceInUseException")) throw createError;
    }
  }
  // On AWS a new table is CREATING for a few seconds; writes before ACTIVE fail.
  await steps.until("the table to be ACTIVE", async () => {
    if (status !== "ACTIVE") status = (await steps.describe())?.TableStatus;
    return status === "ACTIVE";
  });
}

/**
 * Makes a table what its definition says, as far as DynamoDB can change one in place (missing
 * indexes, stream, TTL). Resolves to whether an index was added (its rows may need adopting).
 */
export async function ensureDefinedTable(
  client: DynamoDBSender,
  definition: TableDefinition,
  run: EnsureRun = ensureRun(),
): Promise<boolean> {
  const { create, ttlAttribute } = definition;
  const steps = new TableSteps(client, create.TableName!, run);
  try {
    await createTable(steps, create);
    let added = false;
    for (const index of create.GlobalSecondaryIndexes ?? []) {
      if (await ensureIndex(steps, index, create.AttributeDefinitions ?? [])) added = true;
    }
    if (create.StreamSpecification?.StreamEnabled) await ensureStream(steps);
    if (ttlAttribute !== null) await ensureTtl(steps, ttlAttribute);
    steps.begin("ready");
    return added;
  } catch (error) {
    throw steps.failure(error);
  }
}

/** How often table and index states are polled while DynamoDB changes them. */
const POLL = { minDelayMs: 200, maxDelayMs: 2000 };

/** Turns on DynamoDB's TTL on `attribute` unless it is already on. */
async function ensureTtl(steps: TableSteps, attribute: string): Promise<void> {
  const { client, table } = steps;
  const current = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
  const description = current.TimeToLiveDescription;
  if (
    description?.AttributeName === attribute &&
    (description.TimeToLiveStatus === "ENABLED" || description.TimeToLiveStatus === "ENABLING")
  ) return;
  steps.begin(`turning on TTL on ${attribute}`);
  try {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { AttributeName: attribute, Enabled: true },
      }),
    );
  } catch (error) {
    // Two processes enabling it at once: the loser is told it is already enabled.
    if (!(isNamed(error, "ValidationException") && /already enabled/i.test(String(error)))) {
      throw error;
    }
  }
}

/**
 * A table a store was told exists (`create()` with `ensureTables: false` or
 * `ensureTable: false`) and does not: create it at deploy time, or let `create()` do it.
 *
 * @example Telling a missing table from an unreachable DynamoDB
 * ```ts
 * import { DynamoDBStore, TableNotFound } from "@harel/dynamodb";
 *
 * try {
 *   await using _store = await DynamoDBStore.create({
 *     endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *     ensureTables: false,
 *   });
 * } catch (error) {
 *   if (error instanceof TableNotFound) console.error(error.table, error.message);
 *   else throw error;
 * }
 * ```
 */
export class TableNotFound extends Error {
  /** Always `"TableNotFound"`. */
  override name = "TableNotFound";

  /** Builds the error; `remedy` says how to create the table. */
  constructor(readonly table: string, remedy: string, options?: ErrorOptions) {
    super(`table ${table} does not exist: ${remedy}`, options);
  }
}

/**
 * A table lacks a global secondary index a store reads (the relay index or the status index, on
 * tables made without it): run `ensureTables()` once.
 *
 * @example Reading which index is missing
 * ```ts
 * import assert from "node:assert/strict";
 * import { IndexNotFound } from "@harel/dynamodb";
 *
 * const error = new IndexNotFound("harel_timers", "relay_part-relay_order", "run ensureTables()");
 * assert.equal(error.index, "relay_part-relay_order");
 * assert.match(error.message, /has no index relay_part-relay_order: run ensureTables\(\)/);
 * ```
 */
export class IndexNotFound extends Error {
  /** Always `"IndexNotFound"`. */
  override name = "IndexNotFound";

  /** Builds the error; `remedy` says how to add the index. */
  constructor(
    readonly table: string,
    readonly index: string,
    remedy: string,
    options?: ErrorOptions,
  ) {
    super(`the table ${table} has no index ${index}: ${remedy}`, options);
  }
}

/** One DescribeTable of `name`: {@linkcode TableNotFound} with `remedy` when it does not exist. */
export async function checkTableExists(
  client: DynamoDBSender,
  name: string,
  remedy: string,
): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: name }));
  } catch (error) {
    if (isNamed(error, "ResourceNotFoundException")) {
      throw new TableNotFound(name, remedy, { cause: error });
    }
    throw error;
  }
}

/**
 * Adds a global secondary index to a table unless it has it, then waits until it is ACTIVE (a
 * backfill can take minutes). Safe when several processes do it at once; says if this call did.
 */
async function ensureIndex(
  steps: TableSteps,
  index: GlobalSecondaryIndex,
  attributes: readonly AttributeDefinition[],
): Promise<boolean> {
  let added = false;
  await steps.until(`the index ${index.IndexName} to be ACTIVE`, async () => {
    const table = await steps.describe();
    const found = table?.GlobalSecondaryIndexes?.find((gsi) => gsi.IndexName === index.IndexName);
    if (found) return found.IndexStatus === "ACTIVE" && !found.Backfilling;
    // One index change at a time per table: wait while the table is busy with another.
    if (busy(table)) return false;
    steps.begin(`adding the index ${index.IndexName}`);
    try {
      await steps.client.send(
        new UpdateTableCommand({
          TableName: steps.table,
          AttributeDefinitions: attributes.filter(({ AttributeName }) =>
            index.KeySchema?.some((key) => key.AttributeName === AttributeName)
          ),
          GlobalSecondaryIndexUpdates: [{ Create: { ...index, ...provisioned(table) } }],
        }),
      );
      added = true;
    } catch (error) {
      // Another process is adding it (or another index) right now, or the account's limit on
      // concurrent changes is reached: look again.
      if (isNamed(error, "LimitExceededException")) return false;
      if (!isNamed(error, "ResourceInUseException")) throw error;
      await checkStillChanging(steps, table, error);
    }
    return false;
  });
  return added;
}

/**
 * Turns the table's stream on with new and old images, replacing one of another view (a view
 * cannot change: off, then on once ACTIVE). Safe when several processes do it at once.
 */
async function ensureStream(steps: TableSteps): Promise<void> {
  await steps.until("the table to be ACTIVE with its stream", async () => {
    const table = await steps.describe();
    const has = table?.StreamSpecification;
    const on = has?.StreamEnabled === true;
    if (on && has?.StreamViewType === STREAM.StreamViewType) return true;
    if (busy(table)) return false;
    steps.begin(
      on
        ? `turning off its ${has?.StreamViewType} stream, to replace it`
        : `turning on its stream (${STREAM.StreamViewType})`,
    );
    try {
      await steps.client.send(
        new UpdateTableCommand({
          TableName: steps.table,
          StreamSpecification: on ? { StreamEnabled: false } : { ...STREAM },
        }),
      );
      return !on;
    } catch (error) {
      // Another process changes the table right now (or turned the stream on or off): look again.
      if (
        isNamed(error, "LimitExceededException") ||
        (isNamed(error, "ValidationException") &&
          /already has an enabled stream|no stream|already disabled/i.test(String(error)))
      ) return false;
      if (!isNamed(error, "ResourceInUseException")) throw error;
      await checkStillChanging(steps, table, error);
    }
    return false;
  });
}

/** Whether DynamoDB is changing the table: it, or one of its indexes, is not ACTIVE. */
function busy(table: TableDescription | undefined): boolean {
  return table?.TableStatus !== "ACTIVE" ||
    (table.GlobalSecondaryIndexes ?? []).some((gsi) => gsi.IndexStatus !== "ACTIVE");
}

/**
 * After a change refused as "in use": returns when the table is busy or changed since `before`
 * (another process is at it: look again); else DynamoDB refused the change itself (moto's
 * "Cannot enable stream"), and retrying cannot help: throws it as a {@linkcode TableNotReady}.
 */
async function checkStillChanging(
  steps: TableSteps,
  before: TableDescription | undefined,
  refusal: unknown,
): Promise<void> {
  const after = await steps.describe();
  const shape = (table: TableDescription | undefined) =>
    JSON.stringify([
      table?.StreamSpecification ?? null,
      table?.LatestStreamArn ?? null,
      (table?.GlobalSecondaryIndexes ?? []).map((gsi) => gsi.IndexName),
    ]);
  if (busy(after) || shape(after) !== shape(before)) return;
  throw steps.refused(refusal);
}

/** A provisioned table's index needs its own throughput: the table's. On-demand needs none. */
function provisioned(table: TableDescription | undefined) {
  const throughput = table?.ProvisionedThroughput;
  if (
    table?.BillingModeSummary?.BillingMode === "PAY_PER_REQUEST" || !throughput?.ReadCapacityUnits
  ) {
    return {};
  }
  return {
    ProvisionedThroughput: {
      ReadCapacityUnits: throughput.ReadCapacityUnits,
      WriteCapacityUnits: throughput.WriteCapacityUnits ?? 1,
    },
  };
}
