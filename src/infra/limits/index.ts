/**
 * Rate limits: `hit(key, limit, windowMs)` → allowed, Retry-After seconds, remaining. In-process by
 * default; Redis-backed when REDIS_URL is set, so a limit holds across instances. See docs/memory.md.
 */
import type { Clock } from '../../lib/clock';
import { InProcessRateLimiter } from './in-process';
import { RedisRateLimiter } from './redis';
import type { RateLimiter } from './types';

export { InProcessRateLimiter } from './in-process';
export { RedisRateLimiter } from './redis';
export { RateLimiterError, type RateDecision, type RateLimiter } from './types';

export function createRateLimiter(opts: { redisUrl?: string; clock: Clock }): RateLimiter {
  return opts.redisUrl ? new RedisRateLimiter(opts.redisUrl, opts.clock) : new InProcessRateLimiter(opts.clock);
}
