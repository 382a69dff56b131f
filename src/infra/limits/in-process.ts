import type { Clock } from '../../lib/clock';
import { decide, type RateDecision, type RateLimiter } from './types';

/** Counters in this process's memory: right for one instance; use the Redis limiter for several. */
export class InProcessRateLimiter implements RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  private lastPrune = 0;

  constructor(private readonly clock: Clock) {}

  async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const now = this.clock.now();
    const start = now - (now % windowMs);
    const id = `${windowMs}:${key}`;
    let w = this.windows.get(id);
    if (!w || w.start !== start) {
      w = { start, count: 0 };
      this.windows.set(id, w);
    }
    w.count++;
    this.prune(now);
    return decide(w.count, limit, start, windowMs, now);
  }

  /** Drops finished windows now and then, so idle keys do not accumulate. */
  private prune(now: number): void {
    if (now - this.lastPrune < 60_000 || this.windows.size < 10_000) return;
    this.lastPrune = now;
    for (const [id, w] of this.windows) {
      const windowMs = Number(id.slice(0, id.indexOf(':')));
      if (w.start + windowMs <= now) this.windows.delete(id);
    }
  }

  storeStatus(): 'in-process' {
    return 'in-process';
  }

  async close(): Promise<void> {
    this.windows.clear();
  }
}
