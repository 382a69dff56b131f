/** Tables of the web area: browse log, feedback and approval events (times are epoch milliseconds; booleans 0/1). */

/** One row per browse call that returned a page (POST /v1/browse); re-read by GET /v1/browse/{id}. */
export interface BrowseLogTable {
  browse_id: string;
  agent_id: string;
  url: string;
  final_url: string;
  mode: string; // static | dynamic
  http_status: number;
  content_type: string;
  title: string | null;
  text: string;
  /** What the page states about itself (migration 0302); null when it does not. */
  byline: string | null;
  published_at: string | null; // ISO 8601 as stated: YYYY-MM-DD or with time and offset
  language: string | null; // BCP 47
  site_name: string | null;
  response_time_ms: number;
  created_at: number;
}

/** Append-only feedback events (POST /v1/feedback). Never updated, never deleted. */
export interface FeedbackEventsTable {
  feedback_id: string;
  agent_id: string;
  ref_type: string;
  ref_id: string;
  signal: string;
  note: string | null;
  created_at: number;
}

/** Feedback events per agent and UTC month (YYYY-MM): the monthly cap is decided on this row. */
export interface FeedbackMonthlyTable {
  agent_id: string;
  month: string;
  count: number;
}

/**
 * Append-only human-approval events (POST /v1/me/approval-events): what the agent reports a human
 * approved or denied. Declared by the agent, not verified. Never updated, never deleted.
 */
export interface ApprovalEventsTable {
  approval_id: string;
  agent_id: string;
  action: string;
  decision: string; // approved | denied
  approver: string | null;
  tool: string | null;
  risk_class: string | null; // low | high
  note: string | null;
  /** When the human decided, as the agent reports it (defaults to created_at). */
  decided_at: number;
  created_at: number;
}

export interface WebTables {
  browse_log: BrowseLogTable;
  feedback_events: FeedbackEventsTable;
  feedback_monthly: FeedbackMonthlyTable;
  approval_events: ApprovalEventsTable;
  /** Same shape as feedback_monthly: the approval events cap per agent and UTC month. */
  approval_monthly: FeedbackMonthlyTable;
}
