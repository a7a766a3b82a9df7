/**
 * How the edge learns of `cdn/clear` purges and proves it applied them. Each edge registers itself in
 * `edge_instances`; on the `vc_edge` notification of `cdn_purges`, and every CHECK_MS in case one was lost,
 * it reads the purges it has not applied, drops the matching entries, and writes the last one applied
 * (which also says it is alive). A `cdn_clear` task succeeds once every live edge has applied its purge.
 *
 * An edge that cannot check in (its database connection is down) serves nothing from its cache after
 * FRESH_MS, well before the tasks stop waiting for it (EDGE_GONE_SECONDS): it cannot know what was purged.
 * A new edge starts with an empty cache, so every purge made before it started is applied by definition;
 * a cache that outlived its control plane (Varnish) says which purge it applied last, and the new follower
 * applies those after it before the cache serves again. A purger with `suspend` is also told at FRESH_MS,
 * for a cache that cannot ask `fresh()` on every request.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import {
  EDGE_GONE_SECONDS,
  edgeCheckedIn,
  lastPurgeSeq,
  purgesAfter,
  registerEdge,
  unregisterEdge,
} from '../db/queries/cdn';

/**
 * What holds the cached answers: Varnish (edge/cdn/bans.ts). Only `purge` is
 * required; the rest is for a cache that outlives the control plane and is told when it may serve.
 */
export interface Purger {
  /** Drops the environment's entries under the prefixes (none: all of them). */
  purge(environmentId: string, prefixes: string[]): unknown;
  /**
   * The last purge applied to what the cache holds when the follower starts, when it holds entries from
   * before (an adopted Varnish); null: it holds nothing a purge made before now could have missed.
   */
  resumeFrom?(): Promise<number | null>;
  /** Records the last purge applied (for a successor that adopts the cache). */
  applied?(seq: number): Promise<void>;
  /** The follower lost track of purges: nothing may be served from the cache until `resume`. */
  suspend?(): Promise<void>;
  /** The follower is up to date: the cache may serve. */
  resume?(): Promise<void>;
}

const CHECK_MS = 2000;
const FRESH_MS = 10_000;
if (FRESH_MS >= EDGE_GONE_SECONDS * 1000)
  throw new Error('an edge must stop serving its cache before it counts as gone');

export class PurgeFollower {
  private seq = 0;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private suspended = false;

  /**
   * `edge`: the edge's row (its data plane's id and name, edge/edge-id.ts; default: a row of its own), which
   * `close` leaves to its owner unless `unregister`.
   */
  constructor(
    private readonly knex: Knex,
    private readonly cache: Purger,
    private readonly onError: (err: Error) => void = () => undefined,
    private readonly edge: { id: string; name: string | null; unregister: boolean } = {
      id: randomUUID(),
      name: null,
      unregister: true,
    },
  ) {}

  get id(): string {
    return this.edge.id;
  }

  async start(): Promise<void> {
    const began = performance.now();
    const latest = await lastPurgeSeq(this.knex);
    this.seq = Math.min(latest, (await this.cache.resumeFrom?.()) ?? latest);
    await registerEdge(this.knex, this.id, this.seq, this.edge.name);
    this.checkedAt = began;
    if (this.seq < latest || this.cache.applied) await this.check();
    await this.cache.resume?.();
    this.timer = setInterval(() => this.tick(), CHECK_MS);
    this.timer.unref();
  }

  private tick(): void {
    if (!this.fresh() && this.cache.suspend && !this.suspended) {
      this.suspended = true;
      void this.cache.suspend().catch((err) => this.onError(err));
    }
    void this.check().catch((err) => this.onError(err));
  }

  /** Whether the cache may be used: the last check in is recent enough that no purge can have been missed. */
  fresh(): boolean {
    return performance.now() - this.checkedAt < FRESH_MS;
  }

  /** Applies the purges not applied yet and checks in; concurrent calls share one run (and run once more). */
  check(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        const began = performance.now();
        for (const p of await purgesAfter(this.knex, this.seq)) {
          await this.cache.purge(p.environment_id, p.prefixes);
          this.seq = p.id;
        }
        await this.cache.applied?.(this.seq);
        await edgeCheckedIn(this.knex, this.id, this.seq);
        this.checkedAt = began;
        if (this.suspended) {
          await this.cache.resume?.();
          this.suspended = false;
        }
      } while (this.again);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
    if (this.edge.unregister) await unregisterEdge(this.knex, this.id).catch(() => undefined);
  }
}
