// A loopback HTTP proxy in front of DynamoDB Local that makes its global secondary indexes
// eventually consistent, as AWS's are: for `lagMs` after an item is written, an index read
// (Query or Scan with IndexName) still answers with the item's index entry as it was before
// the write — the new entry is hidden and the old one (a "ghost") comes back wherever the old
// image matched the read. Base-table reads and every write pass through untouched.
//
// How: before forwarding a write (PutItem, UpdateItem, DeleteItem, BatchWriteItem,
// TransactWriteItems) the proxy reads the old image of each key it touches (a strongly
// consistent GetItem of its own) and notes the write; an index read then drops the entries of
// keys written within `lagMs` and merges in the old images that match its KeyConditionExpression,
// FilterExpression, ExclusiveStartKey and page, projected as the index projects
// (DescribeTable, once per table), re-sorted by the index's sort key, cut at Limit.
//
// Expressions are evaluated by the proxy itself: comparisons, BETWEEN, IN, AND/OR/NOT,
// parentheses, attribute_exists, attribute_not_exists, attribute_type, begins_with, contains
// and size(). A form it cannot read is answered with a ValidationException naming it — never
// silently guessed. A ProjectionExpression on an index read may name top-level attributes
// only. A Scan of an index gets its ghosts on its last page (of segment 0 when segmented), even
// past its Limit.
//
// Standalone: `deno run --allow-net tests/_support/index_lag_proxy.ts UPSTREAM LAG_MS` prints
// `INDEX_LAG_ENDPOINT=http://127.0.0.1:PORT` and runs until its stdin closes.

/** An attribute value as the wire carries it (JSON: binaries are base64 text). */
interface AttributeValue {
  S?: string;
  N?: string;
  B?: string;
  SS?: string[];
  NS?: string[];
  BS?: string[];
  M?: Record<string, AttributeValue>;
  L?: AttributeValue[];
  BOOL?: boolean;
  NULL?: boolean;
}
type Item = Record<string, AttributeValue>;

/** What the proxy did, for a test to assert that the lag was felt. */
export interface IndexLagStats {
  /** Write requests whose keys were tracked. */
  writes: number;
  /** Index reads answered (Query or Scan with IndexName). */
  indexReads: number;
  /** Index entries withheld because their item was written within the lag. */
  hidden: number;
  /** Old index entries returned in their place (or alone). */
  ghosts: number;
}

/** How the proxy lags. */
export interface IndexLagProxyOptions {
  /** How long an index lags behind its table, in ms. */
  lagMs: number;
  /** The clock the lag is measured on (epoch ms); a test can move a fake one. @default {Date.now} */
  now?: () => number;
  /**
   * Reorder each GetRecords page as shards read in another order would: the records of different
   * items come newest item first, each item's own records still in their order (as AWS keeps
   * them, in one shard).
   */
  reorderStreams?: boolean;
}

interface IndexInfo {
  hash: string;
  range: string | undefined;
  projection: "ALL" | "KEYS_ONLY" | "INCLUDE";
  include: string[];
}

interface TableInfo {
  keys: string[];
  indexes: Map<string, IndexInfo>;
}

/** One write of a key: when it was acknowledged (Infinity while in flight), and the image before. */
interface Write {
  at: number;
  old: Item | null;
}

/** The headers that say which DynamoDB Local database (access key and region) a call is for. */
type Scope = { id: string; headers: Record<string, string> };

const WRITES = new Set([
  "PutItem",
  "UpdateItem",
  "DeleteItem",
  "BatchWriteItem",
  "TransactWriteItems",
]);
const SCHEMA_CHANGES = new Set(["CreateTable", "DeleteTable", "UpdateTable"]);
const encoder = new TextEncoder();

/** A proxy between a client and DynamoDB Local whose indexes lag `lagMs` behind the tables. */
export class IndexLagProxy implements AsyncDisposable {
  readonly endpoint: string;
  /** The lag; may be changed at any time (it applies to the writes already noted too). */
  lagMs: number;
  readonly stats: IndexLagStats = { writes: 0, indexReads: 0, hidden: 0, ghosts: 0 };
  readonly #upstream: string;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #tables = new Map<string, Promise<TableInfo>>();
  /** scope/table → key text → the writes of that key still within the lag. */
  readonly #writes = new Map<string, Map<string, Write[]>>();
  readonly #locks = new KeyLocks();
  readonly #now: () => number;
  readonly #reorder: boolean;

  constructor(upstream: string, options: IndexLagProxyOptions) {
    const url = new URL(upstream);
    if (!["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) {
      throw new Error(`the index lag proxy only forwards to loopback, not ${url.hostname}`);
    }
    if (!Number.isFinite(options.lagMs) || options.lagMs < 0) {
      throw new RangeError(`lagMs must be a finite number >= 0, not ${options.lagMs}`);
    }
    this.#upstream = url.origin;
    this.lagMs = options.lagMs;
    this.#now = options.now ?? Date.now;
    this.#reorder = options.reorderStreams ?? false;
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request) => this.#handle(request),
    );
    this.endpoint = `http://127.0.0.1:${this.#server.addr.port}`;
  }

  async #handle(request: Request): Promise<Response> {
    const body = await request.text();
    const operation = (request.headers.get("x-amz-target") ?? "").replace(/^DynamoDB_\d+\./, "");
    const scope = scopeOf(request.headers);
    try {
      const input = body ? JSON.parse(body) : {};
      if (WRITES.has(operation)) return await this.#write(request, body, operation, input, scope);
      if ((operation === "Query" || operation === "Scan") && input.IndexName) {
        return await this.#indexRead(request, operation, input, scope);
      }
      if (SCHEMA_CHANGES.has(operation) && typeof input.TableName === "string") {
        this.#tables.delete(`${scope.id}/${input.TableName}`);
        if (operation === "DeleteTable") this.#writes.delete(`${scope.id}/${input.TableName}`);
      }
    } catch (error) {
      if (error instanceof Unsupported) return validation(error.message);
      throw error;
    }
    const answer = await this.#forward(request, body);
    if (!this.#reorder || !operation.endsWith("Streams_20120810.GetRecords")) return answer;
    const page = await answer.json();
    if (Array.isArray(page.Records)) page.Records = itemsReversed(page.Records);
    return new Response(JSON.stringify(page), { status: answer.status, headers: answer.headers });
  }

  async #forward(request: Request, body: string): Promise<Response> {
    const headers = new Headers();
    for (const [name, value] of request.headers) {
      if (!["host", "content-length", "connection", "transfer-encoding"].includes(name)) {
        headers.set(name, value);
      }
    }
    const answer = await fetch(this.#upstream + new URL(request.url).pathname, {
      method: request.method,
      headers,
      body: request.method === "GET" || request.method === "HEAD" ? undefined : body,
    });
    return new Response(await answer.arrayBuffer(), {
      status: answer.status,
      headers: responseHeaders(answer.headers),
    });
  }

  /** One call of the proxy's own, in the caller's database. */
  async #call(scope: Scope, operation: string, input: unknown): Promise<Record<string, unknown>> {
    const answer = await fetch(this.#upstream + "/", {
      method: "POST",
      headers: {
        ...scope.headers,
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": `DynamoDB_20120810.${operation}`,
      },
      body: JSON.stringify(input),
    });
    const text = await answer.text();
    if (!answer.ok) throw new Error(`index lag proxy: ${operation} answered ${text}`);
    return JSON.parse(text);
  }

  #table(scope: Scope, table: string, refresh = false): Promise<TableInfo> {
    const id = `${scope.id}/${table}`;
    let info = this.#tables.get(id);
    if (!info || refresh) {
      info = this.#call(scope, "DescribeTable", { TableName: table }).then(tableInfo);
      info.catch(() => this.#tables.delete(id));
      this.#tables.set(id, info);
    }
    return info;
  }

  async #write(
    request: Request,
    body: string,
    operation: string,
    input: WriteInput,
    scope: Scope,
  ): Promise<Response> {
    let touched;
    try {
      touched = await Promise.all(
        touchedKeys(operation, input).map(async ({ table, key, item }) => {
          const info = await this.#table(scope, table);
          const k = key ?? pick(item!, info.keys);
          return {
            table,
            key: k,
            info,
            text: `${scope.id}/${table}\u0000${keyText(k, info.keys)}`,
          };
        }),
      );
    } catch {
      // No such table, or a malformed request: DynamoDB answers it, nothing is written.
      return await this.#forward(request, body);
    }
    const release = await this.#locks.acquire(touched.map((t) => t.text));
    try {
      let olds: (Item | null)[];
      try {
        olds = await Promise.all(touched.map(async ({ table, key }) => {
          const old = await this.#call(scope, "GetItem", {
            TableName: table,
            Key: key,
            ConsistentRead: true,
          });
          return (old.Item as Item | undefined) ?? null;
        }));
      } catch {
        return await this.#forward(request, body);
      }
      const noted = touched.map(({ table, key, info }, i) => {
        const write: Write = { at: Infinity, old: olds[i]! };
        const writes = this.#keyWrites(`${scope.id}/${table}`, keyText(key, info.keys));
        writes.push(write);
        return { table, key, write, writes, info };
      });
      this.stats.writes++;
      let response: Response;
      try {
        response = await this.#forward(request, body);
      } catch (error) {
        // Applied or not, nobody knows: treat it as applied now.
        for (const n of noted) n.write.at = this.#now();
        throw error;
      }
      const at = this.#now();
      const unprocessed = new Set<string>();
      if (response.ok && operation === "BatchWriteItem") {
        const answer = await response.clone().json();
        for (const [table, requests] of Object.entries(answer.UnprocessedItems ?? {})) {
          for (const r of requests as BatchRequest[]) {
            const info = await this.#table(scope, table);
            const key = r.DeleteRequest?.Key ?? pick(r.PutRequest!.Item, info.keys);
            unprocessed.add(`${table}\u0000${keyText(key, info.keys)}`);
          }
        }
      }
      for (const n of noted) {
        const skipped = unprocessed.has(`${n.table}\u0000${keyText(n.key, n.info.keys)}`);
        if (response.ok && !skipped) n.write.at = at;
        else n.writes.splice(n.writes.indexOf(n.write), 1);
      }
      return response;
    } finally {
      release();
    }
  }

  #keyWrites(table: string, key: string): Write[] {
    let keys = this.#writes.get(table);
    if (!keys) this.#writes.set(table, keys = new Map());
    let writes = keys.get(key);
    if (!writes) keys.set(key, writes = []);
    return writes;
  }

  /** The keys of a table written within the lag, each with the image its index entries show. */
  #lagging(table: string): Map<string, Item | null> {
    const lagging = new Map<string, Item | null>();
    const keys = this.#writes.get(table);
    if (!keys) return lagging;
    const horizon = this.#now() - this.lagMs;
    for (const [key, writes] of keys) {
      while (writes.length > 0 && writes[0]!.at <= horizon) writes.shift();
      if (writes.length === 0) keys.delete(key);
      else lagging.set(key, writes[0]!.old);
    }
    return lagging;
  }

  async #indexRead(
    request: Request,
    operation: "Query" | "Scan",
    input: ReadInput,
    scope: Scope,
  ): Promise<Response> {
    this.stats.indexReads++;
    const table = `${scope.id}/${input.TableName}`;
    const lagging = this.#lagging(table);
    if (lagging.size === 0) return await this.#forward(request, JSON.stringify(input));
    let info = await this.#table(scope, input.TableName);
    if (!info.indexes.has(input.IndexName)) info = await this.#table(scope, input.TableName, true);
    const index = info.indexes.get(input.IndexName);
    if (!index) return await this.#forward(request, JSON.stringify(input));

    // Ask for whole index entries: the proxy needs their keys, then answers what was asked.
    const sent: ReadInput = { ...input };
    const count = input.Select === "COUNT";
    let projection: string[] | undefined;
    if (count) delete sent.Select;
    if (input.ProjectionExpression !== undefined) {
      projection = topLevelNames(input.ProjectionExpression, input.ExpressionAttributeNames);
      delete sent.ProjectionExpression;
      const used = `${input.KeyConditionExpression ?? ""} ${input.FilterExpression ?? ""}`;
      const names = Object.fromEntries(
        Object.entries(input.ExpressionAttributeNames ?? {}).filter(([n]) =>
          new RegExp(`${n}(?![A-Za-z0-9_])`).test(used)
        ),
      );
      if (Object.keys(names).length > 0) sent.ExpressionAttributeNames = names;
      else delete sent.ExpressionAttributeNames;
    }
    const response = await this.#forward(request, JSON.stringify(sent));
    if (!response.ok) return response;
    const answer = await response.json();
    const real: Item[] = answer.Items ?? [];
    const names = input.ExpressionAttributeNames ?? {};
    const values = input.ExpressionAttributeValues ?? {};
    const keyCondition = input.KeyConditionExpression === undefined
      ? undefined
      : parseCondition(input.KeyConditionExpression);
    const filter = input.FilterExpression === undefined
      ? undefined
      : parseCondition(input.FilterExpression);
    const order = [
      ...(index.range ? [index.range] : []),
      index.hash,
      ...info.keys,
    ];
    const forward = input.ScanIndexForward !== false;
    const compare = (a: Item, b: Item) => (forward ? 1 : -1) * compareBy(order, a, b);

    const kept = real.filter((item) => !lagging.has(keyText(item, info.keys)));
    const hidden = real.length - kept.length;
    const ghosts: Item[] = [];
    const lastPage = answer.LastEvaluatedKey === undefined;
    for (const old of lagging.values()) {
      if (!old || old[index.hash] === undefined) continue;
      if (index.range && old[index.range] === undefined) continue;
      if (keyCondition && !evaluate(keyCondition, old, names, values)) continue;
      if (operation === "Query") {
        if (input.ExclusiveStartKey && compare(old, input.ExclusiveStartKey) <= 0) continue;
        if (!lastPage && compare(old, answer.LastEvaluatedKey) > 0) continue;
      } else if (!lastPage || (input.Segment ?? 0) !== 0) continue;
      const entry = project(old, index, info.keys);
      if (filter && !evaluate(filter, entry, names, values)) continue;
      ghosts.push(entry);
    }
    // Ghosts go in among the entries in index order; the entries keep DynamoDB's own order.
    let merged: Item[] = kept;
    if (ghosts.length > 0) {
      ghosts.sort(compare);
      merged = [];
      let g = 0;
      for (const item of kept) {
        while (g < ghosts.length && operation === "Query" && compare(ghosts[g]!, item) < 0) {
          merged.push(ghosts[g++]!);
        }
        merged.push(item);
      }
      merged.push(...ghosts.slice(g));
    }
    let last = answer.LastEvaluatedKey;
    // A Scan's next page starts from a key in DynamoDB's own order, not the index's: its last
    // page keeps its ghosts past Limit rather than cut where no start key could go on.
    if (operation === "Query" && input.Limit !== undefined && merged.length > input.Limit) {
      // What is cut comes on the next page, which starts after the last entry shown.
      merged = merged.slice(0, input.Limit);
      last = pick(merged.at(-1)!, [...new Set([...order])]);
    }
    const shown = ghosts.filter((g) => merged.includes(g)).length;
    this.stats.hidden += hidden;
    this.stats.ghosts += shown;
    const out: Record<string, unknown> = { ...answer };
    out.Count = merged.length;
    out.ScannedCount = Math.max(merged.length, (answer.ScannedCount ?? 0) - hidden + shown);
    if (count) delete out.Items;
    else out.Items = projection ? merged.map((item) => pick(item, projection!, true)) : merged;
    if (last === undefined) delete out.LastEvaluatedKey;
    else out.LastEvaluatedKey = last;
    return new Response(JSON.stringify(out), {
      status: response.status,
      headers: responseHeaders(response.headers),
    });
  }

  /** Lets the process end while the proxy listens (a test file's proxy, stopped by its exit). */
  unref(): void {
    this.#server.unref();
  }

  /** Stops listening and closes every connection. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

interface WriteInput {
  TableName?: string;
  Item?: Item;
  Key?: Item;
  RequestItems?: Record<string, BatchRequest[]>;
  TransactItems?: {
    Put?: { TableName: string; Item: Item };
    Update?: { TableName: string; Key: Item };
    Delete?: { TableName: string; Key: Item };
  }[];
}

interface BatchRequest {
  PutRequest?: { Item: Item };
  DeleteRequest?: { Key: Item };
}

interface ReadInput {
  TableName: string;
  IndexName: string;
  KeyConditionExpression?: string;
  FilterExpression?: string;
  ProjectionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Item;
  ExclusiveStartKey?: Item;
  ScanIndexForward?: boolean;
  Limit?: number;
  Select?: string;
  Segment?: number;
}

type Touched = { table: string; key?: Item; item?: Item };

/** Every item a write request touches: its table and its key (or its whole new item). */
function touchedKeys(
  operation: string,
  input: WriteInput,
): Touched[] {
  switch (operation) {
    case "PutItem":
      return [{ table: input.TableName!, item: input.Item! }];
    case "UpdateItem":
    case "DeleteItem":
      return [{ table: input.TableName!, key: input.Key! }];
    case "BatchWriteItem":
      return Object.entries(input.RequestItems ?? {}).flatMap(([table, requests]) =>
        requests.map((r) =>
          r.DeleteRequest
            ? { table, key: r.DeleteRequest.Key }
            : { table, item: r.PutRequest!.Item }
        )
      );
    default:
      return (input.TransactItems ?? []).flatMap((t): Touched[] =>
        t.Put
          ? [{ table: t.Put.TableName, item: t.Put.Item }]
          : t.Update
          ? [{ table: t.Update.TableName, key: t.Update.Key }]
          : t.Delete
          ? [{ table: t.Delete.TableName, key: t.Delete.Key }]
          : []
      );
  }
}

function tableInfo(answer: Record<string, unknown>): TableInfo {
  const table = answer.Table as {
    KeySchema: { AttributeName: string; KeyType: string }[];
    GlobalSecondaryIndexes?: {
      IndexName: string;
      KeySchema: { AttributeName: string; KeyType: string }[];
      Projection?: { ProjectionType?: string; NonKeyAttributes?: string[] };
    }[];
  };
  const ordered = (schema: { AttributeName: string; KeyType: string }[]) =>
    [...schema].sort((a, b) => Number(a.KeyType !== "HASH") - Number(b.KeyType !== "HASH"))
      .map((k) => k.AttributeName);
  const indexes = new Map<string, IndexInfo>();
  for (const gsi of table.GlobalSecondaryIndexes ?? []) {
    const [hash, range] = ordered(gsi.KeySchema);
    indexes.set(gsi.IndexName, {
      hash: hash!,
      range,
      projection: (gsi.Projection?.ProjectionType ?? "ALL") as IndexInfo["projection"],
      include: gsi.Projection?.NonKeyAttributes ?? [],
    });
  }
  return { keys: ordered(table.KeySchema), indexes };
}

/** An item as an index projects it: the table's keys, the index's keys, what it includes. */
function project(item: Item, index: IndexInfo, keys: string[]): Item {
  if (index.projection === "ALL") return item;
  const names = [...keys, index.hash, ...(index.range ? [index.range] : [])];
  if (index.projection === "INCLUDE") names.push(...index.include);
  return pick(item, names, true);
}

function pick(item: Item, names: string[], optional = false): Item {
  const out: Item = {};
  for (const name of names) {
    const value = item[name];
    if (value !== undefined) out[name] = value;
    else if (!optional) throw new Error(`index lag proxy: the item has no key attribute ${name}`);
  }
  return out;
}

function keyText(item: Item, keys: string[]): string {
  return JSON.stringify(keys.map((k) => item[k]));
}

function scopeOf(headers: Headers): Scope {
  const authorization = headers.get("authorization") ?? "";
  const credential = authorization.match(/Credential=([^/]+)\/[^/]+\/([^/]+)\//);
  const copied: Record<string, string> = {};
  for (const name of ["authorization", "x-amz-date", "x-amz-security-token"]) {
    const value = headers.get(name);
    if (value !== null) copied[name] = value;
  }
  return { id: credential ? `${credential[1]}/${credential[2]}` : "?", headers: copied };
}

/** Stream records grouped by item, the item first seen last coming first, each item's in order. */
function itemsReversed(records: { dynamodb?: { Keys?: unknown } }[]): unknown[] {
  const items = new Map<string, unknown[]>();
  for (const record of records) {
    const key = JSON.stringify(record.dynamodb?.Keys ?? null);
    items.set(key, [...items.get(key) ?? [], record]);
  }
  return [...items.values()].reverse().flat();
}

function responseHeaders(headers: Headers): Headers {
  const out = new Headers(headers);
  // The body may be rewritten (and fetch has already decoded it).
  for (const name of ["content-length", "content-encoding", "x-amz-crc32", "transfer-encoding"]) {
    out.delete(name);
  }
  return out;
}

class Unsupported extends Error {
  override name = "Unsupported";
}

function validation(message: string): Response {
  return Response.json(
    { __type: "com.amazonaws.dynamodb.v20120810#ValidationException", message },
    { status: 400, headers: { "content-type": "application/x-amz-json-1.0" } },
  );
}

function topLevelNames(expression: string, names: Record<string, string> = {}): string[] {
  return expression.split(",").map((part) => {
    const name = part.trim();
    if (!/^#?[A-Za-z0-9_]+$/.test(name)) {
      throw new Unsupported(`index lag proxy: cannot project "${name}" (top-level names only)`);
    }
    return name.startsWith("#") ? names[name] ?? name : name;
  });
}

/** Per-key mutual exclusion, taken in key order so that two multi-key writes never deadlock. */
class KeyLocks {
  readonly #tails = new Map<string, Promise<void>>();

  async acquire(keys: string[]): Promise<() => void> {
    const releases: (() => void)[] = [];
    for (const key of [...new Set(keys)].sort()) {
      const previous = this.#tails.get(key) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((resolve) => (release = resolve));
      const tail = previous.then(() => mine);
      this.#tails.set(key, tail);
      await previous;
      releases.push(() => {
        release();
        if (this.#tails.get(key) === tail) this.#tails.delete(key);
      });
    }
    return () => releases.forEach((r) => r());
  }
}

// --- Values ------------------------------------------------------------------------------------

function bytes(value: AttributeValue): Uint8Array {
  if (value.S !== undefined) return encoder.encode(value.S);
  if (value.B !== undefined) {
    return Uint8Array.from(atob(value.B), (c) => c.charCodeAt(0));
  }
  return new Uint8Array(0);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! - b[i]!;
  }
  return a.length - b.length;
}

/** DynamoDB's order of two scalars of one type (N numeric, S and B by bytes); NaN otherwise. */
function compareScalar(a: AttributeValue | undefined, b: AttributeValue | undefined): number {
  if (a?.N !== undefined && b?.N !== undefined) return Math.sign(Number(a.N) - Number(b.N));
  if ((a?.S !== undefined && b?.S !== undefined) || (a?.B !== undefined && b?.B !== undefined)) {
    return Math.sign(compareBytes(bytes(a), bytes(b)));
  }
  return NaN;
}

function compareBy(names: string[], a: Item, b: Item): number {
  for (const name of names) {
    const c = compareScalar(a[name], b[name]);
    if (c !== 0 && !Number.isNaN(c)) return c;
  }
  return 0;
}

function equal(a: AttributeValue | undefined, b: AttributeValue | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  if (a.N !== undefined && b.N !== undefined) return Number(a.N) === Number(b.N);
  const [ta] = Object.keys(a), [tb] = Object.keys(b);
  if (ta !== tb) return false;
  if (ta === "SS" || ta === "NS" || ta === "BS") {
    const sa = new Set(a[ta]!), sb = b[ta]!;
    return sa.size === sb.length && sb.every((x) => sa.has(x));
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

// --- Condition expressions ---------------------------------------------------------------------

type Path = (string | number)[];
type Operand =
  | { kind: "path"; path: Path }
  | { kind: "value"; name: string }
  | { kind: "size"; path: Path };
type Condition =
  | { kind: "and" | "or"; left: Condition; right: Condition }
  | { kind: "not"; inner: Condition }
  | { kind: "compare"; op: string; left: Operand; right: Operand }
  | { kind: "between"; value: Operand; low: Operand; high: Operand }
  | { kind: "in"; value: Operand; list: Operand[] }
  | { kind: "call"; fn: string; args: Operand[] };

const FUNCTIONS = new Set([
  "attribute_exists",
  "attribute_not_exists",
  "attribute_type",
  "begins_with",
  "contains",
]);

function tokenize(text: string): string[] {
  const tokens: string[] = [];
  const pattern = /\s*(<>|<=|>=|[=<>(),.\[\]]|[#:]?[A-Za-z0-9_]+)/y;
  let at = 0;
  while (at < text.length) {
    if (/^\s*$/.test(text.slice(at))) break;
    pattern.lastIndex = at;
    const match = pattern.exec(text);
    if (!match) throw new Unsupported(`index lag proxy: cannot read "${text}" at ${at}`);
    tokens.push(match[1]!);
    at = pattern.lastIndex;
  }
  return tokens;
}

function parseCondition(text: string): Condition {
  const tokens = tokenize(text);
  let i = 0;
  const peek = () => tokens[i];
  const keyword = (word: string) => peek()?.toUpperCase() === word;
  const fail = (): never => {
    throw new Unsupported(
      `index lag proxy: cannot evaluate "${text}" (at "${tokens.slice(i).join(" ")}")`,
    );
  };
  const expect = (token: string) => {
    if (tokens[i] !== token) fail();
    i++;
  };
  const path = (): Path => {
    const out: Path = [];
    const name = tokens[i++];
    if (!name || !/^#?[A-Za-z_][A-Za-z0-9_]*$/.test(name)) fail();
    out.push(name!);
    for (;;) {
      if (peek() === ".") {
        i++;
        const next = tokens[i++];
        if (!next || !/^#?[A-Za-z_][A-Za-z0-9_]*$/.test(next)) fail();
        out.push(next!);
      } else if (peek() === "[") {
        i++;
        const n = Number(tokens[i++]);
        if (!Number.isInteger(n)) fail();
        out.push(n);
        expect("]");
      } else return out;
    }
  };
  const operand = (): Operand => {
    const token = peek();
    if (token === undefined) return fail();
    if (token.startsWith(":")) {
      i++;
      return { kind: "value", name: token };
    }
    if (token.toLowerCase() === "size" && tokens[i + 1] === "(") {
      i += 2;
      const p = path();
      expect(")");
      return { kind: "size", path: p };
    }
    return { kind: "path", path: path() };
  };
  const primary = (): Condition => {
    if (peek() === "(") {
      i++;
      const inner = or();
      expect(")");
      return inner;
    }
    const token = peek()?.toLowerCase();
    if (token && FUNCTIONS.has(token) && tokens[i + 1] === "(") {
      i += 2;
      const args = [operand()];
      while (peek() === ",") {
        i++;
        args.push(operand());
      }
      expect(")");
      return { kind: "call", fn: token, args };
    }
    const left = operand();
    const op = peek();
    if (op && ["=", "<>", "<", "<=", ">", ">="].includes(op)) {
      i++;
      return { kind: "compare", op, left, right: operand() };
    }
    if (keyword("BETWEEN")) {
      i++;
      const low = operand();
      if (!keyword("AND")) fail();
      i++;
      return { kind: "between", value: left, low, high: operand() };
    }
    if (keyword("IN")) {
      i++;
      expect("(");
      const list = [operand()];
      while (peek() === ",") {
        i++;
        list.push(operand());
      }
      expect(")");
      return { kind: "in", value: left, list };
    }
    return fail();
  };
  const not = (): Condition => {
    if (keyword("NOT")) {
      i++;
      return { kind: "not", inner: not() };
    }
    return primary();
  };
  const and = (): Condition => {
    let left = not();
    while (keyword("AND")) {
      i++;
      left = { kind: "and", left, right: not() };
    }
    return left;
  };
  const or = (): Condition => {
    let left = and();
    while (keyword("OR")) {
      i++;
      left = { kind: "or", left, right: and() };
    }
    return left;
  };
  const condition = or();
  if (i !== tokens.length) fail();
  return condition;
}

function resolve(
  item: Item,
  path: Path,
  names: Record<string, string>,
): AttributeValue | undefined {
  let value: AttributeValue | undefined = { M: item };
  for (const part of path) {
    if (typeof part === "number") value = value?.L?.[part];
    else value = value?.M?.[part.startsWith("#") ? names[part] ?? part : part];
    if (value === undefined) return undefined;
  }
  return value;
}

function evaluate(
  condition: Condition,
  item: Item,
  names: Record<string, string>,
  values: Item,
): boolean {
  const value = (operand: Operand): AttributeValue | undefined => {
    if (operand.kind === "value") return values[operand.name];
    const found = resolve(item, operand.path, names);
    if (operand.kind === "path" || found === undefined) return found;
    if (found.S !== undefined) return { N: String(found.S.length) };
    if (found.B !== undefined) return { N: String(bytes(found).length) };
    const many = found.SS ?? found.NS ?? found.BS ?? found.L;
    if (many) return { N: String(many.length) };
    if (found.M) return { N: String(Object.keys(found.M).length) };
    return undefined;
  };
  switch (condition.kind) {
    case "and":
      return evaluate(condition.left, item, names, values) &&
        evaluate(condition.right, item, names, values);
    case "or":
      return evaluate(condition.left, item, names, values) ||
        evaluate(condition.right, item, names, values);
    case "not":
      return !evaluate(condition.inner, item, names, values);
    case "compare": {
      const a = value(condition.left), b = value(condition.right);
      if (condition.op === "=") return equal(a, b);
      if (condition.op === "<>") return a !== undefined && b !== undefined && !equal(a, b);
      const c = compareScalar(a, b);
      if (Number.isNaN(c)) return false;
      return condition.op === "<"
        ? c < 0
        : condition.op === "<="
        ? c <= 0
        : condition.op === ">"
        ? c > 0
        : c >= 0;
    }
    case "between": {
      const v = value(condition.value);
      const low = compareScalar(v, value(condition.low));
      const high = compareScalar(v, value(condition.high));
      return low >= 0 && high <= 0;
    }
    case "in": {
      const v = value(condition.value);
      return condition.list.some((o) => equal(v, value(o)));
    }
    case "call": {
      const [first, second] = condition.args;
      if (first?.kind !== "path") return false;
      const found = resolve(item, first.path, names);
      switch (condition.fn) {
        case "attribute_exists":
          return found !== undefined;
        case "attribute_not_exists":
          return found === undefined;
        case "attribute_type":
          return found !== undefined && second !== undefined &&
            Object.keys(found)[0] === value(second)?.S;
        case "begins_with": {
          const prefix = second && value(second);
          if (!found || !prefix) return false;
          if (found.S !== undefined && prefix.S !== undefined) return found.S.startsWith(prefix.S);
          if (found.B !== undefined && prefix.B !== undefined) {
            const [f, p] = [bytes(found), bytes(prefix)];
            return p.length <= f.length && compareBytes(f.subarray(0, p.length), p) === 0;
          }
          return false;
        }
        default: { // contains
          const needle = second && value(second);
          if (!found || !needle) return false;
          if (found.S !== undefined && needle.S !== undefined) return found.S.includes(needle.S);
          if (found.SS && needle.S !== undefined) return found.SS.includes(needle.S);
          if (found.NS && needle.N !== undefined) {
            return found.NS.some((n) => Number(n) === Number(needle.N));
          }
          if (found.L) return found.L.some((x) => equal(x, needle));
          return false;
        }
      }
    }
  }
}

if (import.meta.main) {
  const [upstream, lag] = Deno.args;
  if (!upstream || lag === undefined) {
    console.error("usage: index_lag_proxy.ts UPSTREAM LAG_MS");
    Deno.exit(2);
  }
  const proxy = new IndexLagProxy(upstream, { lagMs: Number(lag) });
  console.log(`INDEX_LAG_ENDPOINT=${proxy.endpoint}`);
  // Until the parent goes away (its end of our stdin closes).
  for await (const _ of Deno.stdin.readable) { /* discard */ }
  await proxy.close();
}
