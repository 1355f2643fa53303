// The CLI's bulk delete (#25): `delete --status S --before DATE [--definition D] --yes`, with
// progress on stderr (done so far, rate) at most once a second, and Ctrl-C stopping between
// batches (a run again continues where it stopped).
import type { DynamoDBStore } from "../execution/execution_store.ts";
import type { DeleteExecutionsOptions, DeleteProgress } from "../core/operator_types.ts";
import { planBulkDelete } from "../execution/_listing.ts";
import { FINISHED } from "../execution/_retention.ts";
import { CliError, parseBefore, parseStatuses, usage, UsageError, type Values } from "./_args.ts";

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

/** Runs the bulk delete, printing progress to `err`; the result to `out` (JSON with `json`). */
export async function runBulkDelete(
  store: DynamoDBStore,
  options: DeleteExecutionsOptions,
  json: boolean,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<void> {
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  Deno.addSignalListener("SIGINT", interrupt);
  let last: DeleteProgress = { deleted: 0, examined: 0, elapsedMs: 0 };
  let printed = -Infinity; // the first batch's line, then one a second
  const line = (p: DeleteProgress) =>
    `${p.deleted} deleted, ${p.examined} examined, ${
      (p.deleted / Math.max(p.elapsedMs / 1000, 0.001)).toFixed(1)
    }/s`;
  let deleted: number;
  try {
    deleted = await store.deleteExecutions({
      ...options,
      signal: stop.signal,
      onProgress: (progress) => {
        last = progress;
        if (progress.elapsedMs - printed >= 1000) {
          printed = progress.elapsedMs;
          err(`deleting: ${line(progress)}`);
        }
      },
    });
  } finally {
    Deno.removeSignalListener("SIGINT", interrupt);
  }
  const seconds = Number((last.elapsedMs / 1000).toFixed(3));
  if (stop.signal.aborted) {
    throw new CliError(
      `interrupted after ${deleted} deleted (${last.examined} examined): run the same command ` +
        "again to continue",
    );
  }
  if (json) {
    out(JSON.stringify({ deleted, examined: last.examined, seconds }, null, 2));
    return;
  }
  out(
    `deleted ${deleted} executions (${last.examined} examined) in ${seconds} s; their outbox ` +
      "entries and spawns stay",
  );
}
