/**
 * The edge's CDN cache (CONTRACT "The edge"): GET and HEAD 200 answers whose Cache-Control has `public`
 * (for its s-maxage, else max-age, else the environment's default TTL), never `private`, `no-store`,
 * `no-cache`, `Vary: *` or with Set-Cookie. Kept in memory only, bounded in bytes (least recently used
 * entries go first), so an edge that starts has nothing cached and a purge can never be missed across a
 * restart. One entry per environment, path with query, and the values of the request headers the answer
 * varies on (Accept-Encoding, ...); HEAD is served from the GET entry.
 */
import type http from 'node:http';
import { parse as parseCacheControl } from '@tusbar/cache-control';
import { LRUCache } from 'lru-cache';

export interface CachedAnswer {
  status: number;
  statusMessage: string;
  /** The upstream's headers as forwarded (flat name, value list), without Content-Length. */
  headers: string[];
  /** The same, parsed (lower-case names), for compression decisions. */
  parsed: http.IncomingHttpHeaders;
  body: Buffer;
  /** Date.now() when stored, for `Age`. */
  storedAt: number;
}

/** An answer larger than this is passed on but not kept. */
export const MAX_ENTRY_BYTES = 8 * 1024 * 1024;
/** Purges remembered per environment, to refuse storing answers fetched before a purge that came meanwhile. */
const PURGES_KEPT = 64;

/**
 * How many seconds the answer may be served from the cache, or null when it must not be kept.
 * `defaultTtl` applies to a `public` answer that gives neither s-maxage nor max-age.
 */
export function cacheLifetime(status: number, headers: http.IncomingHttpHeaders, defaultTtl: number): number | null {
  if (status !== 200 || headers['set-cookie'] !== undefined) return null;
  if (String(headers.vary ?? '').includes('*')) return null;
  const raw = headers['cache-control'];
  if (!raw) return null;
  const cc = parseCacheControl(Array.isArray(raw) ? raw.join(', ') : raw);
  if (!cc.public || cc.private || cc.noStore || cc.noCache) return null;
  const ttl = cc.sharedMaxAge ?? cc.maxAge ?? defaultTtl;
  return ttl > 0 ? ttl : null;
}

function matches(prefixes: string[], url: string): boolean {
  return prefixes.length === 0 || prefixes.some((p) => url.startsWith(p));
}

/** What a request reads before going upstream, to store the answer when it comes. */
export interface PendingStore {
  environmentId: string;
  url: string;
  defaultTtl: number;
  /** The purge generation when the request went upstream. */
  generation: number;
}

export class CdnCache {
  private readonly entries: LRUCache<string, CachedAnswer>;
  /** base key (environment and URL) -> the request header names its answer varies on. */
  private readonly varies = new LRUCache<string, string[]>({ max: 100_000 });
  /** Purges applied, counted: an answer fetched before a purge that matches it is not stored. */
  private generation = 0;
  /** The generation of the last clear(): nothing fetched before it is stored. */
  private cleared = 0;
  private readonly purges = new Map<string, { recent: Array<{ gen: number; prefixes: string[] }>; forgot: number }>();

  constructor(maxBytes = 128 * 1024 * 1024) {
    this.entries = new LRUCache<string, CachedAnswer>({
      maxSize: maxBytes,
      maxEntrySize: MAX_ENTRY_BYTES + 64 * 1024,
      sizeCalculation: (a, key) => a.body.length + key.length + 64 + a.headers.reduce((n, h) => n + h.length, 0),
      ttlAutopurge: false,
    });
  }

  private static base(environmentId: string, url: string): string {
    return `${environmentId} ${url}`;
  }

  private static variant(base: string, names: string[], req: http.IncomingMessage): string {
    if (names.length === 0) return base;
    let key = base;
    for (const name of names) {
      const v = req.headers[name];
      key += `\n${name}=${(Array.isArray(v) ? v.join(',') : (v ?? '')).trim()}`;
    }
    return key;
  }

  /** The fresh entry for this request, if any. */
  lookup(environmentId: string, req: http.IncomingMessage): CachedAnswer | undefined {
    const base = CdnCache.base(environmentId, req.url ?? '/');
    const names = this.varies.get(base);
    if (names === undefined) return undefined;
    return this.entries.get(CdnCache.variant(base, names, req));
  }

  begin(environmentId: string, req: http.IncomingMessage, defaultTtl: number): PendingStore {
    return { environmentId, url: req.url ?? '/', defaultTtl, generation: this.generation };
  }

  /** Keeps the answer, unless a purge matching it was applied since its request went upstream. */
  store(p: PendingStore, req: http.IncomingMessage, answer: CachedAnswer, ttlSeconds: number): boolean {
    if (p.generation < this.cleared) return false;
    const log = this.purges.get(p.environmentId);
    if (log) {
      if (p.generation < log.forgot) return false;
      if (log.recent.some((x) => x.gen > p.generation && matches(x.prefixes, p.url))) return false;
    }
    const base = CdnCache.base(p.environmentId, p.url);
    const names = String(answer.parsed.vary ?? '')
      .split(',')
      .map((n) => n.trim().toLowerCase())
      .filter(Boolean)
      .sort();
    const before = this.varies.get(base);
    if (before && before.join() !== names.join()) this.dropBase(base);
    this.varies.set(base, names);
    this.entries.set(CdnCache.variant(base, names, req), answer, { ttl: ttlSeconds * 1000 });
    return this.entries.has(CdnCache.variant(base, names, req));
  }

  private dropBase(base: string): void {
    for (const key of [...this.entries.keys()])
      if (key === base || key.startsWith(`${base}\n`)) this.entries.delete(key);
  }

  /**
   * Keeps a cacheable GET answer once it has arrived whole (not when it is larger than an entry may be, nor
   * when `fresh()` says the edge may have missed a purge meanwhile).
   */
  keep(
    pending: PendingStore,
    req: http.IncomingMessage,
    up: http.IncomingMessage,
    headers: string[],
    ttl: number,
    fresh: () => boolean,
  ): void {
    const chunks: Buffer[] = [];
    let size = 0;
    const collect = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ENTRY_BYTES) {
        chunks.length = 0;
        up.off('data', collect);
      } else chunks.push(chunk);
    };
    up.on('data', collect);
    up.on('end', () => {
      if (size > MAX_ENTRY_BYTES || !fresh()) return;
      const stored = headers.filter((_, i, all) => all[i - (i % 2)].toLowerCase() !== 'content-length');
      const answer = {
        status: 200,
        statusMessage: up.statusMessage ?? 'OK',
        headers: stored,
        parsed: up.headers,
        body: Buffer.concat(chunks),
        storedAt: Date.now(),
      };
      this.store(pending, req, answer, ttl);
    });
  }

  /** Drops the environment's entries under the prefixes (none: all of them). */
  purge(environmentId: string, prefixes: string[]): number {
    this.generation += 1;
    let log = this.purges.get(environmentId);
    if (!log) this.purges.set(environmentId, (log = { recent: [], forgot: 0 }));
    log.recent.push({ gen: this.generation, prefixes });
    if (log.recent.length > PURGES_KEPT) log.forgot = log.recent.shift()!.gen;
    const start = `${environmentId} `;
    let dropped = 0;
    for (const key of [...this.entries.keys()]) {
      if (!key.startsWith(start)) continue;
      const url = key.slice(start.length).split('\n', 1)[0];
      if (matches(prefixes, url) && this.entries.delete(key)) dropped += 1;
    }
    return dropped;
  }

  /** Drops everything (the edge lost track of purges for too long). */
  clear(): void {
    this.generation += 1;
    this.cleared = this.generation;
    this.entries.clear();
    this.varies.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
