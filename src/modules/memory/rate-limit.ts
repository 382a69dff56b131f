import type { FastifyRequest } from 'fastify';
import { agentOf } from '../../http/auth';
import { ApiError } from '../../http/errors';
import { RateLimiterError, type RateLimiter } from '../../infra/limits';

/**
 * preValidation hook: at most `perMinute` requests per agent per minute across every route of a
 * module (`scope`: memory, commons; the message names it).
 * When the limiter's store (Redis) is down the request goes through (logged): memory stays
 * available, and the monthly caps, which live in the database, still hold.
 */
export function memoryRateLimit(limiter: RateLimiter, perMinute: number, scope = 'memory', upgradeUrl?: string) {
  return async (request: FastifyRequest) => {
    if (perMinute <= 0) return;
    const { agentId } = agentOf(request);
    let d;
    try {
      d = await limiter.hit(`${scope}:${agentId}`, perMinute, 60_000);
    } catch (e) {
      if (e instanceof RateLimiterError) {
        request.log.warn({ err: e }, 'rate limiter unavailable; request allowed');
        return;
      }
      throw e;
    }
    if (!d.allowed) {
      throw new ApiError(429, 'RATE_LIMIT_EXCEEDED', `At most ${perMinute} ${scope} requests per minute; retry in ${d.retryAfterSeconds} s`, {
        retry_after_seconds: d.retryAfterSeconds, limit_per_minute: perMinute, ...(upgradeUrl ? { upgrade_url: upgradeUrl } : {}),
      }, { 'retry-after': String(d.retryAfterSeconds), 'x-ratelimit-limit': String(perMinute), 'x-ratelimit-remaining': '0' });
    }
  };
}
