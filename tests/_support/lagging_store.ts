// A store whose relay index lags its tables (through an index lag proxy of its own), and a
// bounded loop of passes, for the index lag suites (tests/relay/index_lag*_test.ts).
import { type CreateStoreOptions, DynamoDBStore } from "../../mod.ts";
import { IndexLagProxy, type IndexLagProxyOptions } from "./index_lag_proxy.ts";
import { directEndpoint, pause, uniqueName } from "./env.ts";

/** A lagging store, and fresh stores on its tables through the same proxy. */
export interface LaggingStore extends AsyncDisposable {
  store: DynamoDBStore;
  proxy: IndexLagProxy;
  /**
   * Runs `body` with a new store instance on the same tables, through the same proxy, and closes
   * it after: what a pass in a new isolate (a Deno Deploy cron invocation) starts from.
   */
  fresh<T>(body: (store: DynamoDBStore) => Promise<T>): Promise<T>;
}

/**
 * A store on fresh tables (or those of `prefix`, made beforehand) whose indexes lag `lag` ms
 * behind them (through a proxy of its own, given these options).
 */
export async function laggingStore(
  lag: number | IndexLagProxyOptions,
  options: Omit<CreateStoreOptions, "endpoint" | "prefix"> = {},
  prefix = uniqueName("lag"),
): Promise<LaggingStore> {
  const proxy = new IndexLagProxy(directEndpoint(), typeof lag === "number" ? { lagMs: lag } : lag);
  const store = await DynamoDBStore.create({ prefix, ...options, endpoint: proxy.endpoint });
  return {
    store,
    proxy,
    async fresh(body) {
      await using other = await DynamoDBStore.create({
        prefix,
        ...options,
        endpoint: proxy.endpoint,
        ensureTables: false,
      });
      return await body(other);
    },
    async [Symbol.asyncDispose]() {
      await store[Symbol.asyncDispose]();
      await proxy.close();
    },
  };
}

/**
 * Runs `pass` until `done()`; gives up (false) once twice the lag (plus 30 s) has gone by AND
 * three more passes have run since: a crowded machine's passes may take seconds each, so the
 * bound counts passes that had the index caught up, not how fast they ran. Between passes it
 * waits a tenth of the lag (at least 100 ms), so that many cases polling at once stay light.
 */
export async function passUntil(
  lagMs: number,
  pass: () => Promise<unknown>,
  done: () => boolean | Promise<boolean>,
): Promise<boolean> {
  const deadline = Date.now() + 2 * lagMs + 30_000;
  let late = 0; // passes begun past the deadline
  for (;;) {
    const began = Date.now();
    await pass();
    if (await done()) return true;
    if (began > deadline && ++late >= 3) return false;
    await pause(Math.max(100, lagMs / 10));
  }
}
