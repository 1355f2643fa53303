/**
 * The drift check: what DynamoDB describes of each table against its definition
 * ({@linkcode tableDefinitions}), every difference with its fix.
 *
 * @module
 */
import {
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type GlobalSecondaryIndex,
  type KeySchemaElement,
  type TableDescription,
  type TimeToLiveDescription,
} from "@aws-sdk/client-dynamodb";
import type { DynamoDBSender } from "./_dynamo.ts";
import { isNamed } from "./_dynamo.ts";
import { STREAM, type TableDefinition } from "./table_definitions.ts";

/**
 * One way a table differs from its definition, and how to fix it.
 *
 * @example Printing each difference with its fix
 * ```ts
 * import { DynamoDBStore, type TableDifference } from "@harel/dynamodb";
 *
 * await using store = await DynamoDBStore.create({ endpoint: Deno.env.get("DYNAMODB_ENDPOINT") });
 * const differences: TableDifference[] = await store.checkTables();
 * for (const d of differences) console.error(`${d.table}: ${d.problem}; fix: ${d.fix}`);
 * ```
 */
export interface TableDifference {
  /** The table's name. */
  table: string;
  /** What differs. */
  kind:
    | "missing table"
    | "wrong key"
    | "missing index"
    | "wrong index key"
    | "missing projection"
    | "ttl off"
    | "missing stream"
    | "wrong stream view";
  /** The index it is about, for the index kinds. */
  index?: string;
  /** What is wrong, in a sentence: what the table has, and what the stores need. */
  problem: string;
  /** How to fix it. */
  fix: string;
}

/**
 * The tables differ from their definitions (`create()` with `checkTables: true`, or a stream a
 * store with other writers reads): each difference and its fix are in `differences`.
 *
 * @example Telling drift from other failures
 * ```ts
 * import { DynamoDBStore, TableDrift } from "@harel/dynamodb";
 *
 * try {
 *   await using _store = await DynamoDBStore.create({
 *     endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *     ensureTables: false,
 *     checkTables: true,
 *   });
 * } catch (error) {
 *   if (!(error instanceof TableDrift)) throw error;
 *   for (const d of error.differences) console.error(d.problem, "->", d.fix);
 * }
 * ```
 */
export class TableDrift extends Error {
  /** Always `"TableDrift"`. */
  override name = "TableDrift";

  /** Builds the error for every difference found (at least one). */
  constructor(readonly differences: TableDifference[]) {
    super(
      `the tables differ from their definitions in ${differences.length} way${
        differences.length === 1 ? "" : "s"
      }:\n${differences.map((d) => `- ${d.problem}; fix: ${d.fix}`).join("\n")}`,
    );
  }
}

/**
 * Describes each defined table (one DescribeTable, and a DescribeTimeToLive where the
 * definition has TTL, all at once) and lists every difference; `[]` when they all match.
 */
export async function checkDefinedTables(
  client: DynamoDBSender,
  definitions: readonly TableDefinition[],
): Promise<TableDifference[]> {
  const found = await Promise.all(definitions.map(async (definition) => {
    const name = definition.create.TableName!;
    let table: TableDescription | null;
    try {
      table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table ?? null;
    } catch (error) {
      if (!isNamed(error, "ResourceNotFoundException")) throw error;
      table = null;
    }
    const ttl = table && definition.ttlAttribute !== null
      ? (await client.send(new DescribeTimeToLiveCommand({ TableName: name })))
        .TimeToLiveDescription
      : undefined;
    return tableDifferences(definition, table, ttl);
  }));
  return found.flat();
}

/**
 * How the described `table` (`null`: absent) and its TTL differ from `definition`. Pure. What the
 * stores do not rely on (billing, extra or building indexes, wider projections) is no difference.
 */
export function tableDifferences(
  definition: TableDefinition,
  table: TableDescription | null,
  ttl: TimeToLiveDescription | undefined,
): TableDifference[] {
  const { create, ttlAttribute } = definition;
  const name = create.TableName!;
  if (table === null) {
    return [{
      table: name,
      kind: "missing table",
      problem: `the table ${name} does not exist`,
      fix: `create it: \`${ensureCommand(definition)}\` (or ensureTables() once), or deploy ` +
        "the definitions (`cli tables --format cloudformation|terraform`)",
    }];
  }
  const differences: TableDifference[] = [];
  const types = new Map<string, string | undefined>(
    (table.AttributeDefinitions ?? []).map((a) => [a.AttributeName!, a.AttributeType]),
  );
  const wanted = new Map<string, string | undefined>(
    (create.AttributeDefinitions ?? []).map((a) => [a.AttributeName!, a.AttributeType]),
  );
  // A type the description leaves out is left out, never printed as "undefined".
  const keyText = (keys: KeySchemaElement[] | undefined, of: Map<string, string | undefined>) =>
    (keys ?? []).map((k) =>
      `${k.AttributeName} (${[of.get(k.AttributeName!), k.KeyType].filter(Boolean).join(" ")})`
    ).join(", ");
  const sameKey = (has: KeySchemaElement[] | undefined, needs: KeySchemaElement[] | undefined) =>
    keyText(has, types) === keyText(needs, wanted);
  if (!sameKey(table.KeySchema, create.KeySchema)) {
    differences.push({
      table: name,
      kind: "wrong key",
      problem: `the table ${name} has the key ${keyText(table.KeySchema, types)}; the stores ` +
        `need ${keyText(create.KeySchema, wanted)}`,
      fix: "a table's key cannot change: create the table anew with the defined key " +
        "(`cli tables --format cloudformation|terraform`) and copy its items over",
    });
  }
  for (const index of create.GlobalSecondaryIndexes ?? []) {
    const has = table.GlobalSecondaryIndexes?.find((gsi) => gsi.IndexName === index.IndexName);
    const needs = `key ${keyText(index.KeySchema, wanted)}, projecting ${projectionText(index)}`;
    if (!has) {
      differences.push({
        table: name,
        kind: "missing index",
        index: index.IndexName,
        problem: `the table ${name} has no index ${index.IndexName} (${needs})`,
        fix: `add it: \`${ensureCommand(definition)}\` (or ensureTables() once: it adds the ` +
          "index and adopts the rows already there), or add it to the table's definition and " +
          "deploy",
      });
      continue;
    }
    const recreate = "DynamoDB cannot change an index in place: delete it (`aws dynamodb " +
      `update-table --table-name ${name} --global-secondary-index-updates ` +
      `'[{"Delete":{"IndexName":"${index.IndexName}"}}]'\`), then add it again as defined: ` +
      `\`${ensureCommand(definition)}\` (or ensureTables())`;
    if (!sameKey(has.KeySchema, index.KeySchema)) {
      differences.push({
        table: name,
        kind: "wrong index key",
        index: index.IndexName,
        problem: `the index ${index.IndexName} of ${name} has the key ` +
          `${keyText(has.KeySchema, types)}; the stores need ${keyText(index.KeySchema, wanted)}`,
        fix: recreate,
      });
    }
    const missing = missingProjection(index, has);
    if (missing.length) {
      differences.push({
        table: name,
        kind: "missing projection",
        index: index.IndexName,
        problem: `the index ${index.IndexName} of ${name} projects ${
          projectionText(has)
        }; it lacks ${missing.join(", ")} (the stores need ${projectionText(index)})`,
        fix: recreate,
      });
    }
  }
  if (ttlAttribute !== null) {
    const on = ttl?.TimeToLiveStatus === "ENABLED" || ttl?.TimeToLiveStatus === "ENABLING";
    if (!(on && ttl?.AttributeName === ttlAttribute)) {
      const elsewhere = on ? ` (it is on for the attribute ${ttl?.AttributeName})` : "";
      differences.push({
        table: name,
        kind: "ttl off",
        problem: `the table ${name} does not expire rows by their ${ttlAttribute} attribute` +
          `${elsewhere}: expired rows are never deleted`,
        fix: `${on ? "turn the other TTL off, then " : ""}turn TTL on for "${ttlAttribute}": ` +
          `\`aws dynamodb update-time-to-live --table-name ${name} --time-to-live-specification ` +
          `Enabled=true,AttributeName=${ttlAttribute}\` (or \`${ensureCommand(definition)}\`, ` +
          "or ensureTables())",
      });
    }
  }
  const stream = create.StreamSpecification
    ? streamDifference(name, table, ensureCommand(definition))
    : null;
  if (stream) differences.push(stream);
  return differences;
}

/**
 * How the stream of table `name` differs from the one a store with other writers reads (new and
 * old images), or null; `ensure` is the CLI command its fix names.
 */
export function streamDifference(
  name: string,
  table: TableDescription,
  ensure = `cli ensure-tables${
    /^harel_[a-z]+$/.test(name) ? "" : ` --prefix ${name.replace(/_[a-z]+$/, "")}`
  } --other-writers`,
): TableDifference | null {
  const has = table.StreamSpecification;
  const wanted = STREAM.StreamViewType;
  const enable = `\`aws dynamodb update-table --table-name ${name} --stream-specification ` +
    `StreamEnabled=true,StreamViewType=${wanted}\``;
  const reads = "a store with other writers reads it to find the rows they commit";
  if (!has?.StreamEnabled) {
    return {
      table: name,
      kind: "missing stream",
      problem: `the table ${name} has no stream; ${reads}`,
      fix: `\`${ensure}\` (or ensureTables() of a store with otherWriters: true; it turns ` +
        `it on), or ${enable}`,
    };
  }
  if (has.StreamViewType === wanted) return null;
  return {
    table: name,
    kind: "wrong stream view",
    problem: `the table ${name} has a ${has.StreamViewType} stream; ${reads}, from its ` +
      `${wanted}`,
    fix: `\`${ensure}\` (or ensureTables() of a store with otherWriters: true; it replaces ` +
      "the stream: a stream's view cannot change), or " +
      `\`aws dynamodb update-table --table-name ${name} --stream-specification ` +
      `StreamEnabled=false\`, then ${enable} once the table is ACTIVE`,
  };
}

/** The CLI command that makes the table of `definition` what it says (`cli ensure-tables ...`). */
export function ensureCommand(definition: TableDefinition): string {
  const name = definition.create.TableName;
  // The CLI's state table is the prefix's, P_state, unless --state-table names another.
  const role = definition.role;
  const where = name === `harel_${role}`
    ? ""
    : name.endsWith(`_${role}`)
    ? ` --prefix ${name.slice(0, -role.length - 1)}`
    : ` --state-table ${name}`;
  const streams = definition.create.StreamSpecification ? " --other-writers" : "";
  return `cli ensure-tables${where}${streams}`;
}

/** The attributes `index` projects that `has` does not (nothing, when `has` projects ALL). */
function missingProjection(index: GlobalSecondaryIndex, has: Projected): string[] {
  if (has.Projection?.ProjectionType === "ALL") return [];
  const projected = new Set(has.Projection?.NonKeyAttributes ?? []);
  return (index.Projection?.NonKeyAttributes ?? []).filter((name) => !projected.has(name));
}

/** An index as CreateTable takes it or as DescribeTable describes it. */
type Projected = Partial<Pick<GlobalSecondaryIndex, "Projection">>;

function projectionText(index: Projected): string {
  const type = index.Projection?.ProjectionType ?? "KEYS_ONLY";
  return type === "INCLUDE"
    ? `the keys and ${(index.Projection?.NonKeyAttributes ?? []).join(", ")}`
    : type === "ALL"
    ? "every attribute"
    : "the keys only";
}
