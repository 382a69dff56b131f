/** Tables of the trust layer (times are epoch milliseconds). */

/** One entry of the trust log: `entry` is the RFC 8785 canonical JSON whose leaf hash is `leaf_hash` (hex). */
export interface TrustLogEntriesTable {
  log_index: number;
  kind: string;
  agent_id: string | null;
  epoch: number | null;
  entry: string;
  leaf_hash: string;
  created_at: number;
}

/** Hash (hex) of a complete subtree of the log. */
export interface TrustLogNodesTable { level: number; idx: number; hash: string }
export interface TrustLogHeadTable { id: number; size: number }
export interface TrustLogKeysTable { id: number; private_key_pem: string; created_at: number }
export interface TrustLogCheckpointsTable { tree_size: number; root_hash: string; note: string; signed_at: number }

/** Custody epochs: epoch 1 opens at registration; custody transfer and recovery close one and open the next. */
export interface AgentEpochsTable {
  agent_id: string;
  epoch: number;
  opened_at: number;
  opened_by: string;
  closed_at: number | null;
  /** Index of the log entry that opened the epoch (null until appended, for agents older than the log). */
  open_log_index: number | null;
}

/** Projection: one rated interaction (entry kind reputation.interaction). */
export interface ReputationEventsTable {
  event_id: string;
  log_index: number;
  subject_agent_id: string;
  epoch: number;
  rater_agent_id: string;
  ref_type: string;
  ref_id: string;
  outcome: string;
  category: string;
  note: string | null;
  rater_weight: number;
  created_at: number;
  /** When an upheld dispute set the event's weight to 0. */
  suppressed_at: number | null;
}

/** Projection: decayed Beta sums per agent, epoch and category ('all' for the score). */
export interface ReputationAggregatesTable {
  agent_id: string;
  epoch: number;
  category: string;
  alpha_sum: number;
  beta_sum: number;
  ref_at: number;
  event_count: number;
  signal_count: number;
  last_event_at: number | null;
}

/** Projection: per UTC day sums of weight and weight × ms into the day, per outcome (linear sub-signal decay). */
export interface ReputationDayBucketsTable {
  agent_id: string;
  epoch: number;
  category: string;
  day_start: number;
  approved_w: number;
  approved_wt: number;
  error_w: number;
  error_wt: number;
  rejected_w: number;
  rejected_wt: number;
  /** Counted (not suppressed) ratings of the day. */
  n: number;
}

export interface ReputationDisputesTable {
  dispute_id: string;
  event_id: string;
  agent_id: string;
  reason: string;
  status: string; // open | upheld | dismissed
  filed_at: number;
  filed_day: string;
  filed_log_index: number;
  decided_at: number | null;
  decision_note: string | null;
  decided_log_index: number | null;
}

/** Projection: skill vouches (entries vouch.given / vouch.revoked); revoked rows stay. */
export interface VouchesTable {
  vouch_id: string;
  target_agent_id: string;
  voucher_agent_id: string;
  skill: string;
  epoch: number;
  weight: number;
  created_at: number;
  created_log_index: number;
  revoked_at: number | null;
  revoked_log_index: number | null;
}

export interface TrustParityChecksTable { check_id: string; checked_at: number; result: string }

/**
 * A version of a directory row (GET /v1/agents): valid for versions [valid_from, valid_to); the one
 * with valid_to null is current. A listed agent's or a synthetic founding profile's shown fields and
 * rank (order_score = 1,000,000 − rank score in millionths; then created_at, agent_id).
 */
export interface DirectoryRanksTable {
  agent_id: string;
  valid_from: number;
  valid_to: number | null;
  /** When the row was closed (its successor written or the agent unlisted). */
  closed_at: number | null;
  order_score: number;
  created_at: number;
  /** When the rank score was computed. */
  score_at: number;
  agent_name: string;
  bio: string | null;
  /** JSON array. */
  skills: string;
  agent_type: string | null;
  domain: string | null;
  agent_card_url: string | null;
  bridge: number;
  synthetic: number;
}

/** One row (id 1): the directory's version counter and the MAC key of its cursors. */
export interface DirectoryStateTable { id: number; version: number; cursor_secret: string; refreshed_at: number | null }

export interface TrustTables {
  trust_log_entries: TrustLogEntriesTable;
  trust_log_nodes: TrustLogNodesTable;
  trust_log_head: TrustLogHeadTable;
  trust_log_keys: TrustLogKeysTable;
  trust_log_checkpoints: TrustLogCheckpointsTable;
  agent_epochs: AgentEpochsTable;
  reputation_events: ReputationEventsTable;
  reputation_aggregates: ReputationAggregatesTable;
  reputation_day_buckets: ReputationDayBucketsTable;
  reputation_disputes: ReputationDisputesTable;
  trust_parity_checks: TrustParityChecksTable;
  vouches: VouchesTable;
  directory_ranks: DirectoryRanksTable;
  directory_state: DirectoryStateTable;
}
