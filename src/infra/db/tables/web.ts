/** Tables of the web area: browse log and feedback (times are epoch milliseconds; booleans 0/1). */

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

export interface WebTables {
  browse_log: BrowseLogTable;
  feedback_events: FeedbackEventsTable;
  feedback_monthly: FeedbackMonthlyTable;
}
