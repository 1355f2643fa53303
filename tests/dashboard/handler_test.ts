// The dashboard's request handling on the memory twin: authorization, methods, routes, the
// session and CSRF token, the same-origin rule, the headers, refusals that change nothing, and
// what a hostile visitor tries. No DynamoDB, no browser (tests/dashboard/browser_test.ts); the
// actions' outcomes are tests/dashboard/actions_test.ts, the listing's queries listing_test.ts.
import assert from "node:assert/strict";
import { authorizeToken, dashboard, type DashboardOptions } from "../../src/dashboard.ts";
import { MemoryStore } from "../../src/testing.ts";
import { build, deadSeqs, HOST, openSession, ORIGIN, post, seeded } from "../_support/dashboard.ts";

Deno.test("building a dashboard without authorize throws a TypeError that says how to let a local machine in", () => {
  const store = new MemoryStore();
  assert.throws(
    () => dashboard(store, {} as DashboardOptions),
    (error: Error) => error instanceof TypeError && /authorize: \(\) => true/.test(error.message),
  );
  assert.throws(() => dashboard(store, undefined as never), TypeError);
  assert.throws(() => dashboard(store, { authorize: true as never }), TypeError);
});

Deno.test("an option the dashboard does not know is refused naming the near miss, and bad values are refused", () => {
  const store = new MemoryStore();
  const authorize = () => true;
  assert.throws(
    () => dashboard(store, { authorize, basepath: "/x" } as never),
    /dashboard\(\) has no option "basepath": did you mean "basePath"\?/,
  );
  assert.throws(() => dashboard(store, { authorize, action: true } as never), /"actions"/);
  for (const basePath of ["dashboard", "/a//b", "/a/../b", "/a b", "/a?x"]) {
    assert.throws(() => dashboard(store, { authorize, basePath }), TypeError, basePath);
  }
  assert.throws(() => dashboard(store, { authorize, pageSize: 0 }), RangeError);
  assert.throws(() => dashboard(store, { authorize, secret: "short" }), TypeError);
  assert.throws(() => dashboard(store, { authorize, origin: "https://a.test/path" }), TypeError);
  assert.throws(
    () => dashboard(store, { authorize, challenge: "Basic\r\nSet-Cookie: x" }),
    TypeError,
  );
  assert.throws(() => dashboard({} as never, { authorize }), /no listExecutions\(\) method/);
});

Deno.test("a request authorize refuses is answered 401 with the challenge, and shows nothing of the store", async () => {
  const { store, exe } = await seeded();
  const handler = build(store, {
    authorize: () => false,
    challenge: 'Basic realm="ops"',
  });
  for (const path of ["/", `/executions/${exe.id}`, "/dead-letters/outbox"]) {
    const response = await handler(new Request(`${ORIGIN}${path}`));
    assert.equal(response.status, 401, path);
    assert.equal(response.headers.get("www-authenticate"), 'Basic realm="ops"');
    assert.equal(response.headers.get("set-cookie"), null, "no session for a stranger");
    const page = await response.text();
    assert.match(page, /needs you to sign in/);
    const body = page.slice(page.indexOf("</style>"));
    assert.doesNotMatch(body, new RegExp(`${exe.id}|order|billing|HTTP 503`));
  }
});

Deno.test("a POST authorize refuses is answered 401 and changes nothing, even with a valid token", async () => {
  const { store, outbox } = await seeded();
  let allowed = true;
  const handler = build(store, { authorize: () => allowed });
  const { cookie, csrf } = await openSession(handler);
  allowed = false;
  const response = await post(handler, "/dead-letters/outbox/retry", {
    csrf,
    seq: String(outbox[0]),
  }, {
    cookie,
  });
  assert.equal(response.status, 401);
  assert.deepEqual(await deadSeqs(store), outbox);
});

Deno.test("every response carries the security headers: a CSP with no script, nosniff, no-store, the referrer policy, no framing", async () => {
  const { store, outbox } = await seeded();
  let allowed = true;
  const handler = build(store, { authorize: () => allowed, onError: () => {} });
  const { cookie, csrf } = await openSession(handler);
  const responses: [string, Response][] = [
    ["200", await handler(new Request(`${ORIGIN}/`))],
    [
      "303",
      await post(handler, "/dead-letters/outbox/retry", { csrf, seq: String(outbox[0]) }, {
        cookie,
      }),
    ],
    ["400", await handler(new Request(`${ORIGIN}/?before=1700000000000`))],
    ["403", await post(handler, "/dead-letters/outbox/retry", { csrf: "x", seq: "1" }, { cookie })],
    ["404", await handler(new Request(`${ORIGIN}/nowhere`))],
    ["405", await handler(new Request(`${ORIGIN}/`, { method: "PUT" }))],
  ];
  allowed = false;
  responses.push(["401", await handler(new Request(`${ORIGIN}/`))]);
  await store.close();
  allowed = true;
  responses.push(["500", await handler(new Request(`${ORIGIN}/`))]);
  for (const [status, response] of responses) {
    assert.equal(String(response.status), status);
    const csp = response.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'/, status);
    assert.match(csp, /frame-ancestors 'none'/, status);
    assert.match(csp, /form-action 'self'/, status);
    assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/]+=*'(;|$)/, status);
    assert.doesNotMatch(csp, /script-src|unsafe-inline|unsafe-eval/, status);
    assert.equal(response.headers.get("x-content-type-options"), "nosniff", status);
    assert.equal(response.headers.get("cache-control"), "no-store", status);
    assert.equal(response.headers.get("referrer-policy"), "same-origin", status);
    assert.equal(response.headers.get("x-frame-options"), "DENY", status);
    await response.body?.cancel();
  }
});

Deno.test("the page's one inline stylesheet is exactly the one the CSP's hash allows", async () => {
  const response = await build(new MemoryStore())(new Request(`${ORIGIN}/`));
  const page = await response.text();
  const styles = [...page.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]!);
  assert.equal(styles.length, 1);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(styles[0]!));
  const hash = new Uint8Array(digest).toBase64();
  assert.match(
    response.headers.get("content-security-policy")!,
    new RegExp(`style-src 'sha256-${hash.replace(/[+/]/g, "\\$&")}'`),
  );
  assert.equal(response.headers.get("content-type"), "text/html; charset=utf-8");
});

Deno.test("a store that fails shows a generic page with no message, endpoint or stack, and onError gets the error", async () => {
  const store = new MemoryStore();
  const secret = "connect ECONNREFUSED http://10.0.0.7:8000 AKIAEXAMPLEKEY";
  store.listExecutions = () => Promise.reject(new TypeError(secret));
  const seen: unknown[] = [];
  const handler = build(store, { onError: (error) => seen.push(error) });
  const response = await handler(new Request(`${ORIGIN}/`));
  assert.equal(response.status, 500);
  const page = await response.text();
  assert.match(page, /Something went wrong/);
  assert.doesNotMatch(page, /ECONNREFUSED|10\.0\.0\.7|AKIA|TypeError|at \w+ \(/);
  assert.equal((seen[0] as Error).message, secret);
});

Deno.test("an onError that throws still leaves a generic page, and authorize that throws is a 500", async () => {
  const handler = build(new MemoryStore(), {
    authorize: () => {
      throw new Error("token store down at https://vault.internal");
    },
    onError: () => {
      throw new Error("logger down");
    },
  });
  const response = await handler(new Request(`${ORIGIN}/`));
  assert.equal(response.status, 500);
  assert.doesNotMatch(await response.text(), /vault|logger/);
});

Deno.test("HEAD answers as GET does, without a body", async () => {
  const { store, exe } = await seeded();
  const handler = build(store);
  for (const path of ["/", `/executions/${exe.id}`, "/executions/nobody", "/nowhere"]) {
    const get = await handler(new Request(`${ORIGIN}${path}`));
    const head = await handler(new Request(`${ORIGIN}${path}`, { method: "HEAD" }));
    assert.equal(head.status, get.status, path);
    assert.equal(head.body, null, path);
    assert.equal(head.headers.get("content-type"), get.headers.get("content-type"));
    await get.body?.cancel();
  }
});

Deno.test("methods other than GET, HEAD and POST are answered 405 with Allow", async () => {
  const { store, outbox } = await seeded();
  for (const method of ["PUT", "DELETE", "PATCH", "OPTIONS"]) {
    const response = await build(store)(
      new Request(`${ORIGIN}/dead-letters/outbox/drop`, {
        method,
        body: `seq=${outbox[0]}&confirm=yes`,
      }),
    );
    assert.equal(response.status, 405, method);
    assert.equal(response.headers.get("allow"), "GET, HEAD, POST");
    await response.body?.cancel();
  }
  const readOnly = await dashboard(store, { authorize: () => true, hosts: [HOST] })(
    new Request(`${ORIGIN}/`, { method: "DELETE" }),
  );
  assert.equal(readOnly.headers.get("allow"), "GET, HEAD");
  assert.deepEqual(await deadSeqs(store), outbox);
});

Deno.test("with actions off (the default) pages have no buttons and no session, and every POST is 405 and changes nothing", async () => {
  const { store, exe, outbox } = await seeded();
  const handler = dashboard(store, { authorize: () => true, hosts: [HOST] });
  for (
    const path of ["/", `/executions/${exe.id}`, "/dead-letters/outbox", "/dead-letters/timers"]
  ) {
    const response = await handler(new Request(`${ORIGIN}${path}`));
    const page = await response.text();
    assert.doesNotMatch(page, /<form[^>]*method="post"/, path);
    assert.equal(response.headers.get("set-cookie"), null, path);
  }
  for (
    const path of [
      "/dead-letters/outbox/retry",
      "/dead-letters/outbox/drop",
      `/executions/${exe.id}/delete`,
    ]
  ) {
    const response = await post(handler, path, { seq: String(outbox[0]), confirm: "yes" });
    assert.equal(response.status, 405, path);
    await response.body?.cancel();
  }
  const unknown = await handler(new Request(`${ORIGIN}/dead-letters/outbox/retry`));
  assert.equal(unknown.status, 404, "an action's address is no page when actions are off");
  assert.deepEqual(await deadSeqs(store), outbox);
  assert.ok(await store.load(exe.id));
});

Deno.test("a GET that tries to act is answered 405 and changes nothing", async () => {
  const { store, exe, outbox } = await seeded();
  const handler = build(store);
  const { csrf } = await openSession(handler);
  for (
    const url of [
      `/dead-letters/outbox/retry?csrf=${csrf}&seq=${outbox[0]}`,
      `/dead-letters/outbox/drop?csrf=${csrf}&seq=${outbox[0]}&confirm=yes`,
      `/dead-letters/outbox/drop-all?csrf=${csrf}&confirm=yes`,
      `/executions/${exe.id}/delete?csrf=${csrf}&confirm=yes`,
    ]
  ) {
    const response = await handler(new Request(`${ORIGIN}${url}`));
    assert.equal(response.status, 405, url);
    assert.equal(response.headers.get("allow"), "POST");
    await response.body?.cancel();
  }
  assert.deepEqual(await deadSeqs(store), outbox);
  assert.ok(await store.load(exe.id));
});

Deno.test("a POST without the session cookie, without a token, with a made-up token or another session's is 403 and changes nothing", async () => {
  const { store, outbox } = await seeded();
  const handler = build(store);
  const mine = await openSession(handler);
  const theirs = await openSession(handler);
  assert.notEqual(mine.cookie, theirs.cookie);
  const seq = String(outbox[0]);
  const attempts: [string, Record<string, string>, Record<string, string | null>][] = [
    ["no cookie", { csrf: mine.csrf, seq }, {}],
    ["no token", { seq }, { cookie: mine.cookie }],
    ["a made-up token", { csrf: "A".repeat(43), seq }, { cookie: mine.cookie }],
    ["an empty token", { csrf: "", seq }, { cookie: mine.cookie }],
    ["another session's token", { csrf: theirs.csrf, seq }, { cookie: mine.cookie }],
    ["a made-up cookie", { csrf: mine.csrf, seq }, {
      cookie: `harel_dashboard_session=${"B".repeat(43)}`,
    }],
  ];
  for (const [what, fields, headers] of attempts) {
    const response = await post(handler, "/dead-letters/outbox/retry", fields, headers);
    assert.equal(response.status, 403, what);
    assert.match(await response.text(), /Nothing was done/, what);
  }
  const twice = new URLSearchParams([["csrf", mine.csrf], ["csrf", mine.csrf], ["seq", seq]]);
  const response = await handler(
    new Request(`${ORIGIN}/dead-letters/outbox/retry`, {
      method: "POST",
      headers: { origin: ORIGIN, "sec-fetch-site": "same-origin", cookie: mine.cookie },
      body: twice,
    }),
  );
  assert.equal(response.status, 403, "two tokens");
  await response.body?.cancel();
  assert.deepEqual(await deadSeqs(store), outbox);
});

Deno.test("a POST that fails the same-origin rule is 403 and changes nothing, even with the right token", async () => {
  const { store, outbox } = await seeded();
  const handler = build(store);
  const { cookie, csrf } = await openSession(handler);
  const fields = { csrf, seq: String(outbox[0]) };
  const cases: [string, Record<string, string | null>][] = [
    ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site", origin: "https://evil.test" }],
    ["Sec-Fetch-Site: same-site", {
      "sec-fetch-site": "same-site",
      origin: "http://ops.test:8080",
    }],
    ["Sec-Fetch-Site: none", { "sec-fetch-site": "none", origin: null }],
    ["no Origin and no Sec-Fetch-Site", { "sec-fetch-site": null, origin: null }],
    ["another Origin, no Sec-Fetch-Site", { "sec-fetch-site": null, origin: "https://evil.test" }],
    ["Origin null", { "sec-fetch-site": null, origin: "null" }],
    ["same-origin claimed, another Origin", { origin: "http://ops.test:8080" }],
  ];
  for (const [what, headers] of cases) {
    const response = await post(handler, "/dead-letters/outbox/retry", fields, {
      cookie,
      ...headers,
    });
    assert.equal(response.status, 403, what);
    await response.body?.cancel();
  }
  assert.deepEqual(await deadSeqs(store), outbox);
  const alone = await post(handler, "/dead-letters/outbox/retry", fields, {
    cookie,
    "sec-fetch-site": null,
  });
  assert.equal(
    alone.status,
    303,
    "an Origin that matches is enough (browsers without Fetch metadata)",
  );
});

Deno.test("a second session cookie (planted by a neighbour) makes the POST refused", async () => {
  const { store, outbox } = await seeded();
  const handler = build(store);
  const { cookie, csrf } = await openSession(handler);
  const planted = `harel_dashboard_session=${"C".repeat(43)}`;
  const response = await post(handler, "/dead-letters/outbox/retry", {
    csrf,
    seq: String(outbox[0]),
  }, {
    cookie: `${planted}; ${cookie}`,
  });
  assert.equal(response.status, 403);
  assert.deepEqual(await deadSeqs(store), outbox);
});

Deno.test("the session cookie is HttpOnly, SameSite=Strict, scoped to the base path, and Secure over HTTPS", async () => {
  const handler = build(new MemoryStore(), { basePath: "/ops" });
  const plain = await handler(new Request("http://ops.test/ops/"));
  assert.match(
    plain.headers.get("set-cookie")!,
    /^harel_dashboard_session=[A-Za-z0-9_-]{43}; Path=\/ops; HttpOnly; SameSite=Strict$/,
  );
  const secure = await handler(new Request("https://ops.test/ops/"));
  assert.match(secure.headers.get("set-cookie")!, /; Secure$/);
  await plain.body?.cancel();
  await secure.body?.cancel();
});

Deno.test("a path that tries to climb out stays an id or a 404: /executions/..%2F.. names no page but its own", async () => {
  const { store } = await seeded();
  const handler = build(store, { basePath: "/ops" });
  const traversal = await handler(new Request(`${ORIGIN}/ops/executions/..%2F..`));
  assert.equal(traversal.status, 404);
  assert.match(await traversal.text(), /There is no execution \.\.\/\.\./);
  for (
    const path of [
      "/ops/executions/%2e%2e/%2e%2e/secret",
      "/ops/dead-letters/../../etc/passwd",
      "/ops/executions/a/b/c",
    ]
  ) {
    const response = await handler(new Request(`${ORIGIN}${path}`));
    assert.equal(response.status, 404, path);
    assert.match(await response.text(), /There is no such page/);
  }
  const broken = await handler(new Request(`${ORIGIN}/ops/executions/%E0%A4%A`));
  assert.equal(broken.status, 400);
  await broken.body?.cancel();
  const long = await handler(new Request(`${ORIGIN}/ops/executions/${"x".repeat(3000)}`));
  assert.equal(long.status, 400, "longer than any key DynamoDB stores");
  await long.body?.cancel();
});

Deno.test("an id holding a <script> shows escaped on the page that says there is no such execution", async () => {
  const handler = build(new MemoryStore());
  const id = `<script>alert(1)</script>`;
  const response = await handler(new Request(`${ORIGIN}/executions/${encodeURIComponent(id)}`));
  assert.equal(response.status, 404);
  const page = await response.text();
  assert.ok(page.includes("There is no execution &lt;script&gt;alert(1)&lt;/script&gt;."));
  assert.doesNotMatch(page, /<script/);
});

Deno.test("mounted under a base path behind a router, links start with it and requests outside it are 404", async () => {
  const { store, exe } = await seeded();
  const ops = build(store, { basePath: "/internal/ops" });
  const router = (request: Request) =>
    new URL(request.url).pathname.startsWith("/internal/")
      ? ops(request)
      : Promise.resolve(new Response("app"));
  const page = await (await router(new Request(`${ORIGIN}/internal/ops`))).text();
  const links = [...page.matchAll(/(?:href|action)="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(links.length > 5);
  for (const link of links) assert.match(link, /^\/internal\/ops\//, link);
  assert.ok(links.includes(`/internal/ops/executions/${exe.id}`));
  for (const outside of ["/internal/opsx", "/internal/", "/internal/other/executions"]) {
    const response = await router(new Request(`${ORIGIN}${outside}`));
    assert.equal(response.status, 404, outside);
    await response.body?.cancel();
  }
  assert.equal((await router(new Request(`${ORIGIN}/internal/ops/`))).status, 200);
  assert.equal(await (await router(new Request(`${ORIGIN}/shop`))).text(), "app");
});

Deno.test("behind a proxy, origin names the origin a POST must come from", async () => {
  const { store, outbox } = await seeded();
  const handler = build(store, { origin: "https://ops.example.com" });
  const { cookie, csrf } = await openSession(handler);
  const fields = { csrf, seq: String(outbox[0]) };
  const direct = await post(handler, "/dead-letters/outbox/retry", fields, { cookie });
  assert.equal(direct.status, 403, "the internal URL's origin is not the public one");
  const viaProxy = await post(handler, "/dead-letters/outbox/retry", fields, {
    cookie,
    origin: "https://ops.example.com",
  });
  assert.equal(viaProxy.status, 303);
});

Deno.test("two dashboards with one secret accept each other's tokens (isolates); without one they do not", async () => {
  const { store, outbox } = await seeded();
  const secret = "a shared secret of the deployment";
  const a = build(store, { secret });
  const b = build(store, { secret });
  const { cookie, csrf } = await openSession(a);
  const onB = await post(b, "/dead-letters/outbox/retry", { csrf, seq: String(outbox[0]) }, {
    cookie,
  });
  assert.equal(onB.status, 303);
  const c = build(store);
  const onC = await post(c, "/dead-letters/outbox/retry", { csrf, seq: String(outbox[1]) }, {
    cookie,
  });
  assert.equal(onC.status, 403);
  await onC.body?.cancel();
});

Deno.test("an unknown page is 404 and a page of an unknown kind of dead letter too", async () => {
  const handler = build(new MemoryStore());
  for (
    const path of [
      "/nowhere",
      "/dead-letters/mail",
      "/dead-letters/",
      "/executions/",
      "/executions",
    ]
  ) {
    const response = await handler(new Request(`${ORIGIN}${path}`));
    assert.equal(response.status, 404, path);
    await response.body?.cancel();
  }
});

Deno.test("authorizeToken lets in the token as a bearer token or a Basic password, and nothing else", async () => {
  const token = "s3cret-token-of-the-ops-team";
  const allowed = authorizeToken(token);
  const ask = (authorization?: string) =>
    allowed(new Request(ORIGIN, { headers: authorization ? { authorization } : {} }));
  assert.equal(await ask(`Bearer ${token}`), true);
  assert.equal(await ask(`Basic ${btoa(`anyone:${token}`)}`), true);
  assert.equal(await ask(`basic ${btoa(`:${token}`)}`), true);
  for (
    const wrong of [
      undefined,
      "",
      `Bearer ${token}x`,
      `Bearer ${token.slice(0, -1)}`,
      `Basic ${btoa(token)}`,
      `Basic ${btoa(`${token}:x`)}`,
      "Basic %%%",
      `Token ${token}`,
      `Bearer ${token} extra`,
    ]
  ) {
    assert.equal(await ask(wrong), false, String(wrong));
  }
  assert.throws(() => authorizeToken("short"), TypeError);
});

/** `store` with every call it receives recorded by name. */
function recording(store: MemoryStore): { store: MemoryStore; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        return value.apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

Deno.test("a request under another host name (DNS rebinding) is 421 on every method, before authorize and without a store call", async () => {
  const seed = await seeded();
  const { store, calls } = recording(seed.store);
  let asked = 0;
  // The docs' choice on a machine only you can reach: no password, and no hosts option.
  const handler = dashboard(store, {
    authorize: () => (asked++, true),
    actions: true,
  });
  const own = await handler(new Request("http://127.0.0.1:8000/dead-letters/outbox"));
  assert.equal(own.status, 200);
  const session = own.headers.get("set-cookie")!.split(";")[0]!;
  const token = (await own.text()).match(/name="csrf" value="([^"]+)"/)![1]!;
  calls.length = 0;
  asked = 0;
  const evil = "http://evil.example:8000";
  const form = `csrf=${encodeURIComponent(token)}&seq=${seed.outbox[0]}&confirm=yes`;
  const requests: [string, Request][] = [
    ["GET of the first page", new Request(`${evil}/`)],
    ["HEAD", new Request(`${evil}/`, { method: "HEAD" })],
    ["GET of an execution", new Request(`${evil}/executions/${seed.exe.id}`)],
    ["GET outside any page", new Request(`${evil}/nowhere`)],
    ["DELETE", new Request(`${evil}/`, { method: "DELETE" })],
    [
      "a same-origin POST with the session's token",
      new Request(
        `${evil}/executions/${seed.exe.id}/delete`,
        {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            origin: evil,
            "sec-fetch-site": "same-origin",
            cookie: session,
          },
          body: form,
        },
      ),
    ],
    [
      "a Host header that is not the dashboard's, on a loopback URL",
      new Request(
        "http://127.0.0.1:8000/",
        { headers: { host: "evil.example:8000" } },
      ),
    ],
    ["a Host that only ends like one", new Request("http://localhost.evil.example/")],
    ["a Host that is no host", new Request("http://127.0.0.1/", { headers: { host: "a b" } })],
  ];
  for (const [what, request] of requests) {
    const response = await handler(request);
    assert.equal(response.status, 421, what);
    const page = await response.text();
    const body = page.slice(page.indexOf("</style>"));
    assert.doesNotMatch(body, new RegExp(`${seed.exe.id}|order|billing|csrf`), what);
    assert.equal(response.headers.get("set-cookie"), null, what);
    assert.ok(response.headers.get("content-security-policy"), what);
  }
  assert.deepEqual(calls, [], "no store call was made");
  assert.equal(asked, 0, "authorize was never asked");
  assert.ok(await store.load(seed.exe.id), "the execution is still there");
  assert.deepEqual(await deadSeqs(seed.store), seed.outbox);
});

Deno.test("by default the dashboard answers to localhost, 127.0.0.1 and [::1], on any port", async () => {
  const handler = dashboard(new MemoryStore(), { authorize: () => true });
  for (
    const url of [
      "http://localhost/",
      "http://localhost:8787/",
      "http://127.0.0.1:9/",
      "http://[::1]:8000/",
      "https://LOCALHOST/",
    ]
  ) {
    const response = await handler(new Request(url));
    assert.equal(response.status, 200, url);
    await response.body?.cancel();
  }
});

Deno.test("hosts lets a dashboard answer to its real names behind a proxy: a name, a name at one port, the names below a domain", async () => {
  const handler = dashboard(new MemoryStore(), {
    authorize: () => true,
    hosts: ["ops.example.com", "ops.internal:8443", "*.ops.example.org"],
  });
  const cases: [string, number][] = [
    ["https://ops.example.com/", 200],
    ["http://ops.example.com:8080/", 200],
    ["https://ops.internal:8443/", 200],
    ["https://ops.internal:8444/", 421],
    ["https://ops.internal/", 421],
    ["https://eu.ops.example.org/", 200],
    ["https://ops.example.org/", 421],
    ["https://ops.example.com.evil.test/", 421],
    ["http://localhost/", 421],
  ];
  for (const [url, status] of cases) {
    const response = await handler(new Request(url));
    assert.equal(response.status, status, url);
    await response.body?.cancel();
  }
  const behind = dashboard(new MemoryStore(), {
    authorize: () => true,
    origin: "https://ops.example.com",
  });
  for (const [url, status] of [["https://ops.example.com/", 200], ["http://localhost/", 200]]) {
    const response = await behind(new Request(url as string));
    assert.equal(response.status, status, `origin's host and the loopback names: ${url}`);
    await response.body?.cancel();
  }
});

Deno.test("hosts that are not host names are refused when the dashboard is built, naming the entry", () => {
  const authorize = () => true;
  const store = new MemoryStore();
  assert.throws(
    () => dashboard(store, { authorize, hosts: [] }),
    /hosts must be a non-empty array/,
  );
  assert.throws(
    () => dashboard(store, { authorize, hosts: "ops.example.com" as never }),
    /hosts must be a non-empty array .*got "ops.example.com"/,
  );
  for (const entry of ["https://ops.example.com", "ops.example.com/dashboard", "a b", "*", ""]) {
    assert.throws(
      () => dashboard(store, { authorize, hosts: ["localhost", entry] }),
      (error: Error) =>
        error instanceof TypeError && error.message.startsWith("hosts[1] must be a host name"),
      entry,
    );
  }
  assert.throws(() => dashboard(store, { authorize, hosts: ["a:70000"] }), /hosts\[0\]/);
  assert.throws(() => dashboard(store, { authorize, hosts: [42 as never] }), /got 42/);
  assert.throws(
    () => dashboard(store, { authorize, host: ["a"] } as never),
    /did you mean "hosts"\?/,
  );
});
