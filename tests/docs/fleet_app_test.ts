// docs/fleet.md's Deploy app runs locally as the page says: saved as fleet_app.ts and started
// with its command line (--unstable-cron), on DynamoDB Local and moto, it answers a new order,
// whose Start is on the queue the workers read by default (stm.fifo).
import assert from "node:assert/strict";
import { SqsQueue } from "../../src/sqs.ts";
import { blockUnder, docsEndpoint, ROOT, section } from "../_support/markdown.ts";
import { readQueue, sqsEndpoint } from "../_support/sqs.ts";

const CONFIG = new URL("deno.json", ROOT).pathname;

Deno.test("the Deploy app of docs/fleet.md runs with its local command line and publishes a Start to stm.fifo", async () => {
  const local = section("docs/fleet.md", "### Running the Deploy app locally");
  const line = local.split("\n").map((l) => l.trim()).find((l) => l.startsWith("deno run "));
  assert.ok(line, "the page gives the command line");
  assert.match(line, /--unstable-cron/);
  assert.match(line, / fleet_app\.ts$/);
  assert.match(local, /SQS_ENDPOINT/);
  const dir = await Deno.makeTempDir({ prefix: "harel_fleet_app_" });
  await Deno.writeTextFile(
    `${dir}/fleet_app.ts`,
    blockUnder("docs/fleet.md", "## The Deploy app", "ts"),
  );
  await using docs = docsEndpoint(); // the app uses the default tables: the docs' own database
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const child = new Deno.Command("bash", {
    args: [
      "-c",
      `exec ${line.replace(/^deno run /, `deno run --no-prompt --config '${CONFIG}' `)}`,
    ],
    cwd: dir,
    env: {
      NO_COLOR: "1",
      DYNAMODB_ENDPOINT: docs.url,
      SQS_ENDPOINT: sqsEndpoint(),
      HAREL_DASHBOARD_TOKEN: "local-secret",
      PORT: String(port),
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    let created: Response | undefined;
    for (let i = 0; i < 240 && created === undefined; i++) {
      created = await fetch(`http://127.0.0.1:${port}/orders`, {
        method: "POST",
        body: JSON.stringify({ total: 42 }),
      }).catch(() => undefined);
      if (created === undefined) await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(created, "the app answered");
    assert.equal(created.status, 201, await created.clone().text());
    const { id } = await created.json();
    await using queue = await SqsQueue.create({ endpoint: sqsEndpoint(), queueName: "stm.fifo" });
    const mine = (await readQueue(queue)).filter((m) => m.group === id);
    assert.deepEqual(mine.map((m) => [m.event.kind, m.event.data]), [["Start", { total: 42 }]]);
  } finally {
    child.kill();
    await child.output(); // its pipes drained, the process gone
    await Deno.remove(dir, { recursive: true });
  }
});
