/**
 * Tier table: one definition used by limits, billing, the `_svc` envelope and the capabilities
 * document. free/starter/pro numbers are the spec's tier table. spark, sprint, mission and deploy
 * are the credit-metered tiers an agent reaches by lifetime credit purchases (see docs/billing.md):
 * they pay per action past the rolling free floors and get larger storage caps.
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
  memoryWritesPerMonth: number | null; // null = unlimited
  memoryStorageBytes: number;
  blobStorageBytes: number;
  searchOverageUsdPerCall: string | null;
  feedbackPerMonth: number;
  parseOpsPerMonth: number;
  parsePerMinute: number;
  /** Lifetime purchased credits (units of 0.0001 USD) that put an agent on this tier. */
  minLifetimePurchaseUnits: number | null;
}

const MB = 1024 * 1024;

export const TIERS: Record<TierName, TierDefinition> = {
  free: {
    name: 'free', label: 'Free', metering: 'credits',
    description: 'Rolling 30-day free floors (1,000 memory writes, 50 searches, 20 browses); pay per action with credits beyond them.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: 1000, memoryStorageBytes: 5 * MB, blobStorageBytes: 50 * MB,
    searchOverageUsdPerCall: null, feedbackPerMonth: 100, parseOpsPerMonth: 100, parsePerMinute: 5, minLifetimePurchaseUnits: null,
  },
  spark: {
    name: 'spark', label: 'Spark', metering: 'credits',
    description: 'Has bought credits (any amount): pay-per-action past the free floors, 25 MB memory, 1 GB blobs.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: 5000, memoryStorageBytes: 25 * MB, blobStorageBytes: 1024 * MB,
    searchOverageUsdPerCall: '0.0200', feedbackPerMonth: 1000, parseOpsPerMonth: 1000, parsePerMinute: 10, minLifetimePurchaseUnits: 1,
  },
  sprint: {
    name: 'sprint', label: 'Sprint', metering: 'credits',
    description: 'Lifetime purchases of 25 USD or more: 50 MB memory, 5 GB blobs, higher parse rate.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: 20000, memoryStorageBytes: 50 * MB, blobStorageBytes: 5120 * MB,
    searchOverageUsdPerCall: '0.0200', feedbackPerMonth: 2000, parseOpsPerMonth: 5000, parsePerMinute: 20, minLifetimePurchaseUnits: 250_000,
  },
  mission: {
    name: 'mission', label: 'Mission', metering: 'credits',
    description: 'Lifetime purchases of 100 USD or more: unlimited memory writes, 100 MB memory, 20 GB blobs.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: null, memoryStorageBytes: 100 * MB, blobStorageBytes: 20480 * MB,
    searchOverageUsdPerCall: '0.0200', feedbackPerMonth: 10000, parseOpsPerMonth: 20000, parsePerMinute: 40, minLifetimePurchaseUnits: 1_000_000,
  },
  deploy: {
    name: 'deploy', label: 'Deploy', metering: 'credits',
    description: 'Lifetime purchases of 500 USD or more: production agents; 500 MB memory, 100 GB blobs.',
    searchPerMonth: null, browsePerMonth: null, memoryWritesPerMonth: null, memoryStorageBytes: 500 * MB, blobStorageBytes: 102400 * MB,
    searchOverageUsdPerCall: '0.0200', feedbackPerMonth: 50000, parseOpsPerMonth: 100000, parsePerMinute: 120, minLifetimePurchaseUnits: 5_000_000,
  },
  starter: {
    name: 'starter', label: 'Starter (legacy)', metering: 'monthly',
    description: 'Legacy monthly plan: 3,000 searches and 200 browses per UTC month, 5,000 memory writes, 25 MB memory, 2 GB blobs.',
    searchPerMonth: 3000, browsePerMonth: 200, memoryWritesPerMonth: 5000, memoryStorageBytes: 25 * MB, blobStorageBytes: 2048 * MB,
    searchOverageUsdPerCall: '0.015', feedbackPerMonth: 1000, parseOpsPerMonth: 1000, parsePerMinute: 10, minLifetimePurchaseUnits: null,
  },
  pro: {
    name: 'pro', label: 'Pro (legacy)', metering: 'monthly',
    description: 'Legacy monthly plan: 7,500 searches and 700 browses per UTC month, unlimited memory writes, 100 MB memory, 20 GB blobs.',
    searchPerMonth: 7500, browsePerMonth: 700, memoryWritesPerMonth: null, memoryStorageBytes: 100 * MB, blobStorageBytes: 20480 * MB,
    searchOverageUsdPerCall: '0.012', feedbackPerMonth: 10000, parseOpsPerMonth: 5000, parsePerMinute: 20, minLifetimePurchaseUnits: null,
  },
};

export function tierOf(name: string): TierDefinition {
  return TIERS[name as TierName] ?? TIERS.free;
}
