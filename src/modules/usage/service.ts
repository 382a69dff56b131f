/**
 * Usage and activity: presents billing's counters (GET /v1/usage, the search `usage` object) and
 * merges the activity sources other modules register (GET /v1/me/activity).
 */
import type { Clock } from '../../lib/clock';
import { TIERS, type TierName } from '../../lib/tiers';
import type { ActivitySource } from './activity-types';
import { createActivityFeed } from './activity';
import { usageHistory } from './history';
import type { MeterReadings, MeterTerms } from './ports';
import { searchUsage, type KnownSearchUsage, type SearchUsage } from './search-usage';

export interface UsageServiceDeps {
  readings: MeterReadings;
  terms: MeterTerms;
  clock: Clock;
  upgradeUrl: string;
}

export function createUsageService(deps: UsageServiceDeps) {
  const sources: ActivitySource[] = [];
  const feed = createActivityFeed(() => sources);
  return {
    /** Browse, feedback and (later) approval events register here from app.ts. */
    addActivitySource(source: ActivitySource): void {
      if (sources.some((s) => s.kind === source.kind)) throw new Error(`activity source ${source.kind} registered twice`);
      sources.push(source);
    },
    /**
     * The search response's `usage`. `known` carries what the caller already has from billing's
     * charge (balance, effective tier name, the search pool's counts), which saves reads on every search.
     */
    searchUsage(agentId: string, storedTier: string, known: KnownSearchUsage = {}): Promise<SearchUsage> {
      const tier = known.tierName && known.tierName in TIERS ? TIERS[known.tierName as TierName] : undefined;
      return searchUsage(deps.readings, deps.terms, deps.upgradeUrl, {
        agentId, storedTier, now: deps.clock.now(), balanceUnits: known.balanceUnits, tier, counts: known.counts,
      });
    },
    /** The tier the agent is billed on (browse's probation rule reads it). */
    effectiveTier(agentId: string, storedTier: string) {
      return deps.readings.effectiveTier(agentId, storedTier);
    },
    history(agentId: string, storedTier: string) {
      return usageHistory(deps.readings, deps.terms, { agentId, storedTier, now: deps.clock.now() });
    },
    activity(agentId: string, q: { limit: number; cursor?: string; kinds?: string[] }) {
      return feed.page(agentId, q);
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
