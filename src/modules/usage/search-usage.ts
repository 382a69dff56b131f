/**
 * The top-level `usage` object of a search response (the response envelope). Two shapes:
 *
 * credit-metered tiers (free, spark, sprint, mission, deploy):
 *   search_quota_period 'trial_credits'; search_calls_limit = the free floor (50 per rolling 30 days);
 *   calls_total = search-pool calls (web + blob search) this UTC month, as GET /v1/billing counts them;
 *   calls_remaining null (past the floor calls are paid from credit); search_overage_rate_per_call =
 *   the price of one search past the floor in USD; over_limit = the floor is used up AND the balance
 *   cannot pay for one more search (the next call would answer 402).
 * legacy monthly tiers (starter, pro):
 *   search_quota_period 'monthly' (UTC calendar month); search_calls_limit = the monthly quota;
 *   calls_total = search-pool calls this UTC month; calls_remaining = quota - calls_total (>= 0);
 *   search_overage_rate_per_call = the tier's overage rate; over_limit = the quota is used up.
 */
import { utcDay, utcMonthStartDay } from '../../lib/utc';
import { formatUnitsUsd } from './time';
import type { TierDefinition } from '../../lib/tiers';
import type { MeterReadings, MeterTerms } from './ports';

export interface SearchUsage {
  calls_total: number;
  calls_remaining: number | null;
  over_limit: boolean;
  upgrade_url: string;
  search_quota_period: 'trial_credits' | 'monthly';
  search_calls_limit: number | null;
  search_overage_rate_per_call: string | null;
}

/** What a caller may already know from billing's charge (saves the reads). */
export interface KnownSearchUsage {
  balanceUnits?: number;
  tierName?: string;
  /** The search pool's calls this UTC month and free calls used in the rolling window. */
  counts?: { callsThisMonth: number; freeUsedInWindow: number };
}

export async function searchUsage(
  r: MeterReadings, terms: MeterTerms, upgradeUrl: string,
  a: { agentId: string; storedTier: string; now: number; balanceUnits?: number; tier?: TierDefinition; counts?: KnownSearchUsage['counts'] },
): Promise<SearchUsage> {
  const [tier, counts] = await Promise.all([
    a.tier ? Promise.resolve(a.tier) : r.effectiveTier(a.agentId, a.storedTier),
    a.counts ? { calls: a.counts.callsThisMonth, freeUsed: a.counts.freeUsedInWindow } : r.searchCounts(a.agentId, utcMonthStartDay(a.now), utcDay(a.now)),
  ]);
  const total = counts.calls;
  if (tier.metering === 'monthly') {
    const limit = tier.searchPerMonth;
    return {
      calls_total: total,
      calls_remaining: limit === null ? null : Math.max(0, limit - total),
      over_limit: limit !== null && total >= limit,
      upgrade_url: upgradeUrl,
      search_quota_period: 'monthly',
      search_calls_limit: limit,
      search_overage_rate_per_call: tier.searchOverageUsdPerCall,
    };
  }
  const floor = terms.freeFloor.search ?? 0;
  const price = terms.priceUnits.search;
  const balance = a.balanceUnits ?? (await r.balanceUnits(a.agentId));
  return {
    calls_total: total,
    calls_remaining: null,
    over_limit: counts.freeUsed >= floor && balance < price,
    upgrade_url: upgradeUrl,
    search_quota_period: 'trial_credits',
    search_calls_limit: floor,
    search_overage_rate_per_call: formatUnitsUsd(price),
  };
}
