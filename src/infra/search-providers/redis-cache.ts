/**
 * Search cache in Redis, so every instance reuses an answer any instance fetched. Values are
 * JSON under SET ... EX. Redis trouble must never fail a search: errors and timeouts become a
 * miss (get) or a skipped write (set) and are reported to `onError` for logging. The client is
 * built to fail fast (short command timeout, no offline queue) rather than hold requests while
 * Redis is away.
 */
import type { Redis } from 'ioredis';
import { lazyModule } from '../../lib/lazy-module';

const ioredis = lazyModule<typeof import('ioredis')>('ioredis');
import type { SearchCache } from './cache';

export interface RedisSearchCacheOptions {
  /** Called with each swallowed Redis error (e.g. log at warn). */
  onError?: (err: unknown) => void;
  /** Checks a value read back from Redis; a failed check is a miss. */
  validate?: (v: unknown) => boolean;
}

/** An ioredis client suited to a cache: fail fast, reconnect in the background. */
export function createCacheRedisClient(url: string): Redis {
  return new (ioredis().Redis)(url, {
    lazyConnect: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 200, 5000),
  });
}

export class RedisSearchCache<T> implements SearchCache<T> {
  constructor(private readonly redis: Redis, private readonly opts: RedisSearchCacheOptions = {}) {}

  async get(key: string): Promise<T | undefined> {
    try {
      const raw = await this.redis.get(key);
      if (raw === null) return undefined;
      const v: unknown = JSON.parse(raw);
      if (this.opts.validate && !this.opts.validate(v)) return undefined;
      return v as T;
    } catch (err) {
      this.opts.onError?.(err);
      return undefined;
    }
  }

  async set(key: string, value: T, ttlSeconds: number): Promise<void> {
    if (!(ttlSeconds > 0)) return;
    try {
      await this.redis.set(key, JSON.stringify(value), 'EX', Math.ceil(ttlSeconds));
    } catch (err) {
      this.opts.onError?.(err);
    }
  }
}
