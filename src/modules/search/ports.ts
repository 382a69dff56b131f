/** Narrow ports of the search module, implemented by billing and the usage module (wired in app.ts). */
import type { KnownSearchUsage, SearchUsage } from '../usage/search-usage';

/** One metered call; refund() gives it back when the work then fails. */
export interface MeterCharge {
  /** `_svc.usage` of the response (billing's UsageSnapshot). */
  usage: { credits_remaining_usd: string };
  /** The tier billing decided on (effective: purchases can raise the stored tier). */
  tier: string;
  /** The search pool's counts after this call (billing reads them in the charge's transaction). */
  poolCounts?: { callsThisMonth: number; freeUsedInWindow: number };
  refund(): Promise<void>;
}

/** Billing: charges one search call, or throws ApiError 429 SEARCH_CALLS_LIMIT / 402 INSUFFICIENT_CREDITS. */
export interface SearchMeter {
  chargeSearch(agentId: string, storedTier: string): Promise<MeterCharge>;
}

/** Usage module: the response's top-level `usage` object. */
export interface SearchUsageReader {
  searchUsage(agentId: string, storedTier: string, known?: KnownSearchUsage): Promise<SearchUsage>;
}
