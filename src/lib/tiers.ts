/**
 * Tier table: one definition used by limits, billing, the `_svc` envelope and the capabilities
 * document. free/starter/pro numbers are the API's published tier table. spark, sprint, mission and deploy
 * are the credit-metered tiers an agent reaches by lifetime credit purchases (see docs/billing.md):
 * they pay per action past the rolling free floors and get larger storage caps. No credit tier has
 * a monthly quota on searches, browses or memory writes: past the floor every call costs credits.
 * `searchOverageUsdPerCall` is only for the legacy monthly tiers (charged from credit past the quota).
 */
export type TierName = 'free' | 'spark' | 'sprint' | 'mission' | 'deploy' | 'starter' | 'pro';

export interface TierDefinition {
  name: TierName;
  label: string;
  description: string;
  /** credits: rolling 30-day free floors then credits; monthly: legacy UTC-month quotas. */
  metering: 'credits' | 'monthly';
  searchPerMonth: number | null; // monthly tiers only
  browsePerMonth: number | null; // monthly tiers only
  /** Monthly tiers only (null = unlimited). Credit tiers pay 1 credit per write past the rolling floor. */
  memoryWritesPerMonth: number | null;
  memoryStorageBytes: number;
  blobStorageBytes: number;
  searchOverageUsdPerCall: string | null;
  feedbackPerMonth: number;
  /** Human-approval events an agent may record per UTC month (POST /v1/me/approval-events). */
  approvalEventsPerMonth: number;
  parseOpsPerMonth: number;
  parsePerMinute: number;
  /** Lifetime purchased credits (units of 0.0001 USD) that put an agent on this tier. */
  minLifetimePurchaseUnits: number | null;
}

/**
 * The tier an agent is billed on. Legacy monthly tiers (starter, pro) are kept as stored. Otherwise
 * the credit tier follows lifetime purchases (a purchase can only raise it), never below the stored
 * tier: spark from the first purchased credit, sprint from 25 USD, mission from 100 USD, deploy from 500 USD.
 */
export function effectiveTier(stored: string, lifetimePurchaseUnits: number): TierDefinition {
  const base = tierOf(stored);
  if (base.metering === 'monthly') return base;
  let best = base;
  for (const name of CREDIT_TIER_ORDER) {
    const t = TIERS[name];
    if (t.minLifetimePurchaseUnits !== null && lifetimePurchaseUnits >= t.minLifetimePurchaseUnits
      && CREDIT_TIER_ORDER.indexOf(name) > CREDIT_TIER_ORDER.indexOf(best.name)) best = t;
  }
  return best;
}

/** Credit-metered tiers, lowest first. */
export const CREDIT_TIER_ORDER: TierName[] = ['free', 'spark', 'sprint', 'mission', 'deploy'];

const MB = 1024 * 1024;

export const TIERS: Record<TierName, TierDefinition> = {
  free: {
    name: 'free', label: 'Free', metering: 'credits',
    description: 'Rolling 30-day free floors (1,000 memory writes, 50 searches, 20 browses), pay per action with credits beyond them; at most 1,000 memory writes per UTC month.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: 1000, memoryStorageBytes: 5 * MB, blobStorageBytes: 50 * MB,
    searchOverageUsdPerCall: null, feedbackPerMonth: 100, approvalEventsPerMonth: 1000, parseOpsPerMonth: 100, parsePerMinute: 5, minLifetimePurchaseUnits: null,
  },
  spark: {
    name: 'spark', label: 'Spark', metering: 'credits',
    description: 'Has bought credits (any amount): pay per action past the rolling free floors, 25 MB memory, 1 GB blobs.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: null, memoryStorageBytes: 25 * MB, blobStorageBytes: 1024 * MB,
    searchOverageUsdPerCall: null, feedbackPerMonth: 1000, approvalEventsPerMonth: 10000, parseOpsPerMonth: 1000, parsePerMinute: 10, minLifetimePurchaseUnits: 1,
  },
  sprint: {
    name: 'sprint', label: 'Sprint', metering: 'credits',
    description: 'Lifetime purchases of 25 USD or more: 50 MB memory, 5 GB blobs, higher parse rate.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: null, memoryStorageBytes: 50 * MB, blobStorageBytes: 5120 * MB,
    searchOverageUsdPerCall: null, feedbackPerMonth: 2000, approvalEventsPerMonth: 20000, parseOpsPerMonth: 5000, parsePerMinute: 20, minLifetimePurchaseUnits: 250_000,
  },
  mission: {
    name: 'mission', label: 'Mission', metering: 'credits',
    description: 'Lifetime purchases of 100 USD or more: unlimited memory writes, 100 MB memory, 20 GB blobs.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: null, memoryStorageBytes: 100 * MB, blobStorageBytes: 20480 * MB,
    searchOverageUsdPerCall: null, feedbackPerMonth: 10000, approvalEventsPerMonth: 100000, parseOpsPerMonth: 20000, parsePerMinute: 40, minLifetimePurchaseUnits: 1_000_000,
  },
  deploy: {
    name: 'deploy', label: 'Deploy', metering: 'credits',
    description: 'Lifetime purchases of 500 USD or more: production agents; 500 MB memory, 100 GB blobs.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: null, memoryStorageBytes: 500 * MB, blobStorageBytes: 102400 * MB,
    searchOverageUsdPerCall: null, feedbackPerMonth: 50000, approvalEventsPerMonth: 500000, parseOpsPerMonth: 100000, parsePerMinute: 120, minLifetimePurchaseUnits: 5_000_000,
  },
  starter: {
    name: 'starter', label: 'Starter (legacy)', metering: 'monthly',
    description: 'Legacy monthly plan: 3,000 searches and 200 browses per UTC month, 5,000 memory writes, 25 MB memory, 2 GB blobs.',
    searchPerMonth: 3000, browsePerMonth: 200, memoryWritesPerMonth: 5000, memoryStorageBytes: 25 * MB, blobStorageBytes: 2048 * MB,
    searchOverageUsdPerCall: '0.015', feedbackPerMonth: 1000, approvalEventsPerMonth: 10000, parseOpsPerMonth: 1000, parsePerMinute: 10, minLifetimePurchaseUnits: null,
  },
  pro: {
    name: 'pro', label: 'Pro (legacy)', metering: 'monthly',
    description: 'Legacy monthly plan: 7,500 searches and 700 browses per UTC month, unlimited memory writes, 100 MB memory, 20 GB blobs.',
    searchPerMonth: 7500, browsePerMonth: 700, memoryWritesPerMonth: null, memoryStorageBytes: 100 * MB, blobStorageBytes: 20480 * MB,
    searchOverageUsdPerCall: '0.012', feedbackPerMonth: 10000, approvalEventsPerMonth: 100000, parseOpsPerMonth: 5000, parsePerMinute: 20, minLifetimePurchaseUnits: null,
  },
};

export function tierOf(name: string): TierDefinition {
  return TIERS[name as TierName] ?? TIERS.free;
}
