import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../../system/config';
import type { Logger } from '../../system/logger';
import { AppError } from '../lib/errors';

export interface RateHeaders {
  'RateLimit-Limit': string;
  'RateLimit-Remaining': string;
  'RateLimit-Reset': string;
}

/**
 * The request guards of the spec:
 * - failed credentials per client address: `limit` failures within `windowSeconds` refuse the address
 *   for `blockSeconds`, whatever credential comes next; a working credential clears that count, while a
 *   daily cap per address never resets on success (one valid token cannot launder guesses);
 * - 600 requests a minute per personal access token.
 * With REDIS_URL the counters are shared by every API process; otherwise they live in this process.
 */
export interface Guards {
  /** Throws 429 (with Retry-After) while the address is refused. */
  assertAddressAllowed(address: string): Promise<void>;
  /** Counts a credential that does not work. */
  recordFailure(address: string): Promise<void>;
  /** A working credential clears the consecutive count (not the daily cap). */
  recordSuccess(address: string): Promise<void>;
  /** Counts a token request; throws 429 beyond the ceiling. Returns the RateLimit-* headers. */
  consumeTokenRequest(tokenId: string): Promise<RateHeaders>;
  close(): Promise<void>;
}

export async function createGuards(config: Config, logger: Logger, prefix = 'vc'): Promise<Guards> {
  const fc = config.failedCredentials;
  let redis: Redis | undefined;
  const make = (keyPrefix: string, points: number, duration: number): RateLimiterAbstract =>
    redis
      ? new RateLimiterRedis({ storeClient: redis, keyPrefix: `${prefix}:${keyPrefix}`, points, duration })
      : new RateLimiterMemory({ keyPrefix, points, duration });
  if (config.redisUrl) {
    redis = new Redis(config.redisUrl, { enableOfflineQueue: true, maxRetriesPerRequest: 2, lazyConnect: false });
    redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error (rate limits)'));
  }
  const failures = make('fail', fc.limit, fc.windowSeconds);
  const daily = make('fail-day', fc.dailyCap, 86_400);
  const tokens = make('token', config.rateLimit.perMinute, 60);

  const refuse = (ms: number) =>
    new AppError(
      429,
      'rate_limited',
      'Too many failed credentials from this address; wait before trying again',
      undefined,
      undefined,
      { 'Retry-After': String(Math.max(1, Math.ceil(ms / 1000))) },
    );

  return {
    async assertAddressAllowed(address) {
      const [f, d] = await Promise.all([failures.get(address), daily.get(address)]);
      if (f && f.consumedPoints >= fc.limit) throw refuse(f.msBeforeNext);
      if (d && d.consumedPoints >= fc.dailyCap) throw refuse(d.msBeforeNext);
    },
    async recordFailure(address) {
      const swallow = (e: unknown) => {
        if (!(e instanceof RateLimiterRes)) throw e;
      };
      const f = await failures.consume(address).catch(swallow);
      await daily.consume(address).catch(swallow);
      // The limit-th failure refuses the address for blockSeconds from now.
      if (f && f.consumedPoints >= fc.limit) await failures.block(address, fc.blockSeconds);
    },
    async recordSuccess(address) {
      await failures.delete(address);
    },
    async consumeTokenRequest(tokenId) {
      const limit = config.rateLimit.perMinute;
      try {
        const r = await tokens.consume(tokenId);
        return {
          'RateLimit-Limit': String(limit),
          'RateLimit-Remaining': String(r.remainingPoints),
          'RateLimit-Reset': String(Math.ceil(r.msBeforeNext / 1000)),
        };
      } catch (e) {
        if (!(e instanceof RateLimiterRes)) throw e;
        const reset = String(Math.max(1, Math.ceil(e.msBeforeNext / 1000)));
        throw new AppError(429, 'rate_limited', `More than ${limit} requests a minute with this token; wait and repeat the request unchanged`, undefined, undefined, {
          'Retry-After': reset,
          'RateLimit-Limit': String(limit),
          'RateLimit-Remaining': '0',
          'RateLimit-Reset': reset,
        });
      }
    },
    async close() {
      if (redis) await redis.quit().catch(() => redis?.disconnect());
    },
  };
}
