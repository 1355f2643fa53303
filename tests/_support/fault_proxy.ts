// A fault-injecting HTTP/1.1 proxy for tests: loopback only, between the SDK client and
// DynamoDB Local. Each request (or each new connection) gets an action from a script.

/** What the proxy does with one request. */
export type Fault =
  | { kind: "pass" }
  | { kind: "delay"; ms: number }
  /** Close the client's connection without forwarding the request. */
  | { kind: "reset" }
  /** Forward the request, let DynamoDB apply it, then cut the connection: the ambiguous case. */
  | { kind: "drop-response" }
  /** Forward the request and send back only the first `bytes` of the response. */
  | { kind: "truncate"; bytes: number }
  /** Do not forward the request; answer 400 ThrottlingException, as DynamoDB does when throttling. */
  | { kind: "throttle" };

/** What the script sees of a request. */
export interface RequestInfo {
  /** The DynamoDB operation, from `X-Amz-Target` (e.g. "TransactWriteItems"). */
  operation: string;
  /** 0-based count of requests the proxy has seen. */
  index: number;
  /** The request body (JSON text). */
  body: string;
}

/** Decides each request's fate; `refuseConnection` decides each new connection's. */
export interface FaultScript {
  request(info: RequestInfo): Fault;
  refuseConnection?(index: number): boolean;
}

/** Counts of what the proxy did. */
export interface ProxyStats {
  requests: number;
  faults: number;
  refused: number;
  byKind: Record<string, number>;
}

const encoder = new TextEncoder();

/** DynamoDB's answer to a throttled request: applied nothing, a 400 the SDK retries. */
const THROTTLED = (() => {
  const body = JSON.stringify({
    __type: "com.amazonaws.dynamodb.v20120810#ThrottlingException",
    message: "Rate of requests exceeds the allowed throughput.",
  });
  return "HTTP/1.1 400 Bad Request\r\ncontent-type: application/x-amz-json-1.0\r\n" +
    `content-length: ${new TextEncoder().encode(body).length}\r\n\r\n${body}`;
})();
const decoder = new TextDecoder();

/** Reads HTTP/1.1 messages (Content-Length or chunked bodies) off a connection. */
class MessageReader {
  #buffer = new Uint8Array(0);
  constructor(private readonly conn: Deno.Conn) {}

  async #fill(): Promise<boolean> {
    const chunk = new Uint8Array(64 * 1024);
    const n = await this.conn.read(chunk);
    if (n === null) return false;
    const next = new Uint8Array(this.#buffer.length + n);
    next.set(this.#buffer);
    next.set(chunk.subarray(0, n), this.#buffer.length);
    this.#buffer = next;
    return true;
  }

  #take(n: number): Uint8Array {
    const out = this.#buffer.slice(0, n);
    this.#buffer = this.#buffer.slice(n);
    return out;
  }

  #indexOf(pattern: string, from = 0): number {
    const p = encoder.encode(pattern);
    outer: for (let i = from; i <= this.#buffer.length - p.length; i++) {
      for (let j = 0; j < p.length; j++) if (this.#buffer[i + j] !== p[j]) continue outer;
      return i;
    }
    return -1;
  }

  /** The next whole message (head + body bytes), or null at end of stream. */
  async next(): Promise<{ raw: Uint8Array; head: string; body: Uint8Array } | null> {
    let end: number;
    while ((end = this.#indexOf("\r\n\r\n")) === -1) {
      if (!(await this.#fill())) return null;
    }
    const head = decoder.decode(this.#buffer.subarray(0, end));
    const headerEnd = end + 4;
    const length = head.match(/\r\ncontent-length:\s*(\d+)/i);
    if (length) {
      const total = headerEnd + Number(length[1]);
      while (this.#buffer.length < total) {
        if (!(await this.#fill())) return null;
      }
      const raw = this.#take(total);
      return { raw, head, body: raw.subarray(headerEnd) };
    }
    if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
      let pos = headerEnd;
      const parts: Uint8Array[] = [];
      for (;;) {
        let lineEnd: number;
        while ((lineEnd = this.#indexOf("\r\n", pos)) === -1) {
          if (!(await this.#fill())) return null;
        }
        const size = parseInt(decoder.decode(this.#buffer.subarray(pos, lineEnd)), 16);
        const chunkEnd = lineEnd + 2 + size + 2;
        while (this.#buffer.length < chunkEnd) {
          if (!(await this.#fill())) return null;
        }
        parts.push(this.#buffer.slice(lineEnd + 2, lineEnd + 2 + size));
        pos = chunkEnd;
        if (size === 0) break;
      }
      const raw = this.#take(pos);
      const body = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let offset = 0;
      for (const p of parts) {
        body.set(p, offset);
        offset += p.length;
      }
      return { raw, head, body };
    }
    return { raw: this.#take(headerEnd), head, body: new Uint8Array(0) };
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* already closed */ }
}

/** A running proxy: point a client at `endpoint`; swap `script` at any time. */
export class FaultProxy implements AsyncDisposable {
  readonly endpoint: string;
  script: FaultScript;
  readonly stats: ProxyStats = { requests: 0, faults: 0, refused: 0, byKind: {} };
  readonly #listener: Deno.Listener;
  readonly #upstream: { hostname: string; port: number };
  readonly #conns = new Set<Deno.Conn>();
  #connections = 0;
  #serving: Promise<void>;

  constructor(upstream: string, script: FaultScript = { request: () => ({ kind: "pass" }) }) {
    const url = new URL(upstream);
    if (!["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) {
      throw new Error(`the fault proxy only forwards to loopback, not ${url.hostname}`);
    }
    this.#upstream = {
      hostname: url.hostname === "localhost" ? "127.0.0.1" : url.hostname,
      port: Number(url.port),
    };
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.endpoint = `http://127.0.0.1:${(this.#listener.addr as Deno.NetAddr).port}`;
    this.script = script;
    this.#serving = this.#accept();
  }

  async #accept(): Promise<void> {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await this.#listener.accept();
      } catch {
        return; // closed
      }
      if (this.script.refuseConnection?.(this.#connections++)) {
        this.stats.refused++;
        closeQuietly(conn);
        continue;
      }
      this.#conns.add(conn);
      this.#serve(conn).catch(() => {}).finally(() => {
        this.#conns.delete(conn);
        closeQuietly(conn);
      });
    }
  }

  async #serve(client: Deno.Conn): Promise<void> {
    const upstream = await Deno.connect(this.#upstream);
    this.#conns.add(upstream);
    try {
      const requests = new MessageReader(client);
      const responses = new MessageReader(upstream);
      for (;;) {
        const request = await requests.next();
        if (!request) return;
        const target = request.head.match(/\r\nx-amz-target:\s*DynamoDB_\d+\.(\w+)/i)?.[1] ?? "?";
        const fault = this.script.request({
          operation: target,
          index: this.stats.requests++,
          body: decoder.decode(request.body),
        });
        this.stats.byKind[fault.kind] = (this.stats.byKind[fault.kind] ?? 0) + 1;
        if (fault.kind !== "pass") this.stats.faults++;
        if (fault.kind === "reset") return;
        if (fault.kind === "throttle") {
          await writeAll(client, encoder.encode(THROTTLED));
          continue;
        }
        if (fault.kind === "delay") await new Promise((r) => setTimeout(r, fault.ms));
        await writeAll(upstream, request.raw);
        const response = await responses.next();
        if (!response) return;
        if (fault.kind === "drop-response") return;
        if (fault.kind === "truncate") {
          await writeAll(
            client,
            response.raw.subarray(0, Math.min(fault.bytes, response.raw.length - 1)),
          );
          return;
        }
        await writeAll(client, response.raw);
      }
    } finally {
      this.#conns.delete(upstream);
      closeQuietly(upstream);
    }
  }

  /** Stops listening and cuts every open connection. */
  async close(): Promise<void> {
    try {
      this.#listener.close();
    } catch { /* already closed */ }
    for (const conn of this.#conns) closeQuietly(conn);
    await this.#serving;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** A small seeded PRNG (mulberry32), so a fault schedule repeats under the same seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
