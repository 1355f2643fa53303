// With other writers, each seq block this module reserves is recorded in the counter item
// (`blocks`) by the same conditional write that reserves it, so the seqs other writers took (the
// Python store adds to `n` on each commit) are known exactly: every seq up to `n` that no
// recorded block holds (see _foreign_seqs.ts). A pass prunes the blocks it moved past.
import { GetItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { DynamoDBSender } from "../../dynamo/_dynamo.ts";
import { isNamed, N, S } from "../../dynamo/_dynamo.ts";
import { COUNTER } from "../../core/_layout.ts";
import type { Item } from "../../core/_attributes.ts";
import { addBlock, type ReserveBlock } from "../commit/_seq_blocks.ts";
import { blockText } from "./_seq_rules.ts";

/** How often a reservation is tried against other writers moving the counter meanwhile. */
const RESERVE_ATTEMPTS = 50;

/**
 * A reservation that moves the counter from the value it holds to `size` more and records the
 * block, in one conditional write; another writer's addition meanwhile fails it, and it is tried
 * again from the value DynamoDB found. Out of attempts, the block is added unrecorded: its seqs
 * then look like another writer's, which costs a pass a probe of each, and loses nothing. One
 * per counter (it remembers the value it last saw).
 */
export function recordedBlocks(): ReserveBlock {
  let counter = 0; // the counter's value as last seen: what the next reservation expects
  return async (client, table, counterId, size) => {
    for (let attempt = 0; attempt < RESERVE_ATTEMPTS; attempt++) {
      const first = counter + 1, last = counter + size;
      try {
        await client.send(
          new UpdateItemCommand({
            TableName: table,
            Key: { [COUNTER.id]: S(counterId) },
            UpdateExpression: "SET #n = :last ADD #b :block",
            ConditionExpression: counter === 0
              ? "attribute_not_exists(#n) OR #n = :zero"
              : "#n = :old",
            ExpressionAttributeNames: { "#n": COUNTER.n, "#b": COUNTER.blocks },
            ExpressionAttributeValues: {
              ":last": N(last),
              ":block": { SS: [blockText(first, last)] },
              ...(counter === 0 ? { ":zero": N(0) } : { ":old": N(counter) }),
            },
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          }),
        );
        counter = Math.max(counter, last);
        return last;
      } catch (error) {
        if (!isNamed(error, "ConditionalCheckFailedException")) throw error;
        const found = (error as { Item?: Item }).Item ?? await read(client, table, counterId);
        counter = Number(found?.[COUNTER.n]?.N ?? 0);
      }
    }
    const end = await addBlock(client, table, counterId, size);
    counter = Math.max(counter, end);
    return end;
  };
}

/** The counter item, read strongly (a refusal that did not bring it back). */
async function read(
  client: DynamoDBSender,
  table: string,
  counterId: string,
): Promise<Item | undefined> {
  return (await client.send(
    new GetItemCommand({
      TableName: table,
      Key: { [COUNTER.id]: S(counterId) },
      ConsistentRead: true,
    }),
  )).Item;
}
