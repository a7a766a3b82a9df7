/**
 * How the edge learns of `cdn/clear` purges and proves it applied them. Each edge registers itself in
 * `edge_instances`; on the `vc_edge` notification of `cdn_purges`, and every CHECK_MS in case one was lost,
 * it reads the purges it has not applied, drops the matching entries, and writes the last one applied
 * (which also says it is alive). A `cdn_clear` task succeeds once every live edge has applied its purge.
 *
 * An edge that cannot check in (its database connection is down) serves nothing from its cache after
 * FRESH_MS, well before the tasks stop waiting for it (EDGE_GONE_SECONDS): it cannot know what was purged.
 * A new edge starts with an empty cache, so every purge made before it started is applied by definition.
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
import type { CdnCache } from './cache';

const CHECK_MS = 2000;
const FRESH_MS = 10_000;
if (FRESH_MS >= EDGE_GONE_SECONDS * 1000)
  throw new Error('an edge must stop serving its cache before it counts as gone');

export class PurgeFollower {
  readonly id = randomUUID();
  private seq = 0;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly knex: Knex,
    private readonly cache: CdnCache,
    private readonly onError: (err: Error) => void = () => undefined,
  ) {}

  async start(): Promise<void> {
    const began = performance.now();
    this.seq = await lastPurgeSeq(this.knex);
    await registerEdge(this.knex, this.id, this.seq);
    this.checkedAt = began;
    this.timer = setInterval(() => void this.check().catch((err) => this.onError(err)), CHECK_MS);
    this.timer.unref();
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
          this.cache.purge(p.environment_id, p.prefixes);
          this.seq = p.id;
        }
        await edgeCheckedIn(this.knex, this.id, this.seq);
        this.checkedAt = began;
      } while (this.again);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
    await unregisterEdge(this.knex, this.id).catch(() => undefined);
  }
}
