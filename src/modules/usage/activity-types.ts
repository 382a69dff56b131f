/**
 * The activity feed's contract with the modules that feed it (browse, feedback, later approval
 * events). Each source pages its own table newest first; the feed merges them (activity.ts).
 *
 * Order: occurred_at descending, then kind descending, then id descending, a total order, so a
 * cursor (occurred_at, kind, id) splits the feed exactly even when events share a millisecond.
 */
export interface ActivityItem {
  kind: string;
  id: string;
  /** Epoch ms. */
  at: number;
  /** The kind's own fields, rendered under a property named after the kind. */
  data: Record<string, unknown>;
}

/** Which rows at exactly `at` still come after the cursor: all of them, none, or those with a smaller id. */
export type SameAt = 'all' | 'none' | { idBelow: string };

export interface ActivityBound {
  at: number;
  sameAt: SameAt;
}

export interface ActivitySource {
  /** Fixed kind name: browse, feedback, approval. */
  readonly kind: string;
  /** At most `limit` items of this agent, newest first, after the bound when given. */
  page(agentId: string, limit: number, before?: ActivityBound): Promise<ActivityItem[]>;
}
