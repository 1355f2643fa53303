// The relay tables' feeds: one TableFeed per relay table, whose rounds adopt other writers' rows
// into the relay index (_adoption_handlers.ts). Every pass, sweep and read of a queue runs its
// table's round first, in the same call (nothing is kept in the instance); the pass offers the
// rows the round adopted, each read by key before anything is decided.
import type { Item } from "../../dynamo/_dynamo.ts";
import { withSignal } from "../../dynamo/_abortable.ts";
import type { RelayKind } from "../../core/types.ts";
import { RELAY } from "../../core/_layout.ts";
import { Lowest } from "../../core/_bounded.ts";
import { pendingPlace, placeOf, relayAttributes } from "../queue/_relay_index.ts";
import { byIndexOrder } from "../queue/_index_reads.ts";
import type { OutboxContext as QueueContext } from "../queue/_outbox_table.ts";
import { type FeedContext, type StreamsSender, TableFeed } from "./_table_feed.ts";
import { backfillPage, handleImages, isNoWork, newImages } from "./_adoption_handlers.ts";

/** What a relay feed's round reads and writes with: the queue's context too. */
interface RelayFeedContext extends FeedContext {
  readonly q: QueueContext;
}

/** The counters item of `kind`'s feed (its lease and checkpoint). */
export const feedId = (kind: RelayKind): string => `feed:${kind}`;

/** A store's side of the relay tables' feeds. */
export class RelayFeeds {
  readonly #feeds = new Map<RelayKind, TableFeed<RelayFeedContext>>();
  /** The callers waiting on a round of each kind: every row it adopts goes to each. */
  readonly #sinks = new Map<RelayKind, Set<Item[]>>();
  readonly #warned = new Set<string>();
  /** Whether the outbox's last round found a stream to read (false: no stream, no client). */
  #chaining = true;
  /** Whether the outbox's last round's one-off scan (or its settling) was under way. */
  #backfilling = false;

  constructor(build: () => StreamsSender | null) {
    for (const kind of RELAY_KINDS) {
      this.#sinks.set(kind, new Set());
      const sink = (rows: Item[]) => {
        for (const each of this.#sinks.get(kind)!) each.push(...rows);
      };
      this.#feeds.set(
        kind,
        new TableFeed<RelayFeedContext>({
          kind,
          table: kind,
          itemId: feedId(kind),
          streams: build,
          ignore: (record) => isNoWork(kind, record),
          handler: async (ctx, records, signal) => {
            const q = withSignal(ctx.q, signal); // a pass's signal stops the page's writes too
            const handled = await handleImages(q, kind, newImages(kind, records));
            sink(handled.adopted);
            return handled.writes;
          },
          backfill: async (ctx, start, signal) => {
            const page = await backfillPage(ctx.q, kind, start, signal);
            sink(page.handled.adopted);
            const { writes: handled, adopted } = page.handled;
            return { next: page.next, scanned: page.scanned, handled, adopted: adopted.length };
          },
          missed: `other writers' ${kind} rows wait for a round that succeeds`,
        }),
      );
    }
  }

  /**
   * A round of `kind`'s feed now (or the one running, shared): the rows it adopted, in index
   * order. What it fails with is said once per kind of error, never thrown: a pass goes on with
   * what the index shows.
   */
  async round(q: QueueContext, kind: RelayKind, signal?: AbortSignal): Promise<Item[]> {
    const found: Item[] = [];
    const sinks = this.#sinks.get(kind)!;
    sinks.add(found);
    try {
      const ctx = { client: q.client, tables: q.tables, now: q.now, q };
      const report = await this.#feeds.get(kind)!.round(ctx, { signal });
      if (kind === "outbox") {
        this.#chaining = report.skipped !== "off" && report.skipped !== "no stream";
        this.#backfilling = report.backfilling;
      }
    } catch (error) {
      this.#warnOnce(kind, error);
    } finally {
      sinks.delete(found);
    }
    return found.sort(byIndexOrder);
  }

  /**
   * An operator's view (the CLI): the `limit` lowest rows of `kind` the feed has not adopted yet,
   * read without the lease, nothing written.
   */
  async peek(q: QueueContext, kind: RelayKind, limit: number): Promise<Item[]> {
    const lowest = new Lowest<Item>(limit, byIndexOrder);
    const ctx = { client: q.client, tables: q.tables, now: q.now, q };
    await this.#feeds.get(kind)!.round(ctx, {
      readOnly: true,
      peek: (records) => {
        for (const row of newImages(kind, records)) {
          if (row[RELAY.part] !== undefined) continue; // the index shows it
          const place = placeOf(kind, row, 0);
          if (place !== null) lowest.offer({ ...row, ...relayAttributes(pendingPlace(kind, row)) });
        }
      },
    });
    return lowest.sorted();
  }

  /** Whether the outbox feed chains entries: then an entry not chained yet waits. */
  chaining(): boolean {
    return this.#chaining;
  }

  /**
   * Whether the outbox's last round was scanning for rows the stream never showed: then another
   * writer's entries wait, since what the scan finds next may come before them.
   */
  backfilling(): boolean {
    return this.#backfilling;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#feeds.values()].map((feed) => feed.close()));
  }

  #warnOnce(kind: RelayKind, error: unknown): void {
    const name = `${kind} ${error instanceof Error ? error.name : typeof error}`;
    if (this.#warned.has(name)) return;
    this.#warned.add(name);
    console.warn(
      `harel: the ${kind} feed's round failed (${String(error)}): other writers' ${kind} rows ` +
        "wait for a round that succeeds",
    );
  }
}

/** The relay tables, each with a feed. */
const RELAY_KINDS: readonly RelayKind[] = ["outbox", "spawns", "timers"];
