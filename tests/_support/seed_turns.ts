// The Python harel store's commits on request (tests/_support/seed_turns.py: boto3, the seed's
// algorithm), one process for a whole test: commits interleaved with this module's, and seqs
// reserved by commits that never land.

/** One Python writer process; `await using` stops it. */
export class SeedTurns implements AsyncDisposable {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncIterator<string>;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(endpoint: string, region = "us-east-1") {
    this.#child = new Deno.Command("python3", {
      args: [new URL("./seed_turns.py", import.meta.url).pathname, endpoint, region],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.#lines = lines(this.#child.stdout)[Symbol.asyncIterator]();
  }

  /** One command, answered in turn (commands from concurrent callers go one at a time). */
  #ask<T>(command: Record<string, unknown>): Promise<T> {
    const answer = this.#queue.then(async () => {
      await this.#writer.write(new TextEncoder().encode(JSON.stringify(command) + "\n"));
      const { value, done } = await this.#lines.next();
      if (done) throw new Error("seed_turns.py stopped");
      const parsed = JSON.parse(value) as T & { error?: string };
      if (parsed.error) throw new Error(`seed_turns.py: ${parsed.error}`);
      return parsed as T;
    });
    this.#queue = answer.catch(() => undefined);
    return answer;
  }

  /** The Python store commits execution `id` (a new one if missing): its emits and timers. */
  commit(
    prefix: string,
    id: string,
    emits: (string | null)[],
    timers: [string, number][] = [],
  ): Promise<{ version: number; seqs: number[] }> {
    return this.#ask({ op: "commit", prefix, id, emits, timers });
  }

  /** `n` outbox seqs reserved by commits that never land. */
  lose(prefix: string, n: number): Promise<{ n: number }> {
    return this.#ask({ op: "lose", prefix, n });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#queue;
    await this.#writer.close();
    await this.#child.status;
  }
}

async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffer = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let at;
    while ((at = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, at);
      buffer = buffer.slice(at + 1);
    }
  }
}
