// The relay lease: one small counters item per queue (`relay_lease:{kind}`) that a pass takes by
// key, so that relays started together deliver each entry once; it runs out on its own, so a pass
// that dies holds the queue no longer than its lease.
import { conditionalUpdate, N, S } from "../../dynamo/_dynamo.ts";
import { COUNTER } from "../../core/_layout.ts";
import type { RelayLease } from "../../core/relay_queues.ts";
import type { RelayKind } from "../../core/types.ts";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import type { ExecutionTables } from "../../core/table_specs.ts";

/** Takes `kind`'s lease for `seconds` (renewable): null when another relay holds it. */
export async function takeLease(
  ctx: { client: DynamoDBSender; tables: ExecutionTables; now: () => number },
  kind: RelayKind,
  seconds: number,
): Promise<RelayLease | null> {
  const owner = crypto.randomUUID();
  const key = { [COUNTER.id]: S(`relay_lease:${kind}`) };
  let until = 0, lapsed = false;
  const take = async () => {
    const now = ctx.now() / 1000;
    if (until !== 0 && until <= now) lapsed = true;
    const taken = await conditionalUpdate(ctx.client, {
      TableName: ctx.tables.counters.name,
      Key: key,
      UpdateExpression: "SET #w = :w, #u = :u",
      ConditionExpression: "attribute_not_exists(#u) OR #u < :now OR #w = :w",
      ExpressionAttributeNames: { "#w": "owner", "#u": "until" },
      ExpressionAttributeValues: { ":w": S(owner), ":u": N(now + seconds), ":now": N(now) },
    });
    if (taken) until = now + seconds;
    return taken;
  };
  if (!await take()) return null;
  return {
    get lapsed() {
      return lapsed || until <= ctx.now() / 1000;
    },
    keep: async () => until - ctx.now() / 1000 > seconds / 3 || await take(),
    release: async () => {
      await conditionalUpdate(ctx.client, {
        TableName: ctx.tables.counters.name,
        Key: key,
        UpdateExpression: "REMOVE #w, #u",
        ConditionExpression: "#w = :w",
        ExpressionAttributeNames: { "#w": "owner", "#u": "until" },
        ExpressionAttributeValues: { ":w": S(owner) },
      });
    },
  };
}
