// The CLI's bulk deletes, retries and drops: progress on stderr, Ctrl-C stops, a rerun goes on.
import type { DynamoDBStore } from "../execution/execution_store.ts";
import type { DeleteExecutionsOptions, DeleteProgress } from "../core/operator_types.ts";
import { planBulkDelete } from "../execution/listing/_listing.ts";
import { FINISHED } from "../execution/commit/_retention.ts";
import { CliError, parseBefore, parseStatuses, usage, UsageError, type Values } from "./_args.ts";
import type { RelayKind } from "../core/relay_types.ts";
import { counted, DEAD_LETTERS } from "./_format.ts";

/** The options of a bulk delete from the command line, checked before anything is sent. */
export function bulkDeleteOptions(values: Values, json: boolean): DeleteExecutionsOptions {
  const status = parseStatuses(values.status);
  const updatedBefore = parseBefore(values.before);
  if (status === undefined || updatedBefore === undefined) {
    throw new UsageError(
      "delete takes an execution id, or --status S and --before DATE|EPOCH (with --yes): " +
        "every execution in S last committed before DATE",
    );
  }
  const options: DeleteExecutionsOptions = {
    status,
    updatedBefore,
    definitionId: values.definition as string | undefined,
    allowOpen: values["allow-open"] === true,
    scan: values.scan === true,
    includeUndated: values["include-undated"] === true,
  };
  const open = status.filter((s) => !FINISHED.has(s));
  if (open.length > 0 && !options.allowOpen) {
    throw new UsageError(
      `delete takes finished executions (${[...FINISHED].join(", ")}); ${open.join(", ")} ` +
        `${open.length > 1 ? "are" : "is"} open: add --allow-open to delete open ones too`,
    );
  }
  usage(() => planBulkDelete(options));
  if (values.yes !== true) {
    const what = `${status.join(", ")} executions${
      options.definitionId ? ` of ${JSON.stringify(options.definitionId)}` : ""
    } last committed before ${new Date(updatedBefore * 1000).toISOString()}`;
    throw new UsageError(
      `delete removes every one of the ${what}, with their timers, trace and dedupe marks, ` +
        `for good: run it again with --yes${json ? " (also with --json)" : ""}`,
    );
  }
  return options;
}

/** Runs `run`; Ctrl-C ends it in a CliError saying how far it got. `progress` once a second. */
async function interruptible<T>(
  err: (line: string) => void,
  run: (signal: AbortSignal, progress: (line: string) => void) => Promise<T>,
  sofar: () => string,
): Promise<T> {
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  Deno.addSignalListener("SIGINT", interrupt);
  let printed = -Infinity;
  const progress = (line: string) => {
    if (performance.now() - printed < 1000) return;
    printed = performance.now();
    err(line);
  };
  try {
    const result = await run(stop.signal, progress);
    if (!stop.signal.aborted) return result;
  } catch (error) {
    if (!stop.signal.aborted) throw error;
  } finally {
    Deno.removeSignalListener("SIGINT", interrupt);
  }
  throw new CliError(`interrupted after ${sofar()}: run the same command again to continue`);
}

/** Per second, as the progress lines print it. */
const rate = (n: number, ms: number) => (n / Math.max(ms / 1000, 0.001)).toFixed(1);

/** Runs the bulk delete, printing progress to `err`; the result to `out` (JSON with `json`). */
export async function runBulkDelete(
  store: DynamoDBStore,
  options: DeleteExecutionsOptions,
  json: boolean,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<void> {
  let last: DeleteProgress = { deleted: 0, examined: 0, elapsedMs: 0 };
  const deleted = await interruptible(err, (signal, progress) =>
    store.deleteExecutions({
      ...options,
      signal,
      onProgress: (p) => {
        last = p;
        progress(
          `deleting: ${p.deleted} deleted, ${p.examined} examined, ${
            rate(p.deleted, p.elapsedMs)
          }/s`,
        );
      },
    }), () => `${last.deleted} deleted (${last.examined} examined)`);
  const seconds = Number((last.elapsedMs / 1000).toFixed(3));
  if (json) return out(JSON.stringify({ deleted, examined: last.examined, seconds }, null, 2));
  out(
    `deleted ${deleted} executions (${last.examined} examined) in ${seconds} s; their outbox ` +
      "entries and spawns stay",
  );
}

/** What `retry KIND --all` / `drop KIND --all` act on: the kind, and (outbox) one target. */
export interface BulkDeadLetters {
  kind: RelayKind;
  action: "retry" | "drop";
  /** Outbox only: `--target T` (a string) or `--untargeted` (null); undefined: every target. */
  targetId?: string | null;
}

/** The options of a bulk retry or drop from the command line, checked before anything is sent. */
export function bulkDeadLetterOptions(
  action: "retry" | "drop",
  rest: string[],
  values: Values,
): BulkDeadLetters {
  const kind = rest[0];
  if (rest.length !== 1 || (kind !== "outbox" && kind !== "spawns" && kind !== "timers")) {
    throw new UsageError(
      `${action} --all takes a kind only (outbox, spawns or timers), got ${
        JSON.stringify(rest.join(" "))
      }`,
    );
  }
  const target = values.target as string | undefined;
  if (target !== undefined && values.untargeted === true) {
    throw new UsageError("--target T and --untargeted name different targets: give one");
  }
  if ((target !== undefined || values.untargeted === true) && kind !== "outbox") {
    throw new UsageError(`--target and --untargeted are for the outbox only, not ${kind}`);
  }
  if (target === "") throw new UsageError("--target needs a target id (--untargeted: none)");
  const targetId = values.untargeted === true ? null : target;
  if (values.yes !== true) {
    const which = targetId === undefined
      ? `every dead letter of ${kind}`
      : `every dead outbox entry to ${targetId === null ? "no target" : JSON.stringify(targetId)}`;
    throw new UsageError(
      `${action} --all ${action === "retry" ? "makes" : "deletes"} ${which}${
        action === "retry" ? " due again" : " for good"
      }: run it again with --yes (also with --json)`,
    );
  }
  return { kind, action, targetId };
}

/** Runs a bulk retry or drop, printing progress to `err` (at most once a second). */
export async function runBulkDeadLetters(
  store: DynamoDBStore,
  bulk: BulkDeadLetters,
  json: boolean,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<void> {
  const started = performance.now();
  const verb = bulk.action === "retry" ? "retried" : "dropped";
  let done = 0;
  done = await interruptible(err, (signal, progress) => {
    const options = {
      ...(bulk.targetId === undefined ? {} : { targetId: bulk.targetId }),
      signal,
      onProgress: (n: number) => {
        done = n;
        const doing = bulk.action === "retry" ? "retrying" : "dropping";
        progress(`${doing}: ${n} ${verb}, ${rate(n, performance.now() - started)}/s`);
      },
    };
    return bulk.action === "retry"
      ? store.retryDeadLetters(bulk.kind, options)
      : store.dropDeadLetters(bulk.kind, options);
  }, () => `${done} ${verb}`);
  const seconds = Number(((performance.now() - started) / 1000).toFixed(3));
  if (json) {
    return out(JSON.stringify({ kind: bulk.kind, action: bulk.action, done, seconds }, null, 2));
  }
  out(`${verb} ${counted(done, ...DEAD_LETTERS[bulk.kind])} in ${seconds} s`);
}
