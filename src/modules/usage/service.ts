/**
 * Usage and activity: presents billing's counters (GET /v1/usage, the search `usage` object) and
 * merges the activity sources other modules register (GET /v1/me/activity).
 */
import type { Clock } from '../../lib/clock';
import type { ActivitySource } from './activity-types';
import { createActivityFeed } from './activity';
import { usageHistory } from './history';
import type { MeterReadings, MeterTerms } from './ports';
import { searchUsage, type SearchUsage } from './search-usage';

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
    /** The search response's `usage`; `balanceUnits` when the caller already has it (from the charge). */
    searchUsage(agentId: string, storedTier: string, balanceUnits?: number): Promise<SearchUsage> {
      return searchUsage(deps.readings, deps.terms, deps.upgradeUrl, { agentId, storedTier, now: deps.clock.now(), balanceUnits });
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
