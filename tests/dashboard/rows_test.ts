// Rows other writers stored, on the dashboard and in the CLI, over DynamoDBStore on DynamoDB
// Local: an execution item whose document is not one (not JSON, null, a field of the wrong type,
// a lone surrogate), an item whose key is not its document's id, ids `.` and `..`, a dead letter
// whose event's kind is an object. Each is written raw (PutItem), as no commit of this module
// would write it; each page still answers, showing the odd row for what it is.
import assert from "node:assert/strict";
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore, newEvent, newExecution, type Status } from "../../mod.ts";
import { dashboard, type FleetControl } from "../../src/dashboard.ts";
import { statusKey } from "../../src/execution/listing/_status_index.ts";
import { escapeHtml } from "../../src/dashboard/_html.ts";
import { testClient, uniqueName } from "../_support/env.ts";
import { cli, ok } from "../_support/cli.ts";

const ORIGIN = "http://127.0.0.1:8000";

/** A store on fresh tables, and a raw PutItem of an execution item into them. */
async function storeWithRaw() {
  const client = testClient();
  const prefix = uniqueName("rows");
  const store = new DynamoDBStore(client, { prefix });
  await store.ensureTables();
  const table = store.tables.executions.name;
  /**
   * Puts an item with key `id` and `data` (text as given, or the JSON of a document), in the
   * status index's `status` partition as this module's commit leaves it (`indexed: false`: as
   * the Python store's whole-item Put leaves it, in no partition).
   */
  const put = async (
    id: string,
    data: string | Record<string, unknown>,
    { status = "RUNNING" as Status, indexed = true } = {},
  ) => {
    const now = Date.now() / 1000;
    await client.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          id: { S: id },
          data: { S: typeof data === "string" ? data : JSON.stringify(data) },
          version: { N: "3" },
          definition_id: { S: "order" },
          ...(indexed
            ? {
              status_shard: { S: statusKey(status, id) },
              status_at: { N: String(now) },
              updated_at: { N: String(now) },
            }
            : {}),
        },
      }),
    );
  };
  return {
    client,
    prefix,
    store,
    put,
    [Symbol.asyncDispose]: async () => {
      await store.close();
      client.destroy();
    },
  };
}

/** A document with the engine's fields, `id` and `overrides` in it. */
function document(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...newExecution({ definition_id: "order", status: "RUNNING" }), id, ...overrides };
}

/** GETs a page; its status and body. */
async function get(
  handler: (request: Request) => Promise<Response>,
  path: string,
): Promise<{ status: number; page: string }> {
  const response = await handler(new Request(`${ORIGIN}${path}`));
  return { status: response.status, page: await response.text() };
}

/** The rows whose document is not an execution's, with why the listing says so. */
const BAD_ROWS: [string, string | Record<string, unknown>, RegExp][] = [
  [
    "definition-object",
    document("definition-object", { definition_id: { v: 2 } }),
    /its definition_id is an object, not a string/,
  ],
  [
    "outcome-object",
    document("outcome-object", { outcome: { ok: 1 } }),
    /its outcome is an object, not a string or null/,
  ],
  [
    "outcome-true",
    document("outcome-true", { outcome: true }),
    /its outcome is true, not a string or null/,
  ],
  [
    "parent-object",
    document("parent-object", { parent_id: { id: "p" } }),
    /its parent_id is an object/,
  ],
  ["id-object", document("x", { id: { nested: "<b>" } }), /its id is an object, not a string/],
  ["data-null", "null", /its data is null, not a JSON object/],
  ["data-not-json", "{<script>alert(1)</script>", /its data is not JSON/],
];

Deno.test("a row another writer stored oddly is listed as unreadable with its key and why, and the rest of the listing renders", async () => {
  await using raw = await storeWithRaw();
  const good = newExecution({ definition_id: "order", status: "RUNNING" });
  await raw.store.commit(good);
  for (const [id, data] of BAD_ROWS) await raw.put(id, data);
  // A readable row whose parent and document id are lone surrogates (encodeURIComponent throws).
  await raw.put("lone-parent", document("\ud800", { parent_id: "\udc00x" }));
  const handler = dashboard(raw.store, { authorize: () => true });
  for (const path of ["/", "/?status=any", "/?status=RUNNING&definition=order"]) {
    const { status, page } = await get(handler, path);
    assert.equal(status, 200, path);
    assert.match(page, new RegExp(`href="/executions/${good.id}"`), `${path}: the good one`);
    for (const [id, , why] of BAD_ROWS) {
      const row = page.match(
        new RegExp(
          `<tr class="unreadable"><td><a class="mono" href="/executions/${id}">${id}</a></td><td colspan="7"><span class="dead">unreadable</span> <span class="muted">([^<]*)</span>`,
        ),
      );
      assert.ok(row, `${path}: ${id} is listed as unreadable`);
      assert.match(row[1]!, why, `${path}: ${id}`);
    }
    assert.match(
      page,
      /href="\/executions\/lone-parent">lone-parent<\/a>/,
      `${path}: its key links`,
    );
    assert.match(
      page,
      /<span class="mono" title="not valid Unicode: no page can be addressed">&quot;\\udc00x&quot;<\/span>/,
      `${path}: the parent that cannot be addressed shows as text`,
    );
    assert.doesNotMatch(page, /<script>alert/);
  }
  const listing = await raw.store.listExecutions({ status: "RUNNING", limit: 100 });
  assert.deepEqual(
    listing.unreadable?.map((row) => row.id).sort(),
    BAD_ROWS.map(([id]) => id).sort(),
  );
  assert.deepEqual(listing.items.map((s) => s.id).sort(), [good.id, "lone-parent"].sort());
});

Deno.test("the page of a row whose document cannot be read shows its key, why, its data escaped, its timers and trace, and Delete", async () => {
  await using raw = await storeWithRaw();
  // A real execution first, so that it has timers and a trace; then another writer's Put.
  const exe = newExecution({ definition_id: "order", status: "RUNNING" });
  await raw.store.commit(exe, {
    trace: { event: "start" },
    timers: [{ action: "schedule", path: "order.wait", fireAt: Date.now() / 1000 + 60 }],
  });
  const handler = dashboard(raw.store, { authorize: () => true, actions: true });
  for (const [data, why] of [["{<script>", /its data is not JSON/], ["null", /its data is null/]]) {
    await raw.put(exe.id, data as string);
    const { status, page } = await get(handler, `/executions/${exe.id}`);
    assert.equal(status, 200);
    assert.match(page, new RegExp(`<h1>Execution ${exe.id}</h1>`));
    assert.match(
      page,
      /<dt>Document<\/dt><dd><span class="dead">unreadable<\/span>: ([^<]*)<\/dd>/,
    );
    assert.match(page.match(/unreadable<\/span>: ([^<]*)<\/dd>/)![1]!, why as RegExp);
    assert.ok(page.includes(`<pre>${escapeHtml(data as string)}</pre>`), "the data, escaped");
    assert.match(page, /<td class="mono">order\.wait<\/td>/, "its timers");
    assert.match(page, /<span class="step">start<\/span>/, "its trace");
    assert.match(page, new RegExp(`action="/executions/${exe.id}/delete"`), "Delete, by its key");
    assert.doesNotMatch(page, /<script>/);
  }
  // A document whose fields are of other types opens as a document: each shown as its JSON.
  await raw.put(exe.id, document(exe.id, { outcome: true, definition_id: { v: 2 } }));
  const odd = await get(handler, `/executions/${exe.id}`);
  assert.equal(odd.status, 200);
  assert.match(odd.page, /<dt>Outcome<\/dt><dd>true<\/dd>/);
  assert.match(odd.page, /<dt>Definition<\/dt><dd>\{&quot;v&quot;:2\}<\/dd>/);
  await raw.put("lone-parent", document("lone-parent", { parent_id: "\ud800" }));
  const lone = await get(handler, "/executions/lone-parent");
  assert.equal(lone.status, 200);
  assert.match(
    lone.page,
    /<dt>Parent<\/dt><dd><span class="mono" title="[^"]*">&quot;\\ud800&quot;<\/span>/,
  );
});

Deno.test("a dead letter whose event's kind is an object is shown as unreadable, and the other dead letters as usual", async () => {
  await using raw = await storeWithRaw();
  const { outbox } = await raw.store.commit(newExecution({ definition_id: "order" }), {
    emits: [
      { target: "billing", event: newEvent("invoice") },
      { target: "crm", event: newEvent("contact") },
    ],
  });
  for (const seq of outbox) {
    await raw.store.recordFailure("outbox", seq, { attempts: 10, retryAt: null, error: "503" });
  }
  // The first one as another writer would rewrite it: the same row, its event's kind an object.
  const table = raw.store.tables.outbox.name;
  const key = { seq: { N: String(outbox[0]) } };
  const { Item } = await raw.client.send(new GetItemCommand({ TableName: table, Key: key }));
  const event = { id: "e-odd", kind: { name: "<b>invoice</b>" }, data: {} };
  await raw.client.send(
    new PutItemCommand({
      TableName: table,
      Item: { ...Item!, event: { S: JSON.stringify(event) } },
    }),
  );
  const handler = dashboard(raw.store, { authorize: () => true, actions: true });
  const { status, page } = await get(handler, "/dead-letters/outbox");
  assert.equal(status, 200);
  assert.match(
    page,
    new RegExp(
      `seq ${
        outbox[0]
      }</td>.*<span class="dead">unreadable</span> <span class="muted">its event&#39;s kind is not a string</span>`,
    ),
  );
  assert.match(page, /<span class="mono">contact<\/span>/, "the other dead letter as usual");
  assert.doesNotMatch(page, /<b>invoice/);
});

Deno.test("the CLI prints a line for each row it cannot read, and the rest, exiting 0", async () => {
  await using raw = await storeWithRaw();
  const good = newExecution({ definition_id: "order", status: "RUNNING" });
  await raw.store.commit(good, { trace: { event: "start" } });
  for (const [id, data] of BAD_ROWS) await raw.put(id, data, { indexed: false });
  const text = ok(await cli("executions", "--prefix", raw.prefix));
  for (const [id, , why] of BAD_ROWS) {
    const line = text.split("\n").find((l) => l.startsWith(`${id} `));
    assert.ok(line, `${id} has a line`);
    assert.match(line, /\(unreadable: /);
    assert.match(line, why);
  }
  assert.ok(text.split("\n").some((l) => l.startsWith(`${good.id} `)), "the good one");
  assert.match(
    text,
    new RegExp(`${BAD_ROWS.length + 1} shown \\(${BAD_ROWS.length} unreadable\\); no more`),
  );
  const json = JSON.parse(ok(await cli("executions", "--prefix", raw.prefix, "--json")));
  assert.equal(json.unreadable.length, BAD_ROWS.length);

  await raw.put(good.id, "{<oops", { indexed: false });
  const show = ok(await cli("show", good.id, "--prefix", raw.prefix));
  assert.match(show, new RegExp(`execution "${good.id}" is unreadable: its data is not JSON`));
  assert.match(show, /data as stored: "\{<oops"/);
  assert.match(show, /trace \(1 step, oldest first\):\n {2}\{"event":"start","index":0\}/);
  const shown = JSON.parse(ok(await cli("show", good.id, "--prefix", raw.prefix, "--json")));
  assert.deepEqual(shown.unreadable.data, "{<oops");

  const { outbox } = await raw.store.commit(newExecution({ definition_id: "order" }), {
    emits: [{ target: "billing", event: newEvent("invoice") }],
  });
  await raw.store.recordFailure("outbox", outbox[0]!, { attempts: 1, retryAt: null, error: "x" });
  const table = raw.store.tables.outbox.name;
  const key = { seq: { N: String(outbox[0]) } };
  const { Item } = await raw.client.send(new GetItemCommand({ TableName: table, Key: key }));
  await raw.client.send(
    new PutItemCommand({
      TableName: table,
      Item: { ...Item!, event: { S: JSON.stringify({ id: "e", kind: { a: 1 }, data: {} }) } },
    }),
  );
  const letters = ok(await cli("dead-letters", "outbox", "--prefix", raw.prefix));
  assert.match(letters, new RegExp(`${outbox[0]} .*\\{"a":1\\} to billing`));
});

Deno.test("every action acts on the key the page was opened with, not on the id its document claims", async () => {
  await using raw = await storeWithRaw();
  const victim = newExecution({ id: "victim", definition_id: "order", status: "RUNNING" });
  await raw.store.commit(victim);
  await raw.put("raw-mismatch", document("victim", { status: "RUNNING" }));
  const asked: string[] = [];
  const fleet: FleetControl = Object.fromEntries(
    (["suspend", "resume", "cancel", "terminate"] as const).map((op) => [
      op,
      (id: string) => {
        asked.push(`${op} ${id}`);
        return Promise.resolve({ changed: true, status: "RUNNING" });
      },
    ]),
  ) as unknown as FleetControl;
  const handler = dashboard(raw.store, {
    authorize: () => true,
    actions: true,
    fleet,
  });
  const opened = await handler(new Request(`${ORIGIN}/executions/raw-mismatch`));
  const cookie = opened.headers.get("set-cookie")!.split(";")[0]!;
  const page = await opened.text();
  assert.match(page, /<h1>Execution raw-mismatch<\/h1>/);
  assert.match(
    page,
    /<dt>Document id<\/dt><dd>victim <span class="dead">\(not the item's key\)<\/span>/,
  );
  const actions = [...page.matchAll(/<form class="inline" method="post" action="([^"]*)">/g)]
    .map((match) => match[1]);
  assert.deepEqual(actions, [
    "/executions/raw-mismatch/suspend",
    "/executions/raw-mismatch/cancel",
    "/executions/raw-mismatch/terminate",
    "/executions/raw-mismatch/delete",
  ]);
  const csrf = page.match(/name="csrf" value="([^"]+)"/)![1]!;
  for (const action of actions) {
    const response = await handler(
      new Request(`${ORIGIN}${action}`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          origin: ORIGIN,
          "sec-fetch-site": "same-origin",
          cookie,
        },
        body: new URLSearchParams({ csrf, confirm: "yes" }).toString(),
      }),
    );
    assert.equal(response.status, 303, action);
    await response.body?.cancel();
  }
  assert.deepEqual(asked, [
    "suspend raw-mismatch",
    "cancel raw-mismatch",
    "terminate raw-mismatch",
  ]);
  assert.equal(await raw.store.load("raw-mismatch"), null, "the item the page showed is deleted");
  assert.equal((await raw.store.load("victim"))?.id, "victim", "the one its document names is not");
  const listing = await get(handler, "/?status=any");
  assert.match(listing.page, /href="\/executions\/victim">victim<\/a>/);
});

Deno.test("executions with ids . and .. (and ~) are linked so that no URL parser drops them, and open", async () => {
  await using raw = await storeWithRaw();
  const ids = [".", "..", "~x", "a.b"];
  for (const id of ids) {
    await raw.store.commit(newExecution({ id, definition_id: "order", status: "RUNNING" }));
  }
  const handler = dashboard(raw.store, { authorize: () => true, actions: true });
  const listing = await get(handler, "/");
  const links = [
    ...listing.page.matchAll(/<a class="mono" href="\/executions\/([^"]*)">([^<]*)<\/a>/g),
  ]
    .map((match) => [match[2], match[1]]);
  assert.deepEqual(
    Object.fromEntries(links),
    { ".": "~.", "..": "~..", "~x": "~~x", "a.b": "a.b" },
  );
  for (const [id, segment] of links) {
    // As a browser would resolve the link: new URL keeps the segment.
    const url = new URL(`/executions/${segment}`, ORIGIN);
    assert.equal(url.pathname, `/executions/${segment}`, `${id}: not normalized away`);
    const response = await handler(new Request(url));
    const page = await response.text();
    assert.equal(response.status, 200, id);
    assert.match(page, new RegExp(`<h1>Execution ${id!.replace(".", "\\.")}</h1>`), id);
    assert.match(
      page,
      new RegExp(`action="/executions/${segment!.replace(".", "\\.")}/delete"`),
      `${id}: its Delete posts to it too`,
    );
  }
});
