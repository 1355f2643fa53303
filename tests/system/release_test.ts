// The release check (scripts/check_release.ts, run by `deno task check`) passes on the
// repository as it is and names each way a release setup can go wrong: the workflow cannot run
// here, so this is what stands between a typo and a failed or unsigned publish.
import assert from "node:assert/strict";
import { matchesFilter, type ReleaseFiles, releaseProblems } from "../../scripts/check_release.ts";
import { readDoc, ROOT, run } from "../_support/markdown.ts";

const files: ReleaseFiles = {
  workflow: readDoc(".github/workflows/publish.yml"),
  denoJson: readDoc("deno.json"),
  changelog: readDoc("CHANGELOG.md"),
  ciRun: readDoc(".ci/run"),
};

function withVersion(version: string): string {
  return JSON.stringify({ ...JSON.parse(files.denoJson), version });
}

Deno.test("the release setup of the repository is sound, and deno task check runs its check", async () => {
  assert.deepEqual(releaseProblems(files), []);
  const { version } = JSON.parse(files.denoJson);
  assert.deepEqual(releaseProblems(files, `v${version}`), []);
  const tasks = JSON.parse(files.denoJson).tasks as Record<string, string>;
  assert.match(tasks.check!, /scripts\/check_release\.ts/);
  const { code, output } = await run("deno", [
    "run",
    "--allow-read",
    "--allow-env=LOG_TOKENS,LOG_STREAM",
    "scripts/check_release.ts",
    "--tag",
    "v9.9.9",
  ], { cwd: ROOT.pathname });
  assert.equal(code, 1, output);
  assert.match(output, /the tag v9\.9\.9 is not v \+ the version in deno\.json/);
});

Deno.test("the release check names what is wrong", async (t) => {
  const problems = (changes: Partial<ReleaseFiles>, tag?: string) =>
    releaseProblems({ ...files, ...changes }, tag).join("\n");
  const workflow = files.workflow!;

  await t.step("a workflow that does not parse", () => {
    assert.match(problems({ workflow: workflow + "\n  bad: [unclosed\n" }), /publish\.yml: /);
    assert.match(problems({ workflow: null }), /publish\.yml is missing/);
  });
  await t.step("a tag pattern that the version does not match", () => {
    assert.match(
      problems({ workflow: workflow.replace('"v*.*.*"', '"release-*"') }),
      /no on\.push\.tags pattern \(release-\*\) matches v0\.1\.0/,
    );
    assert.match(problems({ denoJson: withVersion("1.0") }), /"version" must be semver/);
  });
  await t.step("a publish job without provenance, or not gated on tags and checks", () => {
    assert.match(
      problems({ workflow: workflow.replace("id-token: write", "id-token: read") }),
      /needs permissions: id-token: write/,
    );
    assert.match(
      problems({
        workflow: workflow.replace("    if: startsWith(github.ref, 'refs/tags/v')\n", ""),
      }),
      /publishes without an if on tags|no job runs on pull requests/,
    );
    assert.match(
      problems({ workflow: workflow.replace("    needs: check\n", "") }),
      /must need check/,
    );
    assert.match(
      problems({ workflow: workflow.replace("      - run: deno publish --dry-run\n", "") }),
      /does not run `deno publish --dry-run`/,
    );
  });
  await t.step("a Deno other than .ci/run's", () => {
    assert.match(
      problems({ workflow: workflow.replaceAll("v2.9.x", "v2.8.x") }),
      /sets up Deno v2\.8\.x, \.ci\/run v2\.9\.x/,
    );
  });
  await t.step("a CHANGELOG without the version, [Unreleased] or a link", () => {
    const changelog = files.changelog!;
    assert.match(problems({ denoJson: withVersion("0.2.0") }), /no section ## \[0\.2\.0\]/);
    assert.match(
      problems({ changelog: changelog.replace("## [Unreleased]", "## Unreleased") }),
      /first section is not \[Unreleased\]/,
    );
    assert.match(
      problems({ changelog: changelog.replace(/^\[0\.1\.0\]: .*$/m, "") }),
      /no link reference \[0\.1\.0\]/,
    );
    assert.match(problems({ changelog: null }), /CHANGELOG\.md is missing/);
  });
});

Deno.test("tag patterns match as GitHub's filters do", () => {
  assert.ok(matchesFilter("v*.*.*", "v0.1.0"));
  assert.ok(matchesFilter("v*.*.*", "v10.20.30"));
  assert.ok(!matchesFilter("v*.*.*", "v0.1"));
  assert.ok(!matchesFilter("v*.*.*", "release-0.1.0"));
  assert.ok(matchesFilter("v[0-9]+.[0-9]+.[0-9]+", "v1.22.3"));
  assert.ok(matchesFilter("**", "a/b"));
  assert.ok(!matchesFilter("*", "a/b"));
});
