// The floor of deno task bench's commit figures: the transaction a store's commit sends (2 emits,
// a dedupe mark, a timer, a trace step), hand-built and sent bare with one `client.send`. Two of
// them: the bench's floor since 0.1.0 ("light": the rows alone, a version check, no token), and
// since then the same items the store sends ("same items": the relay index's attributes on the
// outbox entries and the timer, the outbox chains, the execution's guards — its expiry, the
// trace ring's end, the outbox high-water mark — `ALL_OLD` on a failed check, and a
// `ClientRequestToken`), so that the ratio to it is the store's own cost, and the difference
// between the two floors what DynamoDB spends on what a commit writes besides the rows.
import {
  type AttributeValue,
  type DynamoDBClient,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from "@aws-sdk/client-dynamodb";
import type { CommitChanges, Execution } from "../mod.ts";
import type { ExecutionTables } from "../src/core/table_specs.ts";

/** Which floor a {@linkcode BareWriter} sends. */
export type Floor = "light" | "same items";

/** One execution's commits, hand-built and sent bare. */
export class BareWriter {
  version = 0;
  traceIdx = 0;
  constructor(
    readonly client: Pick<DynamoDBClient, "send">,
    readonly tables: ExecutionTables,
    readonly exe: Execution,
    readonly seqBase: number,
    readonly floor: Floor,
  ) {}

  /** Commits `changes` (whose emits, dedupe mark, timer and trace step the bench's commits carry). */
  async commit(i: number, c: CommitChanges): Promise<void> {
    const same = this.floor === "same items";
    const t = this.tables;
    const next = this.version + 1;
    const data = JSON.stringify({ ...this.exe, version: next });
    const seq = this.seqBase + next * 2;
    const idx = ++this.traceIdx;
    const now = { N: String(Date.now() / 1000) };
    const names: Record<string, string> = {
      "#d": "data",
      "#v": "version",
      "#def": "definition_id",
      "#oh": "outbox_hwm",
    };
    const values: Record<string, AttributeValue> = {
      ":d": { S: data },
      ":v": { N: String(next) },
      ":def": { S: this.exe.definition_id },
      ":oh": { N: String(seq + 1) },
    };
    let update = "SET #d = :d, #v = :v, #def = :def, #oh = :oh";
    let condition = this.version === 0 ? "attribute_not_exists(#v)" : "#v = :ov";
    if (this.version > 0) values[":ov"] = { N: String(this.version) };
    const emits = c.emits ?? [];
    if (same) {
      Object.assign(names, {
        "#ua": "updated_at",
        "#te": "trace_end",
        "#ol": "outbox_last",
        "#ttl": "ttl",
      });
      Object.assign(values, {
        ":now": now,
        ":te": { N: String(idx) },
        ":ol": {
          M: Object.fromEntries(emits.map((_, k) => [`chain${k}`, { N: String(seq + k) }])),
        },
      });
      update += ", #ua = :now, #te = :te, #ol = :ol";
      if (this.version === 0) {
        Object.assign(names, { "#id": "id", "#ss": "status_shard", "#sa": "status_at" });
        values[":ss"] = { S: `${this.exe.status}#0` };
        update += ", #ss = :ss, #sa = :now";
        condition = "(attribute_not_exists(#id) OR #ttl <= :now)";
      } else {
        condition += " AND (attribute_not_exists(#ttl) OR NOT attribute_type(#ttl, :n) OR " +
          "#ttl > :now) AND #te = :tc AND #oh < :ohf";
        values[":n"] = { S: "N" };
        values[":tc"] = { N: String(idx - 1) };
        values[":ohf"] = { N: String(seq) };
      }
      update += " REMOVE #ttl";
    }
    const relay = (order: number): Record<string, AttributeValue> =>
      same ? { relay_part: { S: `p${order % 8}` }, relay_order: { N: String(order) } } : {};
    const items: TransactWriteItem[] = [
      {
        Update: {
          TableName: t.executions.name,
          Key: { id: { S: this.exe.id } },
          UpdateExpression: update,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ...(same ? { ReturnValuesOnConditionCheckFailure: "ALL_OLD" as const } : {}),
        },
      },
      ...emits.map((emit, k): TransactWriteItem => ({
        Put: {
          TableName: t.outbox.name,
          Item: {
            seq: { N: String(seq + k) },
            target_id: emit.target === null ? { NULL: true } : { S: emit.target },
            event: { S: JSON.stringify(emit.event) },
            ...(same
              ? {
                source_id: { S: this.exe.id },
                ...(this.version > 0 ? { prev_seq: { N: String(seq + k - 2) } } : {}),
                created_at: now,
              }
              : {}),
            ...relay(seq + k),
          },
        },
      })),
      {
        Put: {
          TableName: t.processed.name,
          Item: { execution_id: { S: this.exe.id }, event_id: { S: c.processedEventId! } },
        },
      },
      {
        Put: {
          TableName: t.timers.name,
          Item: {
            execution_id: { S: this.exe.id },
            path: { S: "order.waiting" },
            fire_at: { N: String(2e9 + i) },
            ...relay(2e9 + i),
          },
        },
      },
      {
        Put: {
          TableName: t.trace.name,
          Item: {
            execution_id: { S: this.exe.id },
            idx: { N: String(idx) },
            entry: { S: JSON.stringify(c.trace) },
          },
          ConditionExpression: "attribute_not_exists(idx)",
        },
      },
    ];
    if (idx > 1) {
      items.push({
        ConditionCheck: {
          TableName: t.trace.name,
          Key: { execution_id: { S: this.exe.id }, idx: { N: String(idx - 1) } },
          ConditionExpression: "attribute_exists(idx)",
        },
      });
    }
    await this.client.send(
      new TransactWriteItemsCommand({
        TransactItems: items,
        ...(same ? { ClientRequestToken: crypto.randomUUID() } : {}),
      }),
    );
    this.version = next;
  }
}
