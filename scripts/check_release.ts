// Checks what can be checked here of a release that only GitHub can run:
//   deno run --allow-read --allow-env=LOG_TOKENS,LOG_STREAM scripts/check_release.ts
//     (deno task check runs this; npm:yaml reads those two debug switches)
//   ... scripts/check_release.ts --tag v0.2.0 (the publish job, on its tag)
// The workflow parses as YAML and keeps its shape (pull requests: the checks, the tests and a
// publish dry run; a version tag: the same, then `deno publish` with id-token: write), its tag
// pattern matches the version in deno.json, and CHANGELOG.md has that version and [Unreleased].
// npm:yaml parses the workflow: Deno has no YAML parser and jsr:@std/yaml is not reachable here.
import { parseDocument } from "yaml";

/** The files a release check reads, as text (absent: `null`). */
export interface ReleaseFiles {
  workflow: string | null;
  denoJson: string;
  changelog: string | null;
  ciRun?: string | null;
}

const WORKFLOW = ".github/workflows/publish.yml";

type Job = {
  if?: string;
  needs?: string | string[];
  permissions?: Record<string, string> | string;
  steps?: { run?: string; uses?: string; with?: Record<string, unknown> }[];
};

/**
 * Whether a GitHub Actions filter pattern (`*`, `**`, `?`, `+`, `[...]`) matches `name`, as
 * `on.push.tags` patterns are matched.
 */
export function matchesFilter(pattern: string, name: string): boolean {
  let regex = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*" && pattern[i + 1] === "*") {
      regex += ".*";
      i++;
    } else if (c === "*") regex += "[^/]*";
    else if (c === "?" || c === "+") regex += c; // zero or one / one or more of the previous
    else if (c === "[") {
      const end = pattern.indexOf("]", i);
      regex += end === -1 ? "\\[" : pattern.slice(i, end + 1);
      if (end !== -1) i = end;
    } else regex += c.replace(/[.^$|(){}\\/]/g, "\\$&");
  }
  return new RegExp(`^${regex}$`).test(name);
}

/** Every problem of a release setup; empty when it is sound. */
export function releaseProblems(files: ReleaseFiles, tag?: string): string[] {
  const problems: string[] = [];
  const fail = (message: string) => problems.push(message);

  const deno = JSON.parse(files.denoJson) as { name?: string; version?: string };
  const version = deno.version ?? "";
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) {
    fail(`deno.json: "version" must be semver (X.Y.Z), got ${JSON.stringify(deno.version)}`);
  }
  if (deno.name !== "@harel/dynamodb") fail(`deno.json: "name" is ${JSON.stringify(deno.name)}`);
  if (tag !== undefined && tag !== `v${version}`) {
    fail(`the tag ${tag} is not v + the version in deno.json (v${version}): bump deno.json first`);
  }

  // The workflow.
  if (files.workflow === null) {
    fail(`${WORKFLOW} is missing`);
  } else {
    const doc = parseDocument(files.workflow, { uniqueKeys: true });
    for (const error of [...doc.errors, ...doc.warnings]) fail(`${WORKFLOW}: ${error.message}`);
    const flow = (doc.errors.length ? {} : doc.toJS() ?? {}) as {
      on?: { pull_request?: unknown; push?: { tags?: string[] } };
      permissions?: Record<string, string>;
      jobs?: Record<string, Job>;
    };
    const on = flow.on ?? {};
    if (!("pull_request" in on)) fail(`${WORKFLOW}: on.pull_request is missing`);
    const tags = on.push?.tags ?? [];
    if (tags.length === 0) fail(`${WORKFLOW}: on.push.tags is missing`);
    else if (!tags.some((pattern) => matchesFilter(pattern, `v${version}`))) {
      fail(`${WORKFLOW}: no on.push.tags pattern (${tags.join(", ")}) matches v${version}`);
    } else if (tags.some((pattern) => matchesFilter(pattern, "main"))) {
      fail(`${WORKFLOW}: a tag pattern (${tags.join(", ")}) matches more than version tags`);
    }
    if (flow.permissions?.["id-token"] === "write") {
      fail(`${WORKFLOW}: id-token: write belongs to the publish job only, not the whole workflow`);
    }
    const jobs = Object.entries(flow.jobs ?? {});
    const runs = (job: Job) => (job.steps ?? []).map((step) => step.run ?? "").join("\n");
    const onTagsOnly = (job: Job) => /refs\/tags\//.test(job.if ?? "");
    const check = jobs.find(([, job]) => !onTagsOnly(job));
    if (!check) {
      fail(`${WORKFLOW}: no job runs on pull requests`);
    } else {
      for (const command of ["deno task check", "deno task test", "deno publish --dry-run"]) {
        if (!runs(check[1]).includes(command)) {
          fail(`${WORKFLOW}: job ${check[0]} does not run \`${command}\``);
        }
      }
    }
    const publish = jobs.find(([, job]) => /^deno publish\s*$/m.test(runs(job)));
    if (!publish) {
      fail(`${WORKFLOW}: no job runs \`deno publish\``);
    } else {
      const [name, job] = publish;
      if (!onTagsOnly(job)) fail(`${WORKFLOW}: job ${name} publishes without an if on tags`);
      const permissions = typeof job.permissions === "object" ? job.permissions : {};
      if (permissions["id-token"] !== "write") {
        fail(`${WORKFLOW}: job ${name} needs permissions: id-token: write (provenance)`);
      }
      const needs = [job.needs ?? []].flat();
      if (check && !needs.includes(check[0])) {
        fail(`${WORKFLOW}: job ${name} must need ${check[0]} (publish only what passed)`);
      }
      if (!/scripts\/check_release\.ts --tag/.test(runs(job))) {
        fail(`${WORKFLOW}: job ${name} does not check the tag against deno.json`);
      }
    }
    // The Deno of the workflow is the Deno of .ci/run.
    const ciDeno = files.ciRun?.match(/\^deno (\d+)\\\.(\d+)\\\./);
    if (ciDeno) {
      for (const [name, job] of jobs) {
        for (const step of job.steps ?? []) {
          if (!step.uses?.startsWith("denoland/setup-deno")) continue;
          const wanted = `v${ciDeno[1]}.${ciDeno[2]}.x`;
          if (step.with?.["deno-version"] !== wanted) {
            fail(
              `${WORKFLOW}: job ${name} sets up Deno ${
                step.with?.["deno-version"]
              }, .ci/run ${wanted}`,
            );
          }
        }
      }
    }
  }

  // The CHANGELOG.
  if (files.changelog === null) {
    fail("CHANGELOG.md is missing");
  } else {
    const headings = [...files.changelog.matchAll(/^## \[([^\]]+)\](.*)$/gm)];
    if (headings[0]?.[1] !== "Unreleased") {
      fail("CHANGELOG.md: the first section is not [Unreleased]");
    }
    const released = headings.slice(1);
    const mine = released.find((h) => h[1] === version);
    if (!mine) fail(`CHANGELOG.md: no section ## [${version}] for deno.json's version`);
    else if (!/^ - \d{4}-\d{2}-\d{2}$/.test(mine[2]!)) {
      fail(`CHANGELOG.md: ## [${version}] needs its date: "## [${version}] - YYYY-MM-DD"`);
    }
    for (const [, name] of headings) {
      if (!new RegExp(`^\\[${name!.replace(/[.]/g, "\\.")}\\]: \\S+`, "m").test(files.changelog)) {
        fail(`CHANGELOG.md: no link reference [${name}]: at the bottom`);
      }
    }
    const order = released.map((h) => h[1]!.split(/[.-]/).slice(0, 3).map(Number));
    for (let i = 1; i < order.length; i++) {
      const [a, b] = [order[i - 1]!, order[i]!];
      const newer = a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
      if (!(newer > 0)) {
        fail(`CHANGELOG.md: ${released[i - 1]![1]} is not newer than ${released[i]![1]}`);
      }
    }
  }
  return problems;
}

function read(root: URL, path: string): string | null {
  try {
    return Deno.readTextFileSync(new URL(path, root));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

if (import.meta.main) {
  const root = new URL("../", import.meta.url);
  const at = Deno.args.indexOf("--tag");
  const tag = at === -1 ? undefined : Deno.args[at + 1];
  const problems = releaseProblems({
    workflow: read(root, WORKFLOW),
    denoJson: read(root, "deno.json")!,
    changelog: read(root, "CHANGELOG.md"),
    ciRun: read(root, ".ci/run"),
  }, tag);
  for (const problem of problems) console.error(`release: ${problem}`);
  if (problems.length) Deno.exit(1);
  const { version } = JSON.parse(read(root, "deno.json")!);
  console.error(
    `release: ${WORKFLOW} parses, its tags match v${version}, CHANGELOG.md has [${version}]` +
      (tag ? `; ${tag} is deno.json's version` : ""),
  );
}
