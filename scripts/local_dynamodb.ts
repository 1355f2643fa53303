// Brings up a DynamoDB for tests and benchmarks: $DYNAMODB_ENDPOINT, else LocalStack in
// Docker, else DynamoDB Local on Java 11+. Used by with_dynamodb.ts and by tests that
// need their own DynamoDB Local (restarts).
import { ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { buildClient, retryUntilReachable } from "../src/dynamo/connect.ts";

/** The npm package that ships DynamoDB Local in its `emulator/` folder, pinned. */
export const SIMULATOR_PACKAGE = "amplify-dynamodb-simulator@2.9.30";
/** sha256 of `emulator/DynamoDBLocal.jar` in that package (DynamoDB Local 1.25.1). */
export const JAR_SHA256 = "454305e9bc3e6ebcca5b62569869e31563b8d7e346474e94557b2600702146c7";
const LOCALSTACK_IMAGE = "localstack/localstack";

/** A running DynamoDB and how to stop what this script started. */
export interface RunningDynamoDB {
  endpoint: string;
  /** "endpoint" (given), "localstack" or "dynamodb-local". */
  kind: string;
  stop(): Promise<void>;
}

function log(line: string): void {
  console.error(`[dynamodb] ${line}`);
}

async function run(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const { success, stdout, stderr } = await new Deno.Command(cmd, {
      args,
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
    }).output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return { ok: success, out: decode(stdout) + decode(stderr) };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { ok: false, out: `${cmd}: not found` };
    throw error;
  }
}

/** Java's major version, or null when no `java` is on the PATH. */
async function javaMajor(): Promise<number | null> {
  const { ok, out } = await run("java", ["-version"]);
  if (!ok) return null;
  const match = out.match(/version "(\d+)(?:\.(\d+))?/);
  if (!match) return null;
  const major = Number(match[1]);
  return major === 1 ? Number(match[2]) : major; // "1.8.0" is Java 8
}

async function dockerAnswers(): Promise<boolean> {
  return (await run("docker", ["info", "--format", "{{.ServerVersion}}"])).ok;
}

/** A free TCP port on the loopback interface. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

function cacheRoot(): string {
  const explicit = Deno.env.get("HAREL_DYNAMODB_CACHE");
  if (explicit) return explicit;
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  const home = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE");
  if (!xdg && !home) throw new Error("cannot find a cache directory: set HAREL_DYNAMODB_CACHE");
  return `${xdg ?? `${home}/.cache`}/harel-dynamodb`;
}

async function sha256(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return new Uint8Array(digest).toHex();
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * The folder holding DynamoDBLocal.jar, fetched with `npm pack` into the user's
 * cache on first use and checked against the pinned sha256 on every use.
 */
export async function dynamoDBLocalDir(): Promise<string> {
  const root = cacheRoot();
  const dir = `${root}/${SIMULATOR_PACKAGE.replace("@", "-")}/emulator`;
  if (await exists(`${dir}/DynamoDBLocal.jar`)) {
    if (await sha256(`${dir}/DynamoDBLocal.jar`) === JAR_SHA256) return dir;
    log(`cached jar in ${dir} fails its sha256 check; fetching it again`);
    await Deno.remove(dir, { recursive: true });
  }
  await Deno.mkdir(root, { recursive: true });
  const work = await Deno.makeTempDir({ dir: root, prefix: "fetch-" });
  try {
    log(`first run: fetching DynamoDB Local (${SIMULATOR_PACKAGE}, ~57 MB) with npm pack...`);
    const started = Date.now();
    const pack = await run("npm", ["pack", SIMULATOR_PACKAGE, "--pack-destination", work]);
    if (!pack.ok) throw new Error(`npm pack ${SIMULATOR_PACKAGE} failed:\n${pack.out}`);
    const tarball = [...Deno.readDirSync(work)].find((e) => e.name.endsWith(".tgz"));
    if (!tarball) throw new Error(`npm pack ${SIMULATOR_PACKAGE} wrote no tarball`);
    log(`unpacking emulator/ (${((Date.now() - started) / 1000).toFixed(1)} s so far)...`);
    const untar = await run("tar", [
      "xzf",
      `${work}/${tarball.name}`,
      "-C",
      work,
      "package/emulator",
    ]);
    if (!untar.ok) throw new Error(`unpacking ${tarball.name} failed:\n${untar.out}`);
    const actual = await sha256(`${work}/package/emulator/DynamoDBLocal.jar`);
    if (actual !== JAR_SHA256) {
      throw new Error(
        `DynamoDBLocal.jar sha256 is ${actual}, expected ${JAR_SHA256}; not using it`,
      );
    }
    await Deno.mkdir(`${dir}/..`, { recursive: true });
    try {
      await Deno.rename(`${work}/package/emulator`, dir);
    } catch (error) {
      // Another run unpacked it at the same time: theirs is as good as ours.
      if (!(await exists(`${dir}/DynamoDBLocal.jar`))) throw error;
    }
    log(`cached in ${dir} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    return dir;
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/** Waits until the endpoint answers a real call (ListTables), printing progress while it waits. */
export async function waitUntilAnswers(endpoint: string, deadlineMs = 90_000): Promise<void> {
  const client = buildClient({ endpoint });
  const progress = setInterval(() => log(`waiting for ${endpoint} to answer...`), 5_000);
  try {
    await retryUntilReachable(() => client.send(new ListTablesCommand({ Limit: 1 })), {
      endpoint,
      deadlineMs,
      backoff: { minDelayMs: 50, maxDelayMs: 500 },
    });
  } finally {
    clearInterval(progress);
    client.destroy();
  }
}

/** Options for {@linkcode startDynamoDBLocal}. */
export interface DynamoDBLocalOptions {
  /** The loopback port; a free one when absent. */
  port?: number;
  /** A data directory (`-dbPath`) instead of `-inMemory`, to survive restarts. */
  dbPath?: string;
  /** Options for the JVM, before `-jar` (e.g. {@linkcode SUITE_JVM_OPTIONS}). */
  javaOptions?: readonly string[];
}

/**
 * The JVM options of the test suite's DynamoDB Local: its client code only (no C2 compiler) and
 * the serial collector. The suite is bound by the CPU of two cores, and a run of about ten
 * minutes never earns back C2's compiling: four heavy test files on one emulator took 78 s of
 * java's CPU instead of 96 s, the conformance file alone 19 s instead of 40 s. The bench keeps
 * the JVM's defaults (a long steady load, the figures of docs/performance.md).
 */
export const SUITE_JVM_OPTIONS: readonly string[] = [
  "-XX:TieredStopAtLevel=1",
  "-XX:+UseSerialGC",
];

/** Starts DynamoDB Local from the cached jar and waits until it answers. */
export async function startDynamoDBLocal(
  options: DynamoDBLocalOptions = {},
): Promise<RunningDynamoDB & { process: Deno.ChildProcess; port: number }> {
  const dir = await dynamoDBLocalDir();
  const port = options.port ?? freePort();
  const storage = options.dbPath ? ["-dbPath", options.dbPath] : ["-inMemory"];
  const process = new Deno.Command("java", {
    args: [
      ...options.javaOptions ?? [],
      `-Djava.library.path=${dir}/DynamoDBLocal_lib`,
      "-jar",
      `${dir}/DynamoDBLocal.jar`,
      ...storage,
      "-disableTelemetry",
      "-port",
      String(port),
    ],
    cwd: dir,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const endpoint = `http://127.0.0.1:${port}`;
  // Drained all along, so java never blocks on a full pipe and a failed start can show it.
  let stderr = "";
  const drained = process.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (stderr = (stderr + chunk).slice(-4000)) }),
  ).catch(() => {});
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      process.kill("SIGTERM");
    } catch { /* already gone */ }
    const killer = setTimeout(() => {
      try {
        process.kill("SIGKILL");
      } catch { /* already gone */ }
    }, 5_000);
    await process.status;
    clearTimeout(killer);
    await drained;
  };
  const exited = process.status.then((s) => {
    if (!stopped) throw new Error(`DynamoDB Local exited early with code ${s.code}`);
  });
  try {
    await Promise.race([waitUntilAnswers(endpoint), exited]);
  } catch (error) {
    await stop();
    throw new Error(
      `DynamoDB Local did not come up on ${endpoint}${stderr ? `:\n${stderr}` : ""}`,
      {
        cause: error,
      },
    );
  }
  return { endpoint, kind: "dynamodb-local", stop, process, port };
}

async function startLocalStack(): Promise<RunningDynamoDB> {
  const port = freePort();
  log(`starting LocalStack (${LOCALSTACK_IMAGE}) on port ${port}...`);
  const started = await run("docker", [
    "run",
    "-d",
    "--rm",
    "-p",
    `127.0.0.1:${port}:4566`,
    "-e",
    "SERVICES=dynamodb",
    LOCALSTACK_IMAGE,
  ]);
  if (!started.ok) throw new Error(`docker run ${LOCALSTACK_IMAGE} failed:\n${started.out}`);
  const container = started.out.trim().split("\n").at(-1)!;
  const stop = async () => {
    await run("docker", ["rm", "-f", container]);
  };
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitUntilAnswers(endpoint, 180_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { endpoint, kind: "localstack", stop };
}

/**
 * Brings up a DynamoDB: `$DYNAMODB_ENDPOINT` as it is, else LocalStack when a
 * Docker engine answers, else DynamoDB Local when Java 11+ is on the PATH.
 */
export async function bringUpDynamoDB(
  options: Pick<DynamoDBLocalOptions, "javaOptions"> = {},
): Promise<RunningDynamoDB> {
  const given = Deno.env.get("DYNAMODB_ENDPOINT");
  if (given) {
    await waitUntilAnswers(given);
    return { endpoint: given, kind: "endpoint", stop: async () => {} };
  }
  if (await dockerAnswers()) return await startLocalStack();
  const java = await javaMajor();
  if (java !== null && java >= 11) return await startDynamoDBLocal(options);
  throw new Error(
    [
      "no DynamoDB to test against. Do one of:",
      "  - set DYNAMODB_ENDPOINT to a running DynamoDB (LocalStack, DynamoDB Local, or AWS),",
      "  - start a Docker engine (LocalStack will be run in it), or",
      `  - install Java 11 or newer (${
        java === null ? "no java on the PATH" : `found Java ${java}`
      }) so DynamoDB Local can run.`,
    ].join("\n"),
  );
}
