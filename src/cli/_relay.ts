// The CLI's `relay`: one `FleetClient.relay()` pass. `@aws-sdk/client-sqs` loads only here.
import { DynamoDBServiceException } from "@aws-sdk/client-dynamodb";
import { isNamed } from "../dynamo/_dynamo.ts";
import type { DynamoDBStore } from "../execution/execution_store.ts";
import { CliError, endpointOf, UsageError, type Values } from "./_args.ts";

/** The errors of `@harel/dynamodb/sqs` that are SQS's failures. */
const SQS_ERRORS = new Set(["QueueUnreachable", "PublishOutcomeUnknown", "QueueNotFifo"]);

/** The tables a relay pass reads and writes. */
const RELAY_TABLES = ["executions", "outbox", "timers", "counters"] as const;

/** How long the CLI waits for SQS to answer: an operator (or a cron) is waiting. */
const SQS_DEADLINE_MS = 5_000;

/** Runs one relay pass to SQS and prints what it did (errors of entries on stderr). */
export async function runRelay(
  store: DynamoDBStore,
  values: Values,
  limit: number,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<void> {
  const endpoint = endpointOf(values, "sqs-endpoint", "SQS_ENDPOINT");
  const { FleetClient, SqsQueue } = await import("../sqs.ts");
  await using queue = await SqsQueue.create({
    endpoint,
    region: values.region as string | undefined,
    queueName: values.queue as string | undefined ?? "stm.fifo",
    deadlineMs: SQS_DEADLINE_MS,
  }).catch((error) => {
    if (error instanceof TypeError) throw new UsageError(error.message);
    // What failed is SQS, not DynamoDB: say so (QueueUnreachable's message names it already).
    throw new CliError(
      error instanceof Error && error.name === "QueueUnreachable"
        ? error.message
        : `SQS at ${endpoint ?? "AWS"} failed: ${
          error instanceof Error ? `${error.name}: ${error.message}` : String(error)
        }`,
      { cause: error },
    );
  });
  const fleet = new FleetClient({ store, queue });
  const { SQSServiceException } = await import("@aws-sdk/client-sqs");
  // Which service failed, by the SDK's own classes and the errors that name SQS.
  const service = (error: unknown): string => {
    for (let e = error; e instanceof Error; e = e.cause) {
      if (e instanceof SQSServiceException || SQS_ERRORS.has(e.name)) return "SQS";
      if (e instanceof DynamoDBServiceException) return "DynamoDB";
    }
    return "";
  };
  const said = (error: unknown) => {
    const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const where = service(error);
    return where ? `${where}: ${what}` : what;
  };
  const onError = (error: unknown) => err(`  ${said(error)}`);
  const report = await fleet.relay({
    outbox: { limit, onError },
    timers: { limit, onError },
  }).catch((error) => {
    if (isNamed(error, "ResourceNotFoundException")) {
      throw new CliError(
        `DynamoDB: a table the relay reads does not exist (${
          RELAY_TABLES.map((role) => store.tables[role].name).join(", ")
        }): check --prefix and --endpoint, or create them with ` +
          "`ensure-tables --other-writers`",
        { cause: error },
      );
    }
    throw new CliError(said(error), { cause: error });
  });
  if (values.json) return out(JSON.stringify({ queue: queue.url, ...report }, null, 2));
  for (const [kind, r] of [["outbox", report.outbox], ["timers", report.timers]] as const) {
    out(
      `${kind}: ${r.delivered} published, ${r.failed} failed (retried later), ` +
        `${r.setAside} set aside as unreadable, ${r.held} held; lag ${
          r.lagSeconds === null ? "none" : `${Math.round(r.lagSeconds)} s`
        }`,
    );
  }
  out(`to ${queue.url}`);
}
