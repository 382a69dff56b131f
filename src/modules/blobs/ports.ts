import type { TierDefinition } from '../../lib/tiers';

/** Latest parse of a blob, shown in blob metadata and list items (implemented by the parse module). */
export interface ParseSummary {
  parse_id: string;
  status: string;
  created_at: string;
  completed_at: string | null;
}

export interface ParseSummaryPort {
  latest(agentId: string, blobIds: string[]): Promise<Map<string, ParseSummary>>;
}

/** The tier whose blob storage cap applies (billing knows purchases; default: the stored tier). */
export type TierResolver = (agentId: string, storedTier: string) => Promise<TierDefinition>;

/** Told after a blob is soft-deleted (the parse module drops its search chunks). */
export type BlobDeletedListener = (agentId: string, blobId: string) => Promise<void>;
