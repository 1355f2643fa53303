// An HTTP proxy in front of the test DynamoDB that records every operation sent through it,
// so the calls create() makes (on a client it builds itself) count too.
import { endpoint } from "./env.ts";

/** A proxy to the test DynamoDB recording each operation; `failFirst` requests answer 503. */
export function countingProxy(failFirst = 0): {
  calls: string[];
  url: string;
  server: Deno.HttpServer<Deno.NetAddr>;
} {
  const calls: string[] = [];
  let failures = failFirst;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    calls.push((request.headers.get("x-amz-target") ?? "?").replace(/^DynamoDB_\d+\./, ""));
    if (failures > 0) {
      failures--;
      return new Response("busy", { status: 503 });
    }
    const url = new URL(request.url);
    const upstream = await fetch(new URL(url.pathname + url.search, endpoint()), {
      method: request.method,
      headers: request.headers,
      body: await request.arrayBuffer(),
    });
    return new Response(await upstream.arrayBuffer(), {
      status: upstream.status,
      headers: upstream.headers,
    });
  });
  return { calls, url: `http://127.0.0.1:${server.addr.port}`, server };
}
