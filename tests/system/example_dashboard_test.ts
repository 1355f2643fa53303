// The example worker's dashboard: mounted at /dashboard behind a token, beside the worker's own
// routes; and `deno run scripts/order_worker.ts` prints where it is and how to sign in.
import assert from "node:assert/strict";
import { createOrderWorker } from "../../scripts/order_worker.ts";
import { endpoint, freshStore, uniqueName } from "../_support/env.ts";

const TOKEN = "the-example-dashboard-token-42";

Deno.test("the order worker serves its dashboard at /dashboard behind the token, and its own routes beside it", async () => {
  await using store = await freshStore();
  const worker = createOrderWorker(store, { dashboardToken: TOKEN });
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    worker.handler,
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const created = await fetch(`${base}/executions`, {
    method: "POST",
    body: JSON.stringify({ customer: "ada" }),
  });
  const { execution } = await created.json();

  const stranger = await fetch(`${base}/dashboard/`);
  assert.equal(stranger.status, 401);
  assert.match(stranger.headers.get("www-authenticate")!, /^Basic realm="harel dashboard"/);
  await stranger.body?.cancel();

  const operator = { authorization: `Basic ${btoa(`ops:${TOKEN}`)}` };
  const page = await fetch(`${base}/dashboard/`, { headers: operator });
  assert.equal(page.status, 200);
  assert.match(await page.text(), new RegExp(`href="/dashboard/executions/${execution.id}"`));
  const one = await fetch(`${base}/dashboard/executions/${execution.id}`, { headers: operator });
  assert.match(await one.text(), /<span class="step">start<\/span>/);

  const api = await fetch(`${base}/executions/${execution.id}`);
  assert.equal(
    (await api.json()).execution.id,
    execution.id,
    "the worker's own routes still answer",
  );
});

Deno.test("without a token the order worker mounts no dashboard", async () => {
  await using store = await freshStore();
  const worker = createOrderWorker(store);
  const response = await worker.handler(new Request("http://localhost/dashboard/"));
  assert.equal(response.status, 404);
  await response.body?.cancel();
});

Deno.test("the example worker prints the dashboard's address and a password that signs in", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const child = new Deno.Command("deno", {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-sys=osRelease",
      new URL("../../scripts/order_worker.ts", import.meta.url).pathname,
    ],
    env: {
      DYNAMODB_ENDPOINT: endpoint(),
      HAREL_PREFIX: uniqueName("example"),
      PORT: String(port),
      HAREL_DASHBOARD_TOKEN: "",
    },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    let printed = "";
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    const deadline = setTimeout(() => reader.cancel(), 60_000);
    while (!/dashboard on .*\n/.test(printed)) {
      const { value, done } = await reader.read();
      if (done) break;
      printed += value;
    }
    clearTimeout(deadline);
    const line = printed.match(
      /dashboard on (http:\/\/localhost:\d+\/dashboard\/) \(any user name; password: (\S+), or set HAREL_DASHBOARD_TOKEN\)/,
    );
    assert.ok(line, printed);
    assert.equal(line[1], `http://localhost:${port}/dashboard/`);
    const page = await fetch(`http://127.0.0.1:${port}/dashboard/`, {
      headers: { authorization: `Basic ${btoa(`ops:${line[2]}`)}` },
    });
    assert.equal(page.status, 200);
    await page.body?.cancel();
    await reader.cancel();
  } finally {
    child.kill();
    await child.status;
  }
});
