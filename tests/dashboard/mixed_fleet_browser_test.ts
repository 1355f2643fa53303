// Issue #34's "done when", in a real browser: an operator of a fleet whose Python workers make
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
  // The Deno side of the fleet: the relay and the dashboard, with the store's defaults (the
  // status feed on). Python makes every commit.
  await using store = await DynamoDBStore.create({ endpoint: endpoint(), prefix });
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
  // A hostile page on another name, which its DNS then points at 127.0.0.1 (rebinding).
  await using evil = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      new Response(
        `<!doctype html><p id="result">pending</p><script>
        (async () => {
          const base = "http://evil.test:${port}/dashboard";
          const out = {};
          try {
            const page = await fetch(base + "/");
            out.read = page.status;
            out.leaked = (await page.text()).includes(${JSON.stringify(fleet.stuck)});
          } catch (error) { out.read = String(error); }
          try {
            const del = await fetch(base + "/executions/${fleet.stuck}/delete", {
              method: "POST",
              body: new URLSearchParams({ csrf: "guess", confirm: "yes" }),
            });
            out.post = del.status;
          } catch (error) { out.post = String(error); }
          document.getElementById("result").textContent = JSON.stringify(out);
        })();
        </script>`,
        { headers: { "content-type": "text/html" } },
      ),
  );
  await using browser = await launchBrowser(["--host-resolver-rules=MAP evil.test 127.0.0.1"]);

  // The hostile tab, open the whole time.
  const hostile = await browser.newPage();
  await hostile.goto(`http://evil.test:${evil.addr.port}/`);
  const rebound = await hostile.goto(`http://evil.test:${port}/dashboard/`);
  assert.equal(rebound!.status(), 421, "a page under another host name is refused");
  assert.doesNotMatch(await bodyText(hostile), new RegExp(fleet.stuck));

  // The operator's tab: the first page lists the stuck execution, and the odd row as unreadable.
  const page = await browser.newPage();
  const first = await page.goto(`http://127.0.0.1:${port}/dashboard/`);
  assert.equal(first!.status(), 200);
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

  // The hostile tab got nothing and changed nothing.
  await hostile.goto(`http://evil.test:${evil.addr.port}/`);
  await hostile.waitForFunction('document.getElementById("result").textContent !== "pending"');
  const tried = JSON.parse(await hostile.$eval("#result", (node) => node.textContent ?? ""));
  assert.notEqual(
    tried.leaked,
    true,
    `the hostile page read the dashboard: ${JSON.stringify(tried)}`,
  );
  assert.ok(tried.post === 421 || typeof tried.post === "string", JSON.stringify(tried));
  assert.notEqual(await store.load(fleet.stuck), null);
});
