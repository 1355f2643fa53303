// Progress for a long `deno test` run: `scripts/with_dynamodb.ts --progress` passes the run's
// output through a TestProgress, which numbers each test file as it starts
// ("[12/80 · 2m05s] running 3 tests from ./tests/x_test.ts"; in a `deno test --parallel` run,
// which prints each test as it ends, the first result of each file) and, while a test runs long
// without printing, says which test that is (every 10 s, after a minute every minute; in a
// parallel run, how long no test ended). Everything else goes through untouched.

/** How often a heartbeat line is printed while a test runs without output (its first minute). */
export const HEARTBEAT_MS = 10_000;

/** What a TestProgress needs: the number of test files, where to write, and a clock. */
export interface TestProgressOptions {
  /** The test files of the run (the N of `[i/N]`). */
  total: number;
  /** Writes text to the terminal (or the log). */
  write: (text: string) => void;
  /** Milliseconds, for the elapsed times. @default {Date.now} */
  now?: () => number;
  /** The quiet time after which a heartbeat is printed, and then between two of them. */
  heartbeatMs?: number;
}

// deno test's pretty reporter colours its lines; the matching ignores the colours.
// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;
const plain = (text: string) => text.replace(ANSI, "");

/** How long the start of a line is held back at most, waiting for its end. */
const HELD_MS = 1000;

/**
 * Whether `text`, the start of a line, may be the start of a parallel run's result line
 * (`./tests/x_test.ts => name ... ok (1s)`): a path still being written, or one followed by `=>`.
 */
function mayStartResult(text: string): boolean {
  return /^[./]\S*$/.test(text) || /^\S+\.[cm]?[jt]sx? => /.test(text);
}

/** `2m05s`, `40s`: an elapsed time as a person reads it. */
export function elapsed(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes}m${String(seconds % 60).padStart(2, "0")}s` : `${seconds}s`;
}

/** Annotates `deno test`'s output as it streams: feed it the output, tick it every second. */
export class TestProgress {
  readonly #total: number;
  readonly #write: (text: string) => void;
  readonly #now: () => number;
  readonly #heartbeatMs: number;
  readonly #started: number;
  #files = 0;
  #file: string | null = null;
  /** The files numbered so far (by `deno test --parallel`'s `./file.ts => name ...` lines). */
  readonly #seen = new Set<string>();
  /** The start of a line that may be a parallel run's result line, held until it ends. */
  #held = "";
  /** Whether the output is `deno test --parallel`'s: whole lines, each naming its file. */
  #parallel = false;
  /** The unfinished line on the terminal (a test that has started: `name ...`), as written. */
  #line = "";
  #lineStarted = 0;
  /** A heartbeat broke #line: the next output of that line writes it again first. */
  #broken = false;
  /** Tests and steps that have started and not ended (`name ...` lines), by indentation. */
  #open: { indent: number; name: string }[] = [];
  #lastOutput: number;
  /** The running time the last heartbeat announced (10 s, 20 s, ...); 0 after any output. */
  #lastMark = 0;

  constructor(options: TestProgressOptions) {
    this.#total = options.total;
    this.#write = options.write;
    this.#now = options.now ?? Date.now;
    this.#heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
    this.#started = this.#now();
    this.#lastOutput = this.#started;
  }

  /** Passes a chunk of the run's output on, numbering the lines that start a test file. */
  feed(chunk: string): void {
    const now = this.#now();
    this.#lastOutput = now;
    this.#lastMark = 0;
    let rest = chunk;
    while (rest.length > 0) {
      const end = rest.indexOf("\n");
      let piece = end === -1 ? rest : rest.slice(0, end + 1);
      rest = rest.slice(piece.length);
      piece = this.#held + piece;
      this.#held = "";
      // A parallel run's result line cut by the pipe is numbered only when whole: hold its start.
      if (this.#line === "" && !piece.endsWith("\n") && mayStartResult(plain(piece))) {
        this.#held = piece;
        continue;
      }
      if (this.#broken) {
        this.#write(this.#line);
        this.#broken = false;
      }
      const complete = piece.endsWith("\n");
      if (this.#line === "" && complete) {
        this.#write(this.#header(piece) ?? piece);
      } else this.#write(piece);
      if (this.#line === "") this.#lineStarted = now;
      this.#line += piece;
      if (complete) {
        this.#track(plain(this.#line).slice(0, -1));
        this.#line = "";
      }
    }
  }

  /**
   * Prints a heartbeat when nothing was printed for a while: which test runs, for how long;
   * every 10 s for its first minute, then every minute (a test slowed by a crowded machine
   * can run for ten).
   */
  tick(): void {
    const now = this.#now();
    if (this.#held !== "" && now - this.#lastOutput >= HELD_MS) {
      // Not a result line after all (or one that never ended): on as it is.
      this.#write(this.#held);
      [this.#line, this.#lineStarted, this.#held] = [this.#held, this.#lastOutput, ""];
    }
    const running = plain(this.#line).match(/^(\s*)(.*) \.\.\.\s*$/);
    const since = running ? this.#lineStarted : this.#lastOutput;
    const beat = now - since < 6 * this.#heartbeatMs ? this.#heartbeatMs : 6 * this.#heartbeatMs;
    const mark = Math.floor((now - since) / beat) * beat;
    if (now - this.#lastOutput < this.#heartbeatMs || mark <= this.#lastMark) return;
    this.#lastMark = mark;
    const names = running
      ? [...this.#within(running[1]!.length).map((t) => t.name), running[2]!]
      : this.#open.map((t) => t.name);
    const what = this.#file === null
      ? "loading the test files"
      : this.#parallel && !running
      ? `no test ended for ${elapsed(now - since)} (the last: ${this.#file})`
      : names.length > 0
      ? `still running ${names.join(" › ")} (${elapsed(now - since)}, ${this.#file})`
      : `still in ${this.#file}, no output for ${elapsed(now - since)}`;
    if (this.#line !== "" && !this.#broken) {
      this.#write("\n");
      this.#broken = true;
    }
    this.#write(`${this.#stamp(now)} ${what}\n`);
  }

  #stamp(now: number): string {
    return `[${this.#files}/${this.#total} · ${elapsed(now - this.#started)}]`;
  }

  /**
   * `running 3 tests from ./tests/x_test.ts` with its number and the time so far; in a parallel
   * run, which prints each test as it ends (`./tests/x_test.ts => name ... ok`), the first line
   * of each file.
   */
  #header(line: string): string | null {
    const text = plain(line);
    const parallel = text.match(/^(\S+\.[cm]?[jt]sx?) => /);
    if (parallel) {
      this.#parallel = true;
      this.#file = parallel[1]!;
      if (this.#seen.has(this.#file)) return null;
      this.#seen.add(this.#file);
      this.#files++;
      return `${this.#stamp(this.#now())} ${line}`;
    }
    const match = text.match(/^running \d+ tests? from (\S+)/);
    if (!match) return null;
    this.#parallel = false;
    this.#files++;
    this.#file = match[1]!;
    this.#open = [];
    return `${this.#stamp(this.#now())} ${line}`;
  }

  /** Keeps the list of open tests and steps: `name ...` opens one, `name ... ok (1s)` ends it. */
  #track(line: string): void {
    const match = line.match(/^(\s*)(.*?) \.\.\.(.*)$/);
    if (!match) return;
    const indent = match[1]!.length;
    this.#open = this.#within(indent);
    if (match[3]!.trim() === "") this.#open.push({ indent, name: match[2]! });
  }

  #within(indent: number): { indent: number; name: string }[] {
    return this.#open.filter((t) => t.indent < indent);
  }
}

/** Deno's rule for a test module: `*_test.ts`, `*.test.ts` or `test.ts` (and the JS kinds). */
export function isTestFile(name: string): boolean {
  return /(^|[._])test\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/.test(name);
}

/**
 * How many test files `deno test ARGS` runs: the paths among its arguments (files, or folders
 * walked as Deno walks them, hidden folders and node_modules left out), or the current folder.
 */
export function countTestFiles(args: string[], cwd = Deno.cwd()): number {
  return testFiles(args, cwd).length;
}

/** The test files `deno test ARGS` runs (see {@linkcode countTestFiles}), as absolute paths. */
export function testFiles(args: string[], cwd = Deno.cwd()): string[] {
  const end = args.indexOf("--");
  const paths = (end === -1 ? args : args.slice(0, end))
    .filter((arg) => !arg.startsWith("-"))
    .map((arg) => (arg.startsWith("/") ? arg : `${cwd}/${arg}`).replace(/\/+$/, ""))
    .filter((path) => {
      try {
        Deno.statSync(path);
        return true;
      } catch {
        return false; // a flag's value (--filter NAME), not a path
      }
    });
  const files: string[] = [];
  const walk = (path: string) => {
    const stat = Deno.statSync(path);
    if (stat.isFile) {
      files.push(path);
      return;
    }
    for (const entry of Deno.readDirSync(path)) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      if (entry.isDirectory) walk(`${path}/${entry.name}`);
      else if (entry.isFile && isTestFile(entry.name)) files.push(`${path}/${entry.name}`);
    }
  };
  for (const path of paths.length > 0 ? paths : [cwd]) walk(path);
  return [...new Set(files)]; // a file named twice (tests/ and tests/core/) runs once
}
