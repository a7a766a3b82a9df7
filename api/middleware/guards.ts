import { isIPv6 } from 'node:net';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../../system/config';
import type { Logger } from '../../system/logger';
import { appError, errors } from '../../core/errors';
import type { CreationKind, Guards } from '../../system/guards';

/**
 * The key an address is counted under: IPv4 (also IPv4-mapped IPv6) as is; IPv6 by its /64 prefix,
 * since one subscriber usually holds a whole /64 and could otherwise rotate through addresses.
 */
function addressKey(address: string): string {
  const a = address.trim().toLowerCase().replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return mapped[1];
  if (!isIPv6(a)) return a;
  const [head, tail = ''] = a.split('::');
  const left = head ? head.split(':') : [];
  const right = a.includes('::') && tail ? tail.split(':') : [];
  const groups = a.includes('::')
    ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => (g.includes('.') ? g : String(parseInt(g, 16).toString(16))))
    .join(':')}::/64`;
}

const limited = (e: unknown): RateLimiterRes => {
  if (e instanceof RateLimiterRes) return e;
  throw e;
};

/** The request guards (system/guards.ts), refusing with the API's 429 rate_limited. */
export async function createGuards(config: Config, logger: Logger, prefix = config.rateLimit.prefix): Promise<Guards> {
  const fc = config.failedCredentials;
  let redis: Redis | undefined;
  if (config.redisUrl) {
    redis = new Redis(config.redisUrl, { enableOfflineQueue: true, maxRetriesPerRequest: 2, lazyConnect: false });
    redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error (rate limits)'));
    const ready = redis;
    // Wait (briefly) for the connection, so the first requests already share the counters.
    await new Promise<void>((resolve) => {
      if (ready.status === 'ready') return resolve();
      const timer = setTimeout(() => {
        logger.warn('redis not ready after 3 s; rate limits use this process until it is');
        resolve();
      }, 3000);
      ready.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  const make = (name: string, points: number, duration: number): RateLimiterAbstract => {
    const memory = new RateLimiterMemory({ keyPrefix: `${prefix}:${name}`, points, duration });
    if (!redis) return memory;
    return new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${prefix}:${name}`,
      points,
      duration,
      rejectIfRedisNotReady: true,
      insuranceLimiter: memory,
    });
  };
  const failures = make('fail', fc.limit, fc.windowSeconds);
  const daily = make('fail-day', fc.dailyCap, 86_400);
  const tokens = make('token', config.rateLimit.perMinute, 60);
  const creations: Record<CreationKind, { limiter: RateLimiterAbstract; perHour: number; what: string }> = {
    invitations: {
      limiter: make('invitations', config.creationLimits.invitationsPerHour, 3600),
      perHour: config.creationLimits.invitationsPerHour,
      what: 'invitations',
    },
    'device-codes': {
      limiter: make('device-codes', config.creationLimits.deviceCodesPerHour, 3600),
      perHour: config.creationLimits.deviceCodesPerHour,
      what: 'command-line sign-ins started',
    },
  };

  const refuse = (ms: number) =>
    appError('rate_limited', 'Too many failed credentials from this address; wait before trying again', {
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(ms / 1000))) },
    });

  return {
    async assertAddressAllowed(address) {
      const key = addressKey(address);
      const [f, d] = await Promise.all([failures.get(key), daily.get(key)]);
      const waits: number[] = [];
      if (f && f.consumedPoints >= fc.limit) waits.push(f.msBeforeNext);
      if (d && d.consumedPoints >= fc.dailyCap) waits.push(d.msBeforeNext);
      if (waits.length > 0) throw refuse(Math.max(...waits));
      return { failures: f?.consumedPoints ?? 0 };
    },
    async recordFailure(address) {
      const key = addressKey(address);
      const [f] = await Promise.all([failures.consume(key).catch(limited), daily.consume(key).catch(limited)]);
      // The limit-th failure (or any beyond it, from requests in flight) refuses the address for
      // blockSeconds from now.
      if (f.consumedPoints >= fc.limit) await failures.block(key, fc.blockSeconds);
    },
    async recordSuccess(address) {
      await failures.delete(addressKey(address));
    },
    async consumeTokenRequest(tokenId) {
      const limit = config.rateLimit.perMinute;
      try {
        const r = await tokens.consume(tokenId);
        return {
          'RateLimit-Limit': String(limit),
          'RateLimit-Remaining': String(r.remainingPoints),
          'RateLimit-Reset': String(Math.max(1, Math.ceil(r.msBeforeNext / 1000))),
        };
      } catch (e) {
        const res = limited(e);
        const reset = String(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
        throw appError(
          'rate_limited',
          `More than ${limit} requests a minute with this token; wait and repeat the request unchanged`,
          {
            headers: {
              'Retry-After': reset,
              'RateLimit-Limit': String(limit),
              'RateLimit-Remaining': '0',
              'RateLimit-Reset': reset,
            },
          },
        );
      }
    },
    async consumeCreation(kind, address) {
      const { limiter, perHour, what } = creations[kind];
      try {
        await limiter.consume(addressKey(address));
      } catch (e) {
        const res = limited(e);
        throw errors.rateLimited(
          res.msBeforeNext / 1000,
          `More than ${perHour} ${what} an hour from this address; wait before trying again`,
        );
      }
    },
    async close() {
      if (redis) await redis.quit().catch(() => redis?.disconnect());
    },
  };
}
