import type { TierDefinition } from '../../lib/tiers';
import type { Counters } from './store';

/** The `usage` object of memory responses and GET /v1/memory/stats. */
export interface MemoryUsage {
  /**
   * Memory writes (PUT) this UTC month: what the monthly cap counts, and the same figure as
   * /v1/billing's memory_ops_this_month.
   */
  ops_this_month: number;
  /** What is left of the monthly write cap (only PUT consumes it); null on tiers without a cap. */
  ops_remaining: number | null;
  storage_bytes: number;
  storage_limit_bytes: number;
  over_limit: boolean;
  /** Beyond the contract: semantic searches this UTC month (free, not counted against the cap). */
  searches_this_month: number;
}

export function usageOf(c: Counters, tier: TierDefinition): MemoryUsage {
  const cap = tier.memoryWritesPerMonth;
  return {
    ops_this_month: c.writes,
    ops_remaining: cap === null ? null : Math.max(0, cap - c.writes),
    storage_bytes: c.storageBytes,
    storage_limit_bytes: tier.memoryStorageBytes,
    over_limit: c.storageBytes >= tier.memoryStorageBytes || (cap !== null && c.writes >= cap),
    searches_this_month: c.searches,
  };
}

