// The import statements of mod.ts and src/, as a graph: tests/architecture_test.ts checks the
// dependency rules on it, and `deno run --allow-read tests/_support/import_graph.ts` prints the
// figures the layout is judged by (files, imports, layers, the largest files).

/** One import or re-export: the file it names (relative to the root, or the bare specifier). */
export interface ImportEdge {
  /** The importing file, e.g. `src/core/errors.ts`. */
  from: string;
  /** The imported file (`src/core/_answer.ts`) or package (`@aws-sdk/client-dynamodb`). */
  to: string;
  /** Whether only types are imported, so nothing of `to` runs. */
  typeOnly: boolean;
}

/** Each file's imports, keyed by the file's path relative to the root. */
export type ImportGraph = Map<string, ImportEdge[]>;

const IMPORT =
  /^\s*(import|export)\s+(type\s+)?((?:[\w$]+\s*,\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?|[\w$]+))\s+from\s+"([^"]+)"\s*;?|^\s*import\s+"([^"]+)"\s*;?/gm;

function isTypeOnly(typeKeyword: string | undefined, clause: string): boolean {
  if (typeKeyword) return true;
  const names = clause.trim();
  if (!/^\{[^}]*\}$/.test(names)) return false;
  const parts = names.slice(1, -1).split(",").map((s) => s.trim()).filter(Boolean);
  return parts.length > 0 && parts.every((s) => s.startsWith("type "));
}

/** Reads the imports of `mod.ts` and every `.ts` file below `src/` of `root`. */
export async function importGraph(root: URL): Promise<ImportGraph> {
  const files = ["mod.ts"];
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(new URL(dir, root))) {
      const path = `${dir}${entry.name}`;
      if (entry.isDirectory) await walk(`${path}/`);
      else if (path.endsWith(".ts")) files.push(path);
    }
  };
  await walk("src/");
  const graph: ImportGraph = new Map();
  for (const file of files.sort()) {
    const url = new URL(file, root);
    const edges: ImportEdge[] = [];
    for (const m of (await Deno.readTextFile(url)).matchAll(IMPORT)) {
      const specifier = m[4] ?? m[5]!;
      const to = specifier.startsWith(".")
        ? new URL(specifier, url).href.slice(root.href.length)
        : specifier.replace(/^npm:/, "");
      edges.push({ from: file, to, typeOnly: isTypeOnly(m[2], m[3] ?? "") });
    }
    graph.set(file, edges);
  }
  return graph;
}

/** The longest chain of imports between files of the graph, counted in files. */
export function layers(graph: ImportGraph): number {
  const depth = new Map<string, number>();
  const visit = (file: string, path: Set<string>): number => {
    const known = depth.get(file);
    if (known !== undefined) return known;
    if (path.has(file)) return 0;
    path.add(file);
    let deepest = 0;
    for (const edge of graph.get(file) ?? []) {
      if (graph.has(edge.to)) deepest = Math.max(deepest, visit(edge.to, path));
    }
    path.delete(file);
    depth.set(file, deepest + 1);
    return deepest + 1;
  };
  return Math.max(...[...graph.keys()].map((file) => visit(file, new Set())));
}

if (import.meta.main) {
  const root = new URL("../../", import.meta.url);
  const graph = await importGraph(root);
  const sizes = await Promise.all(
    [...graph.keys()].map(async (file) => ({
      file,
      lines: (await Deno.readTextFile(new URL(file, root))).split("\n").length - 1,
    })),
  );
  const src = [...graph.keys()].filter((file) => file.startsWith("src/"));
  const edges = [...graph.values()].flat();
  console.log(`files in src/: ${src.length}`);
  console.log(`import statements (mod.ts and src/): ${edges.length}`);
  console.log(`  of which between files of src/: ${edges.filter((e) => graph.has(e.to)).length}`);
  console.log(`layers (longest import chain, in files): ${layers(graph)}`);
  console.log("largest files:");
  for (const { file, lines } of sizes.sort((a, b) => b.lines - a.lines).slice(0, 8)) {
    console.log(`  ${String(lines).padStart(5)} ${file}`);
  }
}
