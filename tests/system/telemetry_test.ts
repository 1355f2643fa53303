// OpenTelemetry for real: a child `deno run` with Deno's built-in exporter (OTEL_DENO=true)
// sends OTLP/JSON to a receiver in this test, which checks the spans and their attributes.
import assert from "node:assert/strict";
import { endpoint } from "../_support/env.ts";

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpSpan {
  name: string;
  spanId: string;
  parentSpanId: string;
  attributes: { key: string; value: OtlpValue }[];
  status: { code: number; message?: string };
  events: { name: string; attributes: { key: string; value: OtlpValue }[] }[];
}

function attrs(list: { key: string; value: OtlpValue }[]): Record<string, unknown> {
  return Object.fromEntries(list.map(({ key, value }) => [
    key,
    value.stringValue ?? value.boolValue ??
      (value.intValue !== undefined ? Number(value.intValue) : value.doubleValue),
  ]));
}

/** Runs tests/_telemetry_child.ts exporting to a local receiver; returns its spans and output. */
async function runChild(): Promise<
  { spans: OtlpSpan[]; output: { executionId: string; lostId: string } }
> {
  const spans: OtlpSpan[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.json();
    if (new URL(request.url).pathname === "/v1/traces") {
      for (const resource of body.resourceSpans ?? []) {
        for (const scope of resource.scopeSpans ?? []) spans.push(...scope.spans);
      }
    }
    return Response.json({});
  });
  try {
    const child = await new Deno.Command("deno", {
      args: [
        "run",
        "--allow-net",
        "--allow-env",
        "--allow-read",
        "--allow-sys=osRelease",
        new URL("../_support/telemetry_child.ts", import.meta.url).pathname,
      ],
      env: {
        DYNAMODB_ENDPOINT: endpoint(),
        OTEL_DENO: "true",
        OTEL_SERVICE_NAME: "harel-telemetry-test",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${server.addr.port}`,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    assert.equal(child.code, 0, decode(child.stderr));
    return { spans, output: JSON.parse(decode(child.stdout)) };
  } finally {
    await server.shutdown();
  }
}

Deno.test("store methods export OpenTelemetry spans with the execution id, commit outcome and retries", async (t) => {
  const { spans, output } = await runChild();
  const named = (name: string) => spans.filter((span) => span.name === name);
  const id = output.executionId;

  await t.step("a span per public method called, named {Class}.{method}", () => {
    const names = new Set(spans.map((span) => span.name));
    for (
      const name of [
        "DynamoDBStore.create",
        "DynamoDBStore.ensureTables",
        "DynamoDBStore.commit",
        "DynamoDBStore.load",
        "DynamoDBStore.close",
        "DynamoDBStateStore.create",
        "DynamoDBStateStore.ensureTable",
        "DynamoDBStateStore.set",
        "DynamoDBStateStore.get",
      ]
    ) assert.ok(names.has(name), `${name} missing from ${[...names].join(", ")}`);
    const create = named("DynamoDBStore.create")[0]!;
    assert.ok(
      named("DynamoDBStore.ensureTables").some((span) => span.parentSpanId === create.spanId),
      "ensureTables runs inside create's span",
    );
  });

  await t.step("commits carry the execution id, their outcome and their retries", () => {
    const commits = named("DynamoDBStore.commit").map((span) => ({
      ...attrs(span.attributes),
      status: span.status.code,
    }));
    assert.deepEqual(commits, [
      {
        "harel.execution_id": id,
        "harel.commit.outcome": "committed",
        "harel.commit.retries": 0,
        status: 0,
      },
      {
        "harel.execution_id": id,
        "harel.commit.outcome": "conflict",
        "harel.commit.retries": 0,
        status: 2,
      },
      {
        "harel.execution_id": id,
        "harel.commit.outcome": "committed",
        "harel.commit.retries": 0,
        status: 0,
      },
      {
        "harel.execution_id": id,
        "harel.commit.outcome": "committed",
        "harel.commit.retries": 1,
        status: 0,
      },
      {
        "harel.execution_id": output.lostId,
        "harel.commit.outcome": "unknown",
        "harel.commit.retries": 1,
        status: 2,
      },
    ]);
    assert.equal(attrs(named("DynamoDBStore.load")[0]!.attributes)["harel.execution_id"], id);
  });

  await t.step("an error is recorded on its span", () => {
    const conflict = named("DynamoDBStore.commit")[1]!;
    assert.match(conflict.status.message ?? "", /^StoreConflict: /);
    const exception = conflict.events.find((event) => event.name === "exception");
    assert.equal(attrs(exception?.attributes ?? [])["exception.type"], "StoreConflict");
  });

  await t.step("a relay pass has a span with what it delivered, failed and held", () => {
    const passes = named("relayOutbox").map((span) => attrs(span.attributes));
    // All three emits share the broadcast target: the failure holds back the third.
    assert.equal(passes.length, 1);
    const { "harel.relay.lag_seconds": lag, ...counts } = passes[0]!;
    assert.deepEqual(counts, {
      "harel.relay.delivered": 1,
      "harel.relay.failed": 1,
      "harel.relay.set_aside": 0,
      "harel.relay.held": 1,
    });
    assert.ok(typeof lag === "number" && lag >= 0 && lag < 60, "the relay lag, in seconds");
    const pass = named("relayOutbox")[0]!;
    assert.ok(
      named("DynamoDBStore.outboxQueue.rows").some((span) => span.parentSpanId === pass.spanId),
      "the pass's reads run inside its span",
    );
  });
});
