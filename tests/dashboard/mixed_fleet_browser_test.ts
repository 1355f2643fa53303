// What an operator needs, in a real browser: an operator of a fleet whose Python workers make
// every commit finds a stuck RUNNING execution on the dashboard's first page, opens it, sees its
// dead letter and retries it — with malformed rows in the table and a hostile page in another tab.
import assert from "node:assert/strict";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { Page } from "puppeteer-core";
import { dashboard } from "../../src/dashboard.ts";
import { DynamoDBStore, relayOutbox } from "../../mod.ts";
import { endpoint, testClient, uniqueName } from "../_support/env.ts";
import { launchBrowser } from "../_support/browser.ts";

interface Fleet {
  stuck: string;
  payer: string;
  running: string[];
  done: string[];
}

/** The Python fleet's commits (boto3, as the Python store writes them); the ids it made. */
async function pythonFleet(prefix: string): Promise<Fleet> {
  const script = new URL("../_support/python_fleet.py", import.meta.url).pathname;
  const out = await new Deno.Command("python3", {
    args: [script, endpoint(), prefix],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/** What the page shows, as a person reads it. */
async function bodyText(page: Page): Promise<string> {
  return String(await page.evaluate("document.body.innerText"));
}

Deno.test("an operator of an all-Python fleet finds its stuck RUNNING execution on the first page, opens it, sees its dead letter and retries it, beside malformed rows and a hostile tab", async () => {
  const prefix = uniqueName("fleet");
  // The Deno side of the fleet: the relay and the dashboard, on a store of a mixed fleet
  // (`otherWriters: true`: the status feed on). Python makes every commit.
  await using store = await DynamoDBStore.create({
    endpoint: endpoint(),
    prefix,
    otherWriters: true,
  });
  const fleet = await pythonFleet(prefix);
  // Another tool's row that reads as RUNNING but holds objects where strings belong.
  using raw = testClient();
  await raw.send(
    new PutItemCommand({
      TableName: store.tables.executions.name,
      Item: {
        id: { S: "odd-row" },
        data: {
          S: JSON.stringify({
            id: { not: "a string" },
            definition_id: { name: "order" },
            status: "RUNNING",
            outcome: true,
            parent_id: ["x"],
            version: 1,
          }),
        },
        version: { N: "1" },
        definition_id: { S: "order" },
      },
    }),
  );
  // The relay cannot deliver the payment to the stuck order: its entry goes dead.
  const report = await relayOutbox(
    store,
    (entry) => Promise.reject(new Error(`order service down for ${entry.targetId}`)),
    { maxAttempts: 1 },
  );
  assert.equal(report.failed, 1);
  assert.equal((await store.deadLetters("outbox")).length, 1);

  // The docs' choice on a machine only the operator can reach: every request authorized.
  const handler = dashboard(store, {
    authorize: () => true,
    basePath: "/dashboard",
    actions: true,
  });
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  const port = server.addr.port;
  await using browser = await launchBrowser([
    "--host-resolver-rules=MAP evil.test 127.0.0.1",
    // Chromium's own Local Network Access checks stop a public page's requests to loopback;
    // other browsers (and a rebinding page on a private address) have none: off, so that what
    // is tested is the dashboard's Host check (with it allowed, this page reads every page).
    "--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests," +
    "PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults",
  ]);

  // The hostile tab, open the whole time: a page of evil.test, whose DNS then points the name at
  // 127.0.0.1 (rebinding), so that the dashboard is its own origin to it.
  const hostile = await browser.newPage();
  const rebound = await hostile.goto(`http://evil.test:${port}/dashboard/`);
  assert.equal(rebound!.status(), 421, "a page under another host name is refused");
  assert.doesNotMatch(await bodyText(hostile), new RegExp(fleet.stuck));
  // The attacker's page, served while evil.test still named the attacker's server; its script
  // runs after the name was rebound to 127.0.0.1, so its requests reach the dashboard.
  await hostile.setRequestInterception(true);
  hostile.on(
    "request",
    (request) =>
      request.isNavigationRequest()
        ? request.respond({ status: 200, contentType: "text/html", body: "<title>cats</title>" })
        : request.continue(),
  );
  await hostile.goto(`http://evil.test:${port}/`);
  /**
   * What the hostile page's script gets from the dashboard, same-origin to it: a status, or
   * "refused" when the request failed (Chromium turns a fetch's 421 into a network error).
   */
  const attack = () =>
    hostile.evaluate(async (stuck: string) => {
      const send = (path: string, init?: RequestInit) =>
        fetch(path, init).then(async (r) => ({ status: r.status, text: await r.text() }))
          .catch(() => ({ status: "refused", text: "" }));
      const read = await send("/dashboard/");
      const csrf = read.text.match(/name="csrf" value="([^"]+)"/)?.[1] ?? "";
      const del = await send(`/dashboard/executions/${stuck}/delete`, {
        method: "POST",
        body: new URLSearchParams({ csrf }),
      });
      return { read: read.status, leaked: read.text.includes(stuck), post: del.status };
    }, fleet.stuck);
  const refused = (status: number | string) => status === 421 || status === "refused";
  const first = await attack();
  assert.ok(refused(first.read) && refused(first.post) && !first.leaked, JSON.stringify(first));

  // The operator's tab: the first page lists the stuck execution, and the odd row as unreadable.
  const page = await browser.newPage();
  const opening = await page.goto(`http://127.0.0.1:${port}/dashboard/`);
  assert.equal(opening!.status(), 200);
  const listing = await bodyText(page);
  for (const id of [fleet.stuck, fleet.payer, ...fleet.running]) {
    assert.match(listing, new RegExp(id));
  }
  assert.match(listing, /odd-row/);
  assert.doesNotMatch(listing, new RegExp(fleet.done[0]!), "the DONE ones are not open");

  // It opens the stuck one and sees the dead letter of the event it waits for.
  const [opened] = await Promise.all([
    page.waitForNavigation(),
    page.click(`a[href$="/executions/${fleet.stuck}"]`),
  ]);
  assert.equal(opened!.status(), 200);
  const seen = await bodyText(page);
  assert.match(seen, /RUNNING/);
  assert.match(seen, /main\.awaiting_payment/);
  assert.match(seen, /Dead letters \(1\)/);
  assert.match(seen, /payment\.received/);
  assert.match(seen, /order service down/);

  // And retries it: the entry is due again, and the next pass delivers it.
  const [retried] = await Promise.all([
    page.waitForNavigation(),
    page.click(`#outbox-dead ~ table button, section[aria-labelledby="outbox-dead"] button`),
  ]);
  assert.ok(retried!.status() < 400, `retry answered ${retried!.status()}`);
  assert.deepEqual(await store.deadLetters("outbox"), []);
  const delivered: string[] = [];
  await relayOutbox(store, (entry) => {
    delivered.push(entry.targetId!);
    return Promise.resolve();
  });
  assert.deepEqual(delivered, [fleet.stuck]);

  // The hostile tab, still open, still gets nothing and changes nothing.
  const again = await attack();
  assert.ok(refused(again.read) && refused(again.post) && !again.leaked, JSON.stringify(again));
  assert.notEqual(await store.load(fleet.stuck), null);
});
