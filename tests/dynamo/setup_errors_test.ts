/**
 * Missing setup fails fast with what to set, and EndpointUnreachable names the endpoint
 * actually used. Each case runs in a child process with a clean environment (an empty HOME:
 * no shared AWS config files) and `--allow-net=127.0.0.1`: nothing here can reach real AWS.
 */
import assert from "node:assert/strict";
import { freePort } from "../../scripts/local_dynamodb.ts";
import { rejectingEndpoint } from "../_support/env.ts";

const ROOT = new URL("../../", import.meta.url);

interface Outcome {
  name: string;
  message: string;
  ms: number;
  missing?: string;
  endpoint?: string;
  waitedMs?: number;
}

/** Runs `create()` with `options` in a child whose environment is exactly `env`. */
async function createInChild(
  options: Record<string, unknown>,
  env: Record<string, string>,
  which: "DynamoDBStore" | "DynamoDBStateStore" = "DynamoDBStore",
): Promise<Outcome> {
  const home = await Deno.makeTempDir({ prefix: "harel_setup_home_" });
  try {
    const script = `
      import { ${which} } from ${JSON.stringify(new URL("mod.ts", ROOT).href)};
      const started = performance.now();
      try {
        await (await ${which}.create(${JSON.stringify(options)})).close();
        console.log(JSON.stringify({ name: "ok", message: "", ms: performance.now() - started }));
      } catch (error) {
        const { name, message, missing, endpoint, waitedMs } = error;
        const ms = performance.now() - started;
        console.log(JSON.stringify({ name, message, ms, missing, endpoint, waitedMs }));
      }`;
    const file = `${home}/child.ts`;
    await Deno.writeTextFile(file, script);
    const { stdout, stderr } = await new Deno.Command("deno", {
      args: [
        "run",
        "--no-prompt",
        "--config",
        new URL("deno.json", ROOT).pathname,
        "--allow-env",
        "--allow-read",
        "--allow-net=127.0.0.1",
        "--allow-sys=osRelease",
        file,
      ],
      clearEnv: true,
      env: { HOME: home, DENO_DIR, PATH: Deno.env.get("PATH") ?? "", NO_COLOR: "1", ...env },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(stdout).trim();
    assert.ok(text, new TextDecoder().decode(stderr));
    return JSON.parse(text.split("\n").at(-1)!) as Outcome;
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

/** The child's HOME is empty: it must still find the packages already in Deno's cache. */
const DENO_DIR = (JSON.parse(
  new TextDecoder().decode(
    (await new Deno.Command("deno", { args: ["info", "--json"], stdout: "piped" })
      .output())
      .stdout,
  ),
) as { denoDir: string }).denoDir;

const KEYS = { AWS_ACCESS_KEY_ID: "AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY: "not-a-real-secret" };

Deno.test("create() without endpoint or region fails at once saying what to set", async (t) => {
  for (const which of ["DynamoDBStore", "DynamoDBStateStore"] as const) {
    await t.step(which, async () => {
      const outcome = await createInChild({}, KEYS, which);
      assert.equal(outcome.name, "MissingSetup", outcome.message);
      assert.equal(outcome.missing, "region");
      assert.match(outcome.message, /`region` option/);
      assert.match(outcome.message, /AWS_REGION/);
      assert.match(outcome.message, /endpoint/);
      assert.match(outcome.message, /DYNAMODB_ENDPOINT/);
      assert.ok(outcome.ms < 2000, `took ${outcome.ms} ms`);
    });
  }
});

Deno.test("create() without credentials fails at once saying what to set", async () => {
  // Should anything be sent, it goes to a local endpoint that refuses it, never to AWS.
  await using server = rejectingEndpoint();
  const outcome = await createInChild({ region: "eu-west-1", deadlineMs: 30_000 }, {
    AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${server.addr.port}`,
    AWS_EC2_METADATA_DISABLED: "true", // the chain's last resort is EC2's metadata service
  });
  assert.equal(outcome.name, "MissingSetup", outcome.message);
  assert.equal(outcome.missing, "credentials");
  assert.match(outcome.message, /AWS_ACCESS_KEY_ID/);
  assert.match(outcome.message, /AWS_SECRET_ACCESS_KEY/);
  assert.match(outcome.message, /endpoint/);
  assert.ok(outcome.ms < 2000, `took ${outcome.ms} ms`);
});

Deno.test("EndpointUnreachable names the endpoint AWS_ENDPOINT_URL_DYNAMODB chose", async () => {
  const endpoint = `http://127.0.0.1:${freePort()}`;
  const outcome = await createInChild({ region: "eu-west-1", deadlineMs: 500 }, {
    ...KEYS,
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
  });
  assert.equal(outcome.name, "EndpointUnreachable", outcome.message);
  assert.equal(outcome.endpoint, endpoint);
  assert.match(outcome.message, new RegExp(`DynamoDB at ${endpoint} did not answer`));
  assert.ok(outcome.waitedMs! >= 500 && outcome.waitedMs! < 5000, `waited ${outcome.waitedMs}`);
});

Deno.test("EndpointUnreachable names the endpoint option and how long create() waited", async () => {
  const endpoint = `http://127.0.0.1:${freePort()}`;
  const outcome = await createInChild({ endpoint, deadlineMs: 300 }, {});
  assert.equal(outcome.name, "EndpointUnreachable", outcome.message);
  assert.equal(outcome.endpoint, endpoint);
  assert.ok(outcome.waitedMs! >= 300 && outcome.waitedMs! < 5000, `waited ${outcome.waitedMs}`);
});

Deno.test("without an endpoint the error names the region's AWS endpoint", async () => {
  const { endpointInUse } = await import("../../src/dynamo/connect.ts");
  const saved = ["AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"].map((name) => {
    const value = Deno.env.get(name);
    Deno.env.delete(name);
    return [name, value] as const;
  });
  try {
    assert.equal(endpointInUse({}, "eu-west-1"), "https://dynamodb.eu-west-1.amazonaws.com");
    assert.equal(
      endpointInUse({ endpoint: "http://127.0.0.1:8000" }, "us-east-1"),
      "http://127.0.0.1:8000",
    );
  } finally {
    for (const [name, value] of saved) if (value !== undefined) Deno.env.set(name, value);
  }
});
