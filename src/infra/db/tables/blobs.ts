/**
 * Tables of the blobs area: per-agent blob records, the shared stored contents they point at, the
 * per-agent storage counter, parse jobs with their callback deliveries and chunks, and the durable
 * job queue. Times are epoch milliseconds; booleans 0/1; JSON as text.
 */

/** One agent's blob: a name (blob_id) for stored content. Soft-deleted rows stay as tombstones. */
export interface BlobsTable {
  agent_id: string;
  blob_id: string; // b_ + 16 hex, derived from (agent_id, sha256): see src/modules/blobs/ids.ts
  sha256: string;
  size_bytes: number;
  content_type: string;
  filename: string | null;
  created_at: number; // when the blob (last) became active
  updated_at: number;
  deleted_at: number | null; // null while active
}

/**
 * Stored content shared by every blob row with the same sha256 (any agent). The reconciliation
 * sweeper removes the bytes once `released_at` (no active row left) is older than the grace period.
 */
export interface BlobContentsTable {
  sha256: string;
  size_bytes: number;
  state: string; // live | deleting
  /** When the last active reference went away; null while referenced. */
  released_at: number | null;
  state_changed_at: number;
  created_at: number;
}

/** Bytes of an agent's active blobs (what BLOB_STORAGE_LIMIT is checked against). */
export interface BlobAgentsTable {
  agent_id: string;
  storage_bytes: number;
  blob_count: number;
}

/** A parse of one blob (sync or async). */
export interface ParseJobsTable {
  parse_id: string;
  agent_id: string;
  blob_id: string;
  sha256: string;
  content_type: string;
  mode: string; // sync | async
  status: string; // queued | running | complete | failed
  callback_url: string | null;
  result: string | null; // ParseResult JSON when complete
  error_code: string | null;
  error_reason: string | null;
  error_message: string | null;
  /** Exact bytes and signature header of the latest signed callback (replay re-sends them). */
  callback_body: string | null;
  callback_signature: string | null;
  /** An async parse's charge (billing's ChargeReceipt as JSON), given back if the parse dead-letters. */
  charge_receipt: string | null;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  updated_at: number;
}

/** One attempt to deliver a parse callback (automatic or replay). */
export interface ParseDeliveriesTable {
  delivery_id: string;
  parse_id: string;
  agent_id: string;
  attempt_number: number;
  trigger: string; // automatic | replay
  status: string; // success | failed
  http_status: number | null;
  last_error: string | null;
  created_at: number;
}

/** Search chunks of a blob's latest complete parse. */
export interface BlobChunksTable {
  agent_id: string;
  blob_id: string;
  chunk_index: number;
  parse_id: string;
  text: string;
  location: string; // JSON ChunkLocation
  created_at: number;
}

/** Per-agent secret that signs parse callbacks (created on first use). */
export interface CallbackSecretsTable {
  agent_id: string;
  secret: string;
  created_at: number;
}

/** Durable job queue (src/infra/queue). */
export interface QueueJobsTable {
  job_id: string;
  queue: string;
  /** Unique when set: enqueueing the same key twice keeps the first job. */
  dedupe_key: string | null;
  payload: string; // JSON
  state: string; // pending | running | done | dead
  attempts: number;
  max_attempts: number;
  run_at: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface BlobsTables {
  blobs: BlobsTable;
  blob_contents: BlobContentsTable;
  blob_agents: BlobAgentsTable;
  parse_jobs: ParseJobsTable;
  parse_deliveries: ParseDeliveriesTable;
  blob_chunks: BlobChunksTable;
  callback_secrets: CallbackSecretsTable;
  queue_jobs: QueueJobsTable;
}
