/**
 * A per-window counter of hits: "at most `limit` hits per `windowMs` for this key". Fixed windows
 * aligned on multiples of windowMs of the injected clock, so every instance sharing a store agrees
 * on where a window starts. Generic: memory, parse and replay limits use it with their own keys.
 */
export interface RateDecision {
  allowed: boolean;
  /** Seconds until the current window ends (at least 1); what to send as Retry-After when refused. */
  retryAfterSeconds: number;
  /** Hits left in this window after this one (0 when refused). */
  remaining: number;
}

export interface RateLimiter {
  /** Counts one hit for `key` and says whether it is within `limit` per `windowMs`. */
  hit(key: string, limit: number, windowMs: number): Promise<RateDecision>;
  /** Where the counters live and whether it answers now: 'in-process', or Redis 'ok' / 'unavailable' (no round trip). */
  storeStatus(): 'in-process' | 'ok' | 'unavailable';
  close(): Promise<void>;
}

/** The store behind the limiter did not answer (Redis down). Callers choose to fail open or closed. */
export class RateLimiterError extends Error {
  readonly code = 'RATE_LIMITER_UNAVAILABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RateLimiterError';
  }
}

export function decide(count: number, limit: number, windowStart: number, windowMs: number, now: number): RateDecision {
  const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000));
  return { allowed: count <= limit, retryAfterSeconds, remaining: Math.max(0, limit - count) };
}
