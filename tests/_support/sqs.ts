// The SQS every test of tests/sqs/ talks to (moto's server, started by `deno task test`), fresh
// queues on it, and the Python consumer that reads them by harel's rules.
import { SqsQueue } from "../../src/sqs.ts";
import { DynamoDBStore, type DynamoDBStoreOptions } from "../../mod.ts";
import { endpoint, uniqueName } from "./env.ts";

/**
 * DynamoDB Local's region of the fleet tests (a database of its own): a FleetClient's store is
 * built with `otherWriters: true`, so its tables have streams, which would slow DynamoDB Local's
 * other tables of the same database.
 */
export const FLEET_REGION = "eu-west-3";

/** A store of a mixed fleet (`otherWriters: true`) on fresh tables in {@linkcode FLEET_REGION}. */
export async function fleetStore(options: DynamoDBStoreOptions = {}): Promise<DynamoDBStore> {
  return await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix: uniqueName("t"),
    region: FLEET_REGION,
    otherWriters: true,
    ...options,
  });
}

/** The SQS endpoint `deno task test` started; a test fails loudly without it (never skips). */
export function sqsEndpoint(): string {
  const value = Deno.env.get("SQS_ENDPOINT");
  if (!value) {
    throw new Error(
      "SQS_ENDPOINT is not set: run the tests with `deno task test`, which starts moto's SQS " +
        "(python3 -m moto.server) next to DynamoDB",
    );
  }
  return value;
}

/** A FIFO queue of its own on the test SQS. */
export async function freshQueue(): Promise<SqsQueue> {
  return await SqsQueue.create({ endpoint: sqsEndpoint(), queueName: `${uniqueName("q")}.fifo` });
}

const CONSUMER = new URL("./sqs_consumer.py", import.meta.url).pathname;

/** One message as the consumer read it with harel's `Event` model. */
export interface ReadMessage {
  group: string;
  dedup: string;
  body: string;
  /** `Event.model_validate_json(body).model_dump_json()`. */
  redumped: string;
  event: {
    id: string;
    kind: string;
    created_time: string | null;
    received_time: string | null;
    data: Record<string, unknown>;
  };
}

/** One message a harel-rules worker handled. */
export interface Handled {
  group: string;
  kind: string;
  id: string;
  action: "processed" | "deduped" | "dropped" | "nacked" | "no-execution" | "conflict";
  status?: string;
}

async function consumer(args: string[]): Promise<unknown[]> {
  const { code, stdout, stderr } = await new Deno.Command("python3", {
    args: [CONSUMER, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(stdout);
  if (code !== 0) {
    throw new Error(
      `sqs_consumer.py ${args[0]} failed (${code}):\n${new TextDecoder().decode(stderr)}`,
    );
  }
  return text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
}

/** Every message of `queue`, read (and deleted) by the Python consumer; it stops after `idleSeconds` without one. */
export async function readQueue(queue: SqsQueue, idleSeconds = 1): Promise<ReadMessage[]> {
  return await consumer(["read", sqsEndpoint(), queue.url, String(idleSeconds)]) as ReadMessage[];
}

/** Runs the Python worker (harel's rules) on `queue` and the tables of `prefix` until idle. */
export async function runWorker(
  queue: SqsQueue,
  prefix: string,
  idleSeconds = 1.5,
): Promise<Handled[]> {
  const dynamodb = Deno.env.get("DYNAMODB_ENDPOINT") ?? "";
  return await consumer([
    "work",
    sqsEndpoint(),
    queue.url,
    String(idleSeconds),
    prefix,
    dynamodb,
    FLEET_REGION,
  ]) as Handled[];
}

const MODELS = new URL("./harel_models.py", import.meta.url).pathname;

/** What harel's pydantic model made of one document: its dump, or why it refused it. */
export type ModelAnswer = { ok: true; dump: string } | { ok: false; error: string };

/**
 * Each document's JSON text read by harel's pydantic model (`Event` or `Execution`,
 * `model_validate_json`), as a worker reads a message body or a stored document.
 */
export async function harelReads(
  documents: { model: "Event" | "Execution"; text: string }[],
): Promise<ModelAnswer[]> {
  const child = new Deno.Command("python3", {
    args: [MODELS],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  const input = documents.map((d) => JSON.stringify(d)).join("\n") + "\n";
  // Written while the output is read: large documents would fill both pipes otherwise.
  const [{ code, stdout, stderr }] = await Promise.all([
    child.output(),
    writer.write(new TextEncoder().encode(input)).then(() => writer.close()),
  ]);
  if (code !== 0) {
    throw new Error(`harel_models.py failed (${code}):\n${new TextDecoder().decode(stderr)}`);
  }
  return new TextDecoder().decode(stdout).split("\n").filter((l) => l !== "")
    .map((l) => JSON.parse(l));
}
