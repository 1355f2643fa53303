// Runs tests/_support/seed_writer.py (python3 + boto3): rows committed exactly as the Python harel
// store (the seed) commits them, into the tables of a prefix, and what it wrote.

/** What {@linkcode seedWrite} asks the Python writer to commit. */
export interface SeedWriteOptions {
  /** The DynamoDB endpoint. */
  endpoint: string;
  /** The tables' prefix (`{prefix}_executions`, ...). */
  prefix: string;
  /** Executions to insert. @default {1} */
  executions?: number;
  /** Commits of each execution after its insert, each with a dedupe mark. @default {1} */
  commits?: number;
  /** Outbox rows per commit (even ones to `target-{i}`, odd ones to no target). @default {0} */
  emits?: number;
  /** Spawn rows per commit. @default {0} */
  spawns?: number;
  /** Timer schedules per commit (paths `main.timer{k}`, `fireInSeconds` and k seconds ahead). @default {0} */
  timers?: number;
  /**
   * The events' `created_time`, this many seconds before now, ISO as Python's `isoformat()`
   * writes a UTC datetime. @default {undefined} (`created_time` null)
   */
  createdAgoSeconds?: number;
  /** When the timers fire, seconds from now (plus k for path `main.timer{k}`). @default {3600} */
  fireInSeconds?: number;
  /** Every emit to a target of its own, none to the outside world. @default {false} */
  targetsApart?: boolean;
  /** Create the seed's seven tables first (keys only, no index); existing ones are fine. @default {false} */
  ensureTables?: boolean;
  /** The region (another DynamoDB Local database, see `ownRegion`). @default {$AWS_REGION or us-east-1} */
  region?: string;
}

/** What the Python writer committed. */
export interface SeedWrites {
  /** Each execution and the version it ended at. */
  executions: { id: string; version: number }[];
  /** The outbox rows, in seq order per commit. */
  outbox: { seq: number; targetId: string | null; eventId: string }[];
  /** The spawn rows. */
  spawns: { seq: number; parentId: string; childId: string }[];
  /** The timers left scheduled (a later schedule of a path replaces it). */
  timers: { executionId: string; path: string; fireAt: number }[];
  /** The dedupe marks. */
  processed: { executionId: string; eventId: string }[];
}

/** The writer's stdout, in the seed's snake_case. */
interface RawWrites {
  executions: { id: string; version: number }[];
  outbox: { seq: number; target_id: string | null; event_id: string }[];
  spawns: { seq: number; parent_id: string; child_id: string }[];
  timers: { execution_id: string; path: string; fire_at: number }[];
  processed: { execution_id: string; event_id: string }[];
}

const SCRIPT = new URL("./seed_writer.py", import.meta.url).pathname;

/** Runs the Python seed writer with `options`; throws with its stderr when it fails. */
export async function seedWrite(options: SeedWriteOptions): Promise<SeedWrites> {
  const args = [SCRIPT, "--endpoint", options.endpoint, "--prefix", options.prefix];
  for (const name of ["executions", "commits", "emits", "spawns", "timers"] as const) {
    const value = options[name];
    if (value !== undefined) args.push(`--${name}`, String(value));
  }
  if (options.ensureTables) args.push("--ensure-tables");
  if (options.targetsApart) args.push("--targets-apart");
  if (options.createdAgoSeconds !== undefined) {
    args.push("--created-ago", String(options.createdAgoSeconds));
  }
  if (options.fireInSeconds !== undefined) args.push("--fire-in", String(options.fireInSeconds));
  const { code, stdout, stderr } = await new Deno.Command("python3", {
    args,
    ...options.region === undefined ? {} : { env: { AWS_REGION: options.region } },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (code !== 0) {
    throw new Error(`seed_writer.py exited with ${code}:\n${new TextDecoder().decode(stderr)}`);
  }
  const raw = JSON.parse(new TextDecoder().decode(stdout)) as RawWrites;
  return {
    executions: raw.executions,
    outbox: raw.outbox.map((o) => ({
      seq: o.seq,
      targetId: o.target_id,
      eventId: o.event_id,
    })),
    spawns: raw.spawns.map((s) => ({
      seq: s.seq,
      parentId: s.parent_id,
      childId: s.child_id,
    })),
    timers: raw.timers.map((t) => ({
      executionId: t.execution_id,
      path: t.path,
      fireAt: t.fire_at,
    })),
    processed: raw.processed.map((p) => ({
      executionId: p.execution_id,
      eventId: p.event_id,
    })),
  };
}
