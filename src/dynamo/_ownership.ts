// What both DynamoDB stores (executions and state) share about their client, so that it
// changes in one place: the constructor's check, ownership, closing and the closed refusal.
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { describe } from "../core/_validate.ts";
import { StoreClosed } from "../core/errors.ts";
import { claimClient } from "./connect.ts";
import type { DynamoDBSender } from "./_dynamo.ts";

/** The `client` a store constructor was given, refused with a TypeError unless it can send. */
export function checkClient(client: unknown): DynamoDBSender {
  if (typeof (client as { send?: unknown })?.send !== "function") {
    throw new TypeError(`client must be a DynamoDB client (with send()), got ${describe(client)}`);
  }
  return client as DynamoDBSender;
}

/**
 * Whether a store is closed, and the client it destroys on close: only one `create()` built
 * for it (a client passed to the constructor stays the caller's).
 */
export class ClientOwnership {
  readonly #owned: DynamoDBClient | null;
  #closed = false;

  constructor(private readonly store: string, client: DynamoDBSender) {
    this.#owned = claimClient(client);
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Refuses a call on a closed store, before anything else (input checks included). */
  open(method: string): void {
    if (this.#closed) throw new StoreClosed(this.store, method);
  }

  /**
   * `client` behind a gate: once closed, a request is refused (the SDK would reopen sockets).
   * Every public method passes {@linkcode open} first, so a refused request belongs to a call
   * still running at `close()`, and its {@linkcode StoreClosed} says to await it.
   */
  gate(client: DynamoDBSender): DynamoDBSender {
    const send = client.send as (...args: unknown[]) => Promise<unknown>;
    return {
      send:
        ((command: { constructor: { name: string } }, ...rest: unknown[]) =>
          this.#closed
            ? Promise.reject(
              new StoreClosed(
                this.store,
                `its ${command.constructor.name.replace(/Command$/, "")} request`,
                { inFlight: true },
              ),
            )
            : send.call(client, command, ...rest)) as DynamoDBSender["send"],
    };
  }

  /** Closes the store: destroys an owned client, once. */
  close(): Promise<void> {
    if (!this.#closed) this.#owned?.destroy();
    this.#closed = true;
    return Promise.resolve();
  }
}
