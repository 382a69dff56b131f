import type { Redis } from 'ioredis';
import { lazyModule } from '../../lib/lazy-module';

const ioredis = lazyModule<typeof import('ioredis')>('ioredis');
import type { Clock } from '../../lib/clock';
import { decide, RateLimiterError, type RateDecision, type RateLimiter } from './types';

// One round trip: count the hit and give the window's key a lifetime on its first hit.
const HIT = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

/** Counters in Redis, shared by every instance pointing at the same server. */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;

  constructor(url: string, private readonly clock: Clock, private readonly prefix = 'svc:rl:', commandTimeoutMs = 500) {
    // Fail fast rather than queueing hits while Redis is away: the caller decides what a failure means.
    // The command timeout covers a Redis that keeps the connection open and stops answering (a
    // partition, a paused server): without it a hit, and the request behind it, would wait for good.
    this.redis = new (ioredis().Redis)(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false, commandTimeout: commandTimeoutMs });
    this.redis.on('error', () => {});
    this.redis.defineCommand('svcHit', { numberOfKeys: 1, lua: HIT });
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const now = this.clock.now();
    const start = now - (now % windowMs);
    const redisKey = `${this.prefix}${windowMs}:${start}:${key}`;
    let count: number;
    try {
      count = Number(await (this.redis as unknown as { svcHit(k: string, ttl: number): Promise<number> }).svcHit(redisKey, windowMs + 1000));
    } catch (e) {
      throw new RateLimiterError(`rate limiter store unavailable: ${(e as Error).message}`, { cause: e });
    }
    return decide(count, limit, start, windowMs, now);
  }

  storeStatus(): 'ok' | 'unavailable' {
    return this.redis.status === 'ready' ? 'ok' : 'unavailable';
  }

  /** Resolves once connected (or rejects after `timeoutMs`); hits before then fail fast. */
  async ready(timeoutMs = 2000): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new RateLimiterError('Redis did not become ready')), timeoutMs);
      this.redis.once('ready', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
