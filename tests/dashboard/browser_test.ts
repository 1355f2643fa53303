// The dashboard in a real browser (Debian's Chromium, driven by puppeteer-core) over
// DynamoDBStore on DynamoDB Local: what an operator clicks, and what a hostile page tries.
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import { authorizeToken, dashboard, type DashboardOptions } from "../../src/dashboard.ts";
import { type DynamoDBStore, newEvent, newExecution } from "../../mod.ts";
import { freshStore, ownRegion, pause } from "../_support/env.ts";
import { launchBrowser } from "../_support/browser.ts";

const TOKEN = "a-token-of-the-operators-0123456789";
/**
 * A database of this file's own (see `ownRegion`): each page and action here waits on a few
 * DynamoDB calls within Chromium's 30 s, which must not queue behind other files' work on the
 * shared database's one SQLite thread (in CI a Retry's POST did, behind streamed tables' writes).
 */
const REGION = ownRegion("browser");

/** A dashboard over `store` at http://127.0.0.1:PORT/dashboard, behind Basic auth. */
function serve(store: DynamoDBStore, options: Partial<DashboardOptions> = {}) {
  const handler = dashboard(store, {
    authorize: authorizeToken(TOKEN),
    challenge: 'Basic realm="harel dashboard"',
    basePath: "/dashboard",
    actions: true,
    ...options,
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  return Object.assign(server, { base: `http://127.0.0.1:${server.addr.port}/dashboard` });
}

/** Clicks a button and waits for the page it leads to; its HTTP status. */
async function clickAndWait(page: Page, selector: string): Promise<number> {
  const [response] = await Promise.all([page.waitForNavigation(), page.click(selector)]);
  return response!.status();
}

/** The texts of the elements a selector finds. */
function texts(page: Page, selector: string): Promise<string[]> {
  return page.$$eval(selector, (nodes) => nodes.map((node) => node.textContent ?? ""));
}

/** What the page shows, as a person reads it. */
async function bodyText(page: Page): Promise<string> {
  return String(await page.evaluate("document.body.innerText"));
}

/** Two dead outbox entries for one target; their seqs. */
async function deadLetters(store: DynamoDBStore): Promise<number[]> {
  const { outbox } = await store.commit(newExecution({ definition_id: "order" }), {
    emits: [
      { target: "billing-1", event: newEvent("invoice.requested") },
      { target: "billing-1", event: newEvent("invoice.requested") },
    ],
  });
  for (const seq of outbox) {
    await store.recordFailure("outbox", seq, { attempts: 10, retryAt: null, error: "HTTP 503" });
  }
  return outbox;
}

Deno.test("in a browser, an operator pages through the open executions, newest first, and opens one to read its trace and timers", async () => {
  await using store = await freshStore({ region: REGION });
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) {
    const exe = newExecution({ definition_id: "order", status: "RUNNING", active_path: "a" });
    await store.commit(exe, { trace: { event: "start", to: "a" } });
    exe.active_path = "b";
    await store.commit(exe, {
      trace: { event: "paid", from: "a", to: "b" },
      timers: [{ action: "schedule", path: "b.ship_by", fireAt: Date.now() / 1000 + 7200 }],
    });
    ids.push(exe.id);
  }
  await store.commit(newExecution({ definition_id: "order", status: "DONE" }));
  await using server = serve(store, { pageSize: 3 });
  await using browser = await launchBrowser();
  const page = await browser.newPage();
  await page.authenticate({ username: "ops", password: TOKEN });
  const first = await page.goto(`${server.base}/`);
  assert.equal(first!.status(), 200);
  assert.deepEqual(await texts(page, "h1"), ["Executions"]);
  assert.match(
    (await texts(page, "#order"))[0]!,
    /^Open executions .*latest to enter their status first/,
  );

  const seen: string[] = [];
  for (let pages = 1;; pages++) {
    seen.push(...await texts(page, "tbody td:first-child a"));
    assert.ok(
      (await texts(page, "tbody td:nth-child(4)")).every((text) => /^\d+ s ago$/.test(text)),
      "each row says how long ago its last commit was",
    );
    if ((await page.$("a[rel=next]")) === null) break;
    assert.equal(await clickAndWait(page, "a[rel=next]"), 200);
    assert.ok(pages < 5, "the pages end");
  }
  assert.deepEqual(
    seen,
    ids.toReversed(),
    "latest to enter their status first; the DONE one is not open",
  );

  await page.goto(`${server.base}/`);
  assert.equal(await clickAndWait(page, "tbody td:first-child a"), 200);
  const id = ids.at(-1)!;
  assert.deepEqual(await texts(page, "h1"), [`Execution ${id}`]);
  assert.deepEqual(await texts(page, "ol.timeline .step"), ["start", "paid"]);
  assert.match((await texts(page, "ol.timeline li"))[1]!, /#1 paid a → b/);
  assert.deepEqual(await texts(page, "table.timers td:first-child"), ["b.ship_by"]);
  assert.match((await texts(page, "table.timers td:nth-child(2)"))[0]!, /\(in 2 h\)/);
  assert.match(await bodyText(page), /Last committed\s+\S+ \S+ UTC \(\d+ s ago\)/);
  assert.match((await texts(page, "pre")).at(-1)!, new RegExp(`"id": "${id}"`));
});

Deno.test("in a browser, an operator finds the stuck executions by typing a time into the filter", async () => {
  await using store = await freshStore({ region: REGION });
  const stuck: string[] = [];
  for (let i = 0; i < 3; i++) {
    const exe = newExecution({ definition_id: "order", status: "RUNNING" });
    await store.commit(exe);
    stuck.push(exe.id);
  }
  await pause(1100);
  const cut = Math.floor(Date.now() / 1000);
  await pause(1100);
  await store.commit(newExecution({ definition_id: "order", status: "RUNNING" }));
  await using server = serve(store);
  await using browser = await launchBrowser();
  const page = await browser.newPage();
  await page.authenticate({ username: "ops", password: TOKEN });
  await page.goto(`${server.base}/`);
  assert.equal((await texts(page, "tbody td:first-child a")).length, 4);
  await page.type("input[name=before]", new Date(cut * 1000).toISOString());
  assert.equal(await clickAndWait(page, "form.filters button"), 200);
  assert.deepEqual(await texts(page, "tbody td:first-child a"), stuck.toReversed());
  assert.match(
    (await texts(page, "#order"))[0]!,
    /last committed before .* UTC, the latest to enter their status first/,
  );

  await page.$eval(
    "input[name=before]",
    (input) => (input as unknown as { value: string }).value = "",
  );
  await page.type("input[name=before]", String(Date.now()));
  assert.equal(await clickAndWait(page, "form.filters button"), 400, "milliseconds are refused");
  assert.match(await bodyText(page), /is epoch milliseconds/);
});

Deno.test("in a browser, Retry on a dead letter makes it due again, and it is gone from the page", async () => {
  await using store = await freshStore({ region: REGION });
  const [first, second] = await deadLetters(store);
  await using server = serve(store);
  await using browser = await launchBrowser();
  const page = await browser.newPage();
  await page.authenticate({ username: "ops", password: TOKEN });
  await page.goto(`${server.base}/dead-letters/outbox`);
  assert.deepEqual(await texts(page, "table.letters td:first-child"), [
    `seq ${first}`,
    `seq ${second}`,
  ]);

  const status = await clickAndWait(
    page,
    `table.letters tbody tr:first-child form[action$="/retry"] button`,
  );
  assert.equal(status, 200, "redirected back to the list");
  assert.equal(new URL(page.url()).pathname, "/dashboard/dead-letters/outbox");
  assert.match((await texts(page, ".notice"))[0]!, /^Retried/);
  assert.deepEqual(await texts(page, "table.letters td:first-child"), [`seq ${second}`]);
  assert.deepEqual((await store.deadLetters("outbox")).map((letter) => letter.key), [second]);
  assert.deepEqual((await store.pendingOutbox()).map((entry) => entry.seq), [first]);
});

Deno.test("in a browser, Drop asks for a confirmation first, and the dead letter is gone once confirmed", async () => {
  await using store = await freshStore({ region: REGION });
  const [first, second] = await deadLetters(store);
  await using server = serve(store);
  await using browser = await launchBrowser();
  const page = await browser.newPage();
  await page.authenticate({ username: "ops", password: TOKEN });
  await page.goto(`${server.base}/dead-letters/outbox`);

  assert.equal(
    await clickAndWait(page, `table.letters tbody tr:first-child form[action$="/drop"] button`),
    200,
  );
  assert.deepEqual(await texts(page, "h1"), ["Drop this dead letter?"]);
  assert.equal((await store.deadLetters("outbox")).length, 2, "nothing dropped while asking");
  assert.equal(await clickAndWait(page, `form[action$="/drop"] button`), 200);
  assert.match((await texts(page, ".notice"))[0]!, /^Dropped/);
  assert.deepEqual(await texts(page, "table.letters td:first-child"), [`seq ${second}`]);
  assert.deepEqual((await store.deadLetters("outbox")).map((letter) => letter.key), [second]);
  assert.ok(!(await store.pendingOutbox()).some((entry) => entry.seq === first));
});

Deno.test("in a browser, Retry all of a target retries its dead letters in one click, and the front page's backlog shows them pending", async () => {
  await using store = await freshStore({ region: REGION });
  const seqs = await deadLetters(store);
  await using server = serve(store);
  await using browser = await launchBrowser();
  const page = await browser.newPage();
  await page.authenticate({ username: "ops", password: TOKEN });
  await page.goto(`${server.base}/`);
  const outbox = async () =>
    String(
      await page.$eval(".card", (card) => (card as unknown as { innerText: string }).innerText),
    )
      .replace(/\s+/g, " ");
  assert.match(await outbox(), /pending 0 waiting to retry 0 dead letters 2 held targets 1/);

  await page.goto(`${server.base}/dead-letters/outbox`);
  const status = await clickAndWait(page, `section form[action$="/retry-all"] button`);
  assert.equal(status, 200);
  assert.match((await texts(page, ".notice"))[0]!, /^Retried 2 dead letters\.$/);
  assert.deepEqual(await store.deadLetters("outbox"), []);
  assert.deepEqual((await store.pendingOutbox()).map((entry) => entry.seq), seqs);
  await page.goto(`${server.base}/`);
  assert.match(await outbox(), /pending 2 waiting to retry 0 dead letters 0 held targets 0/);
});

Deno.test("a script another writer stored never runs in the browser: it shows as text", async () => {
  await using store = await freshStore({ region: REGION });
  const script = `<script>window.__harel_pwned = 1; alert("script")</script>`;
  const image = `<img src="x" onerror="window.__harel_pwned = 2; alert('img')">`;
  const exe = newExecution({
    definition_id: script,
    status: "FAILED",
    error: image,
    active_path: script,
    context: { note: script, photo: image },
  });
  await store.commit(exe, {
    trace: { event: script, from: image, to: script },
    emits: [{ target: exe.id, event: newEvent(script, { html: image }) }],
  });
  const [seq] = (await store.pendingOutbox()).map((entry) => entry.seq);
  await store.recordFailure("outbox", seq!, { attempts: 1, retryAt: null, error: image });
  await using server = serve(store);
  await using browser = await launchBrowser();
  const page = await browser.newPage();
  const dialogs: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.authenticate({ username: "ops", password: TOKEN });
  for (const path of ["/?status=FAILED", `/executions/${exe.id}`, "/dead-letters/outbox"]) {
    const response = await page.goto(`${server.base}${path}`);
    assert.equal(response!.status(), 200, path);
    assert.equal(await page.evaluate("document.scripts.length"), 0, path);
    assert.equal(await page.$$eval("img", (nodes) => nodes.length), 0, path);
    assert.equal(
      await page.evaluate("typeof window.__harel_pwned"),
      "undefined",
      path,
    );
    const text = await bodyText(page);
    assert.ok(text.includes(path === "/dead-letters/outbox" ? image : script), path);
  }
  assert.deepEqual(dialogs, []);
});

Deno.test("in a browser, the dashboard answers 401 without credentials and with a wrong token, showing nothing of the store", async () => {
  await using store = await freshStore({ region: REGION });
  await store.commit(newExecution({ definition_id: "secret-definition" }));
  // Without a challenge: headless Chromium cannot ask for a password, it would abort the page.
  await using server = serve(store, { challenge: undefined });
  await using browser = await launchBrowser();
  const stranger = await browser.newPage();
  const response = await stranger.goto(`${server.base}/`);
  assert.equal(response!.status(), 401);
  const text = await bodyText(stranger);
  assert.match(text, /needs you to sign in/);
  assert.doesNotMatch(text, /secret-definition/);

  const guesser = await browser.newPage();
  await guesser.setExtraHTTPHeaders({ authorization: "Bearer a-wrong-token-0123456789" });
  const guessed = await guesser.goto(`${server.base}/`);
  assert.equal(guessed!.status(), 401);
  assert.doesNotMatch(await bodyText(guesser), /secret-definition/);

  const operator = await browser.newPage();
  await operator.setExtraHTTPHeaders({ authorization: `Bearer ${TOKEN}` });
  const allowed = await operator.goto(`${server.base}/`);
  assert.equal(allowed!.status(), 200);
  assert.match(await bodyText(operator), /secret-definition/);
});

Deno.test("a POST forged by another site is refused with 403 and changes nothing, even carrying the real token", async (t) => {
  await using store = await freshStore({ region: REGION });
  const [seq] = await deadLetters(store);
  await using server = serve(store);
  await using browser = await launchBrowser();
  const page = await browser.newPage();
  await page.authenticate({ username: "ops", password: TOKEN });
  // The operator's own session: the cookie and the token a real page carries.
  await page.goto(`${server.base}/dead-letters/outbox`);
  const token = await page.$eval(
    `input[name=csrf]`,
    (input) => (input as unknown as { value: string }).value,
  );
  const port = new URL(server.base).port;

  const forged = (csrf: string) =>
    `<!doctype html><title>prize</title>
<form method="post" action="http://127.0.0.1:${port}/dashboard/dead-letters/outbox/drop">
<input name="csrf" value="${csrf}"><input name="seq" value="${seq}"><input name="confirm" value="yes">
<button>Claim your prize</button></form>`;
  // On the loopback address; the page is opened as localhost (another site) or 127.0.0.1.
  const evil = (body: string) =>
    Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response(body, { headers: { "content-type": "text/html" } }),
    );

  const cases: [string, string, string][] = [
    ["another site (localhost), a made-up token", "localhost", "forged-token"],
    ["another site (localhost), the real token", "localhost", token],
    ["a same-site neighbour (another port), the real token", "127.0.0.1", token],
  ];
  for (const [what, hostname, csrf] of cases) {
    await t.step(what, async () => {
      await using attacker = evil(forged(csrf));
      await page.goto(`http://${hostname}:${attacker.addr.port}/`);
      assert.equal(await clickAndWait(page, "button"), 403);
      assert.match(await bodyText(page), /Nothing was done/);
      assert.deepEqual(
        (await store.deadLetters("outbox")).map((letter) => letter.key).includes(seq!),
        true,
        "still dead, not dropped",
      );
    });
  }
});

/** A hostile page's script: it reads the dashboard's pages at `base`, takes a token, and posts. */
function hostileScript(base: string, id: string, seq: number): string {
  return `<!doctype html><title>cute cats</title><body><script>
(async () => {
  const out = {};
  const attempt = async (name, run) => {
    try { out[name] = await run(); } catch (error) { out[name] = "blocked: " + error.name; }
  };
  let token = "made-up";
  await attempt("list", async () => {
    const response = await fetch("${base}/");
    const page = await response.text();
    return { status: response.status, sawExecution: page.includes("${id}") };
  });
  await attempt("execution", async () => {
    const response = await fetch("${base}/executions/${id}");
    const page = await response.text();
    token = (page.match(/name="csrf" value="([^"]+)"/) || [])[1] || token;
    return { status: response.status, tookToken: token !== "made-up" };
  });
  const form = { "content-type": "application/x-www-form-urlencoded" };
  await attempt("delete", async () => (await fetch("${base}/executions/${id}/delete", {
    method: "POST", mode: "no-cors", credentials: "include", headers: form,
    body: "csrf=" + encodeURIComponent(token) + "&confirm=yes",
  })).status);
  await attempt("drop", async () => (await fetch("${base}/dead-letters/outbox/drop", {
    method: "POST", mode: "no-cors", credentials: "include", headers: form,
    body: "csrf=" + encodeURIComponent(token) + "&seq=${seq}&confirm=yes",
  })).status);
  document.body.dataset.result = JSON.stringify(out);
})();
</script></body>`;
}

Deno.test("a hostile page in another tab gets nothing and changes nothing: from another origin, or rebinding its own name to the dashboard", async (t) => {
  await using store = await freshStore({ region: REGION });
  const [seq] = await deadLetters(store);
  const exe = newExecution({ definition_id: "secret-order", status: "RUNNING" });
  await store.commit(exe, { trace: { event: "start" } });
  // The docs' choice on a machine only you can reach: no password, actions on, no hosts option.
  const handler = dashboard(store, { authorize: () => true, actions: true });
  const answered: { host: string; path: string; method: string; status: number }[] = [];
  let attack = "";
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      const host = request.headers.get("host") ?? url.host;
      // Before the rebinding, evil.example's own server (the attacker's) served this page.
      if (url.pathname === "/attack.html" && host.startsWith("evil.example")) {
        return new Response(attack, { headers: { "content-type": "text/html" } });
      }
      const response = await handler(request);
      if (url.pathname !== "/favicon.ico") {
        answered.push({
          host,
          path: url.pathname,
          method: request.method,
          status: response.status,
        });
      }
      return response;
    },
  );
  const port = server.addr.port;
  await using browser = await launchBrowser(["--host-resolver-rules=MAP evil.example 127.0.0.1"]);
  // The operator's own tab: a session, a token, the pages.
  const operator = await browser.newPage();
  const own = await operator.goto(`http://127.0.0.1:${port}/executions/${exe.id}`);
  assert.equal(own!.status(), 200);
  assert.match(await bodyText(operator), /secret-order/);

  const unchanged = async () => {
    assert.equal((await store.load(exe.id))?.id, exe.id, "the execution is still there");
    assert.ok(
      (await store.deadLetters("outbox")).some((letter) => letter.key === seq),
      "the dead letter is still there",
    );
  };
  const runAttack = async (url: string) => {
    const tab = await browser.newPage();
    await tab.goto(url);
    await tab.waitForSelector("body[data-result]", { timeout: 10_000 });
    const result = JSON.parse(
      await tab.$eval(
        "body",
        (body) => (body as unknown as { dataset: { result: string } }).dataset.result,
      ),
    );
    await tab.close();
    return result;
  };

  await t.step(
    "a page that rebinds evil.example to 127.0.0.1 reads nothing: every request is 421",
    async () => {
      answered.length = 0;
      attack = hostileScript("", exe.id, seq!); // same-origin to the browser, after the rebinding
      const result = await runAttack(`http://evil.example:${port}/attack.html`);
      assert.deepEqual(result.list, { status: 421, sawExecution: false });
      assert.deepEqual(result.execution, { status: 421, tookToken: false });
      assert.deepEqual([result.delete, result.drop], [421, 421]);
      // A browser may send a request answered 421 once more, on a new connection: each is 421.
      assert.deepEqual(
        [...new Set(answered.map((a) => `${a.method} ${a.path} ${a.status}`))],
        [
          "GET / 421",
          `GET /executions/${exe.id} 421`,
          `POST /executions/${exe.id}/delete 421`,
          "POST /dead-letters/outbox/drop 421",
        ],
      );
      await unchanged();
    },
  );

  await t.step(
    "a page of another origin (another port) can read nothing and its posts are refused",
    async () => {
      answered.length = 0;
      await using other = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen() {} },
        () =>
          new Response(hostileScript(`http://127.0.0.1:${port}`, exe.id, seq!), {
            headers: { "content-type": "text/html" },
          }),
      );
      const result = await runAttack(`http://127.0.0.1:${other.addr.port}/`);
      assert.match(String(result.list), /^blocked/, "the browser lets it read no page");
      assert.match(String(result.execution), /^blocked/);
      for (const post of [result.delete, result.drop]) {
        // An opaque answer (status 0), or none at all: the dashboard's CORP header refuses it.
        assert.match(String(post), /^(0|blocked: TypeError)$/, "it learns nothing of the answer");
      }
      const posts = answered.filter((a) => a.method === "POST");
      assert.deepEqual(posts.map((a) => a.status), [403, 403], JSON.stringify(answered));
      await unchanged();
    },
  );

  // And the operator's own tab still works.
  const again = await operator.goto(`http://127.0.0.1:${port}/executions/${exe.id}`);
  assert.equal(again!.status(), 200);
});
