/**
 * The Deno front door of a harel fleet on AWS, where an SQS FIFO queue carries the events to
 * Python workers: {@linkcode SqsQueue} publishes on harel's exact wire, and {@linkcode FleetClient}
 * does what harel's `DistributedRunner` offers outside a worker (start, send, the control plane,
 * and one relay pass for `Deno.cron`). Only this module loads `@aws-sdk/client-sqs`.
 *
 * @example Starting an execution that harel workers run
 * ```ts
 * import { DynamoDBStore } from "@harel/dynamodb";
 * import { FleetClient, SqsQueue } from "@harel/dynamodb/sqs";
 *
 * await using store = await DynamoDBStore.create({
 *   endpoint: Deno.env.get("DYNAMODB_ENDPOINT"),
 *   otherWriters: true, // the fleet's Python workers share the tables
 * });
 * await using queue = await SqsQueue.create({ endpoint: Deno.env.get("SQS_ENDPOINT") });
 * const fleet = new FleetClient({ store, queue });
 * const order = await fleet.create("order", { context: { total: 42 } });
 * console.log(order.id, order.status); // PENDING until a worker handles its Start
 * ```
 *
 * @module
 */
export {
  type EventQueue,
  type PublishOptions,
  type PublishReceipt,
  type QueueRetry,
  SqsQueue,
  type SqsQueueOptions,
} from "./sqs/sqs_queue.ts";
export { FleetClient } from "./sqs/fleet_client.ts";
export type {
  CancelOptions,
  ControlResult,
  CreateOptions,
  FleetClientOptions,
  FleetRelayOptions,
  FleetRelayReport,
} from "./sqs/fleet_types.ts";
export {
  CancelNotPublished,
  ExecutionExists,
  ExecutionNotFound,
  PublishOutcomeUnknown,
  QueueNotFifo,
  QueueUnreachable,
  StartNotPublished,
} from "./sqs/sqs_errors.ts";
