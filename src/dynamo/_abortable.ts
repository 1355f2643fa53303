// A client that stops sending once a signal aborts: the reads of a call given a `signal` go
// through it, so that a call whose caller went away (an aborted HTTP request) sends nothing more.
// What was sent finishes; the call rejects with the signal's reason at its next send.
import type { DynamoDBSender } from "./_dynamo.ts";

/** `client`, refusing every send after `signal` aborted (with its reason); `client` itself without one. */
export function abortable(client: DynamoDBSender, signal: AbortSignal | undefined): DynamoDBSender {
  if (signal === undefined) return client;
  return {
    send: ((command: Parameters<DynamoDBSender["send"]>[0], ...rest: unknown[]) => {
      if (signal.aborted) return Promise.reject(signal.reason);
      // The signal goes with the request too: one the HTTP handler still queues (its sockets
      // all busy with the others of a wide read) is never sent once the signal aborts.
      const [options, ...more] = rest as [Record<string, unknown> | undefined, ...unknown[]];
      return (client.send as (...args: unknown[]) => unknown)(
        command,
        { ...options, abortSignal: signal },
        ...more,
      );
    }) as DynamoDBSender["send"],
  };
}

/** `reads` with its `client` made {@linkcode abortable} by `signal` (itself without one). */
export function withSignal<R extends { client: DynamoDBSender }>(
  reads: R,
  signal: AbortSignal | undefined,
): R {
  return signal === undefined ? reads : { ...reads, client: abortable(reads.client, signal) };
}
