// The dependency rules of src/ (docs/contributing.md), read off the import statements: no
// DynamoDB needed.
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { type ImportGraph, importGraph } from "./_support/import_graph.ts";

const graph: ImportGraph = await importGraph(new URL("../", import.meta.url));

/** Every file `from` reaches through imports that run (type-only imports left out). */
function runtimeReach(from: string): Set<string> {
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length > 0) {
    for (const edge of graph.get(stack.pop()!) ?? []) {
      if (edge.typeOnly || seen.has(edge.to)) continue;
      seen.add(edge.to);
      stack.push(edge.to);
    }
  }
  return seen;
}

function filesIn(folder: string): string[] {
  return [...graph.keys()].filter((file) => file.startsWith(folder));
}

Deno.test("execution/ and state/ do not import each other", () => {
  const crossings = [];
  for (const [from, to] of [["src/execution/", "src/state/"], ["src/state/", "src/execution/"]]) {
    for (const file of filesIn(from!)) {
      for (const edge of graph.get(file)!) {
        if (edge.to.startsWith(to!)) crossings.push(`${file} -> ${edge.to}`);
      }
    }
  }
  assertEquals(crossings, []);
});

Deno.test("core/ imports nothing outside core/ but npm type-only imports and telemetry's API", () => {
  const outside = [];
  for (const file of filesIn("src/core/")) {
    for (const edge of graph.get(file)!) {
      const allowed = edge.to.startsWith("src/core/") || edge.to === "@opentelemetry/api" ||
        (edge.typeOnly && edge.to.startsWith("@aws-sdk/"));
      if (!allowed) outside.push(`${file} -> ${edge.to}`);
    }
  }
  assertEquals(outside, []);
});

Deno.test("core/ and the memory twins never reach dynamo/ or the AWS SDK at run time", () => {
  const roots = [
    ...filesIn("src/core/"),
    "src/execution/memory/memory_store.ts",
    "src/state/memory_state_store.ts",
    "src/testing.ts",
  ];
  const reached = [];
  for (const root of roots) {
    for (const file of runtimeReach(root)) {
      if (file.startsWith("src/dynamo/") || file.startsWith("@aws-sdk/")) {
        reached.push(`${root} -> ${file}`);
      }
    }
  }
  assertEquals(reached, []);
});

Deno.test("both execution stores and the relay run the one outbox pipeline; the memory twin has no pass loop of its own", async () => {
  const pipeline = "src/core/_outbox_pipeline.ts";
  for (
    const from of [
      "src/execution/memory/memory_store.ts",
      "src/execution/execution_store.ts",
      "src/relay.ts",
    ]
  ) {
    assertEquals(runtimeReach(from).has(pipeline), true, from);
  }
  // The twin implements the queue's reads and writes only: it neither decides nor loops a read.
  const twin = filesIn("src/execution/memory/");
  const decides = twin.flatMap((file) =>
    graph.get(file)!.filter((edge) => edge.to === "src/core/_outbox_decide.ts").map(() => file)
  );
  assertEquals(decides, []);
  for (const file of twin) {
    const text = await Deno.readTextFile(new URL(`../${file}`, import.meta.url));
    assertEquals(/decideOutbox|readOutbox|budget/.exec(text)?.[0], undefined, file);
  }
});

Deno.test("the dashboard never reaches dynamo/ or the AWS SDK at run time", () => {
  const reached = [...runtimeReach("src/dashboard.ts")].filter((file) =>
    file.startsWith("src/dynamo/") || file.startsWith("@aws-sdk/")
  );
  assertEquals(reached, []);
  assertEquals(runtimeReach("src/dashboard.ts").has("src/dashboard/_store_calls.ts"), true);
});

Deno.test("only the store's context imports other_writers/: nothing else branches on other writers", () => {
  const importers = [];
  for (const [file, edges] of graph) {
    if (file.startsWith("src/execution/other_writers/")) continue;
    for (const edge of edges) {
      if (edge.to.startsWith("src/execution/other_writers/")) {
        importers.push(`${file} -> ${edge.to}`);
      }
    }
  }
  assertEquals(importers, [
    "src/execution/_store_context.ts -> src/execution/other_writers/other_writers.ts",
  ]);
});

/** The shortest chain of imports that run from `from` to a file or package `to` accepts. */
function runtimeChain(from: string, to: (file: string) => boolean): string[] | undefined {
  const cameFrom = new Map<string, string>([[from, ""]]);
  const queue = [from];
  for (let file; (file = queue.shift()) !== undefined;) {
    if (to(file)) {
      const chain = [file];
      while (cameFrom.get(chain[0]!)) chain.unshift(cameFrom.get(chain[0]!)!);
      return chain;
    }
    for (const edge of graph.get(file) ?? []) {
      if (edge.typeOnly || cameFrom.has(edge.to)) continue;
      cameFrom.set(edge.to, file);
      queue.push(edge.to);
    }
  }
  return undefined;
}

Deno.test("a default store's static imports never reach the DynamoDB Streams client", () => {
  // Only a store built with `otherWriters: true` may load it (by a dynamic import).
  const streams = "@aws-sdk/client-dynamodb-streams";
  const isStreams = (to: string) => to === streams || to.startsWith(`${streams}@`);
  const chains = [];
  for (const root of ["mod.ts", "src/execution/execution_store.ts"]) {
    const chain = runtimeChain(root, isStreams);
    if (chain) chains.push(chain.join(" -> "));
  }
  assertEquals(chains, []);
});

Deno.test("no module of src/ imports itself back through a chain of imports", () => {
  const cycles: string[] = [];
  const done = new Set<string>();
  const visit = (file: string, path: string[]): void => {
    if (path.includes(file)) {
      cycles.push([...path.slice(path.indexOf(file)), file].join(" -> "));
      return;
    }
    if (done.has(file)) return;
    for (const edge of graph.get(file) ?? []) visit(edge.to, [...path, file]);
    done.add(file);
  };
  for (const file of graph.keys()) visit(file, []);
  assertEquals(cycles, []);
});

Deno.test("no file of src/ is over 650 lines", async () => {
  const long = [];
  for (const file of graph.keys()) {
    const text = await Deno.readTextFile(new URL(`../${file}`, import.meta.url));
    const lines = text.split("\n").length - 1;
    if (lines > 650) long.push(`${file}: ${lines} lines`);
  }
  assertEquals(long, []);
});
