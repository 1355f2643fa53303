// An HTTP proxy in front of the test DynamoDB that records every operation sent through it,
// so the calls create() makes (on a client it builds itself) count too.
import { endpoint } from "./env.ts";

/**
 * A proxy to the test DynamoDB recording each operation; `failFirst` requests answer 503.
 * `hold`, when given, is awaited (with the operation and how many calls came so far) before a
 * call is answered: a test can stop the world there.
 */
export function countingProxy(
  failFirst = 0,
  hold?: (call: string, count: number) => Promise<void>,
): {
  calls: string[];
  /** Each call with its request body (JSON text), in order. */
  requests: { call: string; body: string }[];
  url: string;
  server: Deno.HttpServer<Deno.NetAddr>;
} {
  const calls: string[] = [];
  const requests: { call: string; body: string }[] = [];
  let failures = failFirst;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const call = (request.headers.get("x-amz-target") ?? "?").replace(/^DynamoDB_\d+\./, "");
    calls.push(call);
    await hold?.(call, calls.length);
    const body = await request.arrayBuffer();
    requests.push({ call, body: new TextDecoder().decode(body) });
    if (failures > 0) {
      failures--;
      return new Response("busy", { status: 503 });
    }
    const url = new URL(request.url);
    const upstream = await fetch(new URL(url.pathname + url.search, endpoint()), {
      method: request.method,
      headers: request.headers,
      body,
    });
    return new Response(await upstream.arrayBuffer(), {
      status: upstream.status,
      headers: upstream.headers,
    });
  });
  return { calls, requests, url: `http://127.0.0.1:${server.addr.port}`, server };
}
