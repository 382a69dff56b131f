/** Narrow ports of the parse module, wired by app.ts. */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { TierDefinition } from '../../lib/tiers';
import type { UsageSnapshot } from '../billing/metering-contract';

/** The blobs module, as parse needs it: the agent's active blob (404 BLOB_NOT_FOUND otherwise) and its bytes as a local file. */
export interface BlobsPort {
  find(agentId: string, blobId: string): Promise<{ blob_id: string; sha256: string; size_bytes: number; content_type: string; filename: string | null; created_at: number }>;
  withLocalFile<T>(sha256: string, fn: (path: string) => Promise<T>): Promise<T>;
}

/** Billing's metering: 'parse' (parse quota → 429 PARSE_QUOTA_EXCEEDED) and 'blob_search' (search pool → 429 SEARCH_CALLS_LIMIT). */
export interface ParseMeter {
  charge(agentId: string, action: 'parse' | 'blob_search', opts?: { tier?: string }): Promise<{
    /** `_svc.usage` of the answer. */
    usage: UsageSnapshot;
    /** The effective tier billing decided on, and (blob search) the search pool's counts after this call. */
    tier: string;
    poolCounts?: { callsThisMonth: number; freeUsedInWindow: number };
    refund(): Promise<void>;
    /** What a later refund needs (plain JSON, opaque here): kept with an async parse. */
    receipt?: object;
  }>;
  /** Gives back the call of a kept receipt inside `trx` (the parse's own move to failed, so once). */
  refundReceipt(trx: Transaction<Database>, receipt: object): Promise<void>;
}

/** The tier whose parse rate applies. */
export type TierResolver = (agentId: string, storedTier: string) => Promise<TierDefinition>;

/** The top-level `usage` object of a search response (the usage module builds it for web search too). */
export interface SearchUsageFigures {
  calls_total: number;
  calls_remaining: number | null;
  over_limit: boolean;
  upgrade_url: string;
  search_quota_period: 'trial_credits' | 'monthly';
  search_calls_limit: number | null;
  search_overage_rate_per_call: string | null;
}

export interface SearchUsageReader {
  searchUsage(agentId: string, storedTier: string, known?: { balanceUnits?: number; tierName?: string; counts?: { callsThisMonth: number; freeUsedInWindow: number } }): Promise<SearchUsageFigures>;
}

export interface Caller {
  agentId: string;
  tier: string;
}
