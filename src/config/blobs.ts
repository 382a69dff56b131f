import { bool, group, int, oneOf, optionalStr, optionalUrl, str, type Loaded } from './define';

const MiB = 1024 * 1024;

/**
 * Blob storage backend, S3 connection, and the blob/parse limits the blobs and parse modules use.
 * Cross-field rules (bucket required for s3, access key and secret together, signed-URL default
 * within its maximum) are reported by `blobsSettingsProblems` below, since a single setting cannot
 * see its neighbours.
 */
export const blobsSettings = group('Blobs and parsing', {
  store: oneOf('SVC_BLOB_STORE', ['fs', 's3'] as const, 'fs',
    'Where blob bytes live. `fs`: content-addressed files under <SVC_DATA_DIR>/blobs (one machine). `s3`: an S3-compatible object store (several instances).'),
  s3Endpoint: optionalUrl('SVC_S3_ENDPOINT',
    'Endpoint of an S3-compatible server (MinIO, Ceph, R2, s3rver...). Unset: the AWS endpoint for SVC_S3_REGION.'),
  s3Region: str('SVC_S3_REGION', 'us-east-1', 'Region used for S3 request signing (most S3-compatible servers accept any value).'),
  s3Bucket: optionalStr('SVC_S3_BUCKET', 'Bucket that holds the blobs; must exist. Required when SVC_BLOB_STORE=s3.'),
  s3AccessKeyId: optionalStr('SVC_S3_ACCESS_KEY_ID',
    'S3 access key id. Unset (with the secret also unset): the AWS SDK default credential chain (AWS_* variables, instance role...).'),
  s3SecretAccessKey: optionalStr('SVC_S3_SECRET_ACCESS_KEY', 'S3 secret access key; set together with SVC_S3_ACCESS_KEY_ID.'),
  s3ForcePathStyle: bool('SVC_S3_FORCE_PATH_STYLE', false,
    'Address the bucket as <endpoint>/<bucket>/<key> instead of <bucket>.<endpoint>/<key>. Most self-hosted S3-compatible servers need true.'),
  s3Prefix: str('SVC_S3_PREFIX', 'blobs/',
    'Key prefix for blob objects inside the bucket (a trailing "/" is added when missing), so the bucket can be shared. Objects are stored at <prefix><sha256>.'),
  maxBytes: int('SVC_BLOB_MAX_BYTES', 1024 * MiB,
    'Largest single blob accepted, in bytes (default 1 GiB). Larger uploads are cut off while streaming and answered 413 BLOB_TOO_LARGE.', { min: 1 }),
  deleteGraceSeconds: int('SVC_BLOB_DELETE_GRACE_SECONDS', 86_400,
    'Seconds a soft-deleted blob keeps its stored bytes before the reconciliation sweep may remove them (no other live blob sharing the same content).', { min: 0 }),
  signedUrlDefaultSeconds: int('SVC_BLOB_SIGNED_URL_DEFAULT_SECONDS', 3600,
    'Lifetime of a signed read URL when the request gives no expires_in.', { min: 1 }),
  signedUrlMaxSeconds: int('SVC_BLOB_SIGNED_URL_MAX_SECONDS', 86_400,
    'Largest expires_in accepted for a signed read URL (requests above it are refused).', { min: 1 }),
  signingSecret: optionalStr('SVC_BLOB_SIGNING_SECRET',
    'HMAC secret for signed blob read URLs. Set it (the same value on every instance) so URLs survive restarts and work across instances. Unset: a random secret per process.'),
  parseSyncMaxBytes: int('SVC_PARSE_SYNC_MAX_BYTES', 10 * MiB,
    'Largest blob parsed synchronously (default 10 MiB). Larger blobs need ?async=true (PARSE_TOO_LARGE_SYNC otherwise).', { min: 1 }),
  parseAsyncEnabled: bool('SVC_PARSE_ASYNC_ENABLED', true,
    'Accept asynchronous parses (?async=true, 202 queued) run by the job queue. false: PARSE_ASYNC_DISABLED.'),
  callbackReplayEnabled: bool('SVC_CALLBACK_REPLAY_ENABLED', false,
    'Allow agents to replay a successful-parse callback. false: 403 CALLBACK_REPLAY_DISABLED.'),
  queueSecret: optionalStr('SVC_QUEUE_SECRET',
    'HMAC secret that signs messages to POST /internal/queue/parse (external push delivery). Unset: that route refuses every message; the built-in job table does not need it.'),
  // ---- blobs and parse modules (docs/blobs.md) ----
  sweepIntervalSeconds: int('SVC_BLOB_SWEEP_INTERVAL_SECONDS', 300,
    'How often the reconciliation sweep removes stored bytes of deleted blobs past their grace period. 0: never (run it elsewhere).', { min: 0, max: 86_400 }),
  parseConcurrency: int('SVC_PARSE_CONCURRENCY', 2, 'Parses running at once per instance (each in its own isolated process); more wait their turn.', { min: 1, max: 64 }),
  parseResultRetentionDays: int('SVC_PARSE_RESULT_RETENTION_DAYS', 30,
    'Days a complete parse keeps its result; then the record stays with result null (replay: PARSE_RESULT_MISSING). 0: keep forever.', { min: 0 }),
  queuePollIntervalMs: int('SVC_QUEUE_POLL_INTERVAL_MS', 1000, 'How often an idle instance looks for due queue jobs (new jobs also wake it at once).', { min: 10, max: 3_600_000 }),
  queueConcurrency: int('SVC_QUEUE_CONCURRENCY', 2,
    'Queue jobs (async parses, callback deliveries) one instance runs at once. 0: no built-in worker; jobs run only when pushed to POST /internal/queue/parse.', { min: 0, max: 64 }),
  queueLeaseSeconds: int('SVC_QUEUE_LEASE_SECONDS', 120, 'Lease of a claimed job, renewed while it runs; a job whose instance died is claimed again after it.', { min: 5, max: 86_400 }),
  queueMaxAttempts: int('SVC_QUEUE_MAX_ATTEMPTS', 5, 'Attempts of an async parse job before it is dead-lettered (the parse then reads failed).', { min: 1, max: 100 }),
  queueRetryBaseSeconds: int('SVC_QUEUE_RETRY_BASE_SECONDS', 10, 'Backoff before the second attempt of a failed parse job; doubles each time, at most one hour.', { min: 1, max: 3600 }),
  callbackMaxAttempts: int('SVC_CALLBACK_MAX_ATTEMPTS', 8, 'Automatic delivery attempts of a parse callback.', { min: 1, max: 100 }),
  callbackRetryBaseSeconds: int('SVC_CALLBACK_RETRY_BASE_SECONDS', 30, 'Backoff before the second callback attempt; doubles each time, at most six hours.', { min: 1, max: 21_600 }),
  callbackTimeoutMs: int('SVC_CALLBACK_TIMEOUT_MS', 10_000, 'Time one callback POST may take (connect, TLS, answer).', { min: 100, max: 120_000 }),
  callbackReplayPerMinute: int('SVC_CALLBACK_REPLAY_PER_MINUTE', 5, 'Callback replays one agent may ask for per minute (429 CALLBACK_REPLAY_RATE_LIMIT past it).', { min: 1 }),
});

type BlobsConfig = Loaded<typeof blobsSettings.settings>;

/** Cross-field checks; an empty list means the group is consistent. */
export function blobsSettingsProblems(b: BlobsConfig): string[] {
  const problems: string[] = [];
  if (b.store === 's3' && !b.s3Bucket) problems.push('SVC_S3_BUCKET is required when SVC_BLOB_STORE=s3');
  if (Boolean(b.s3AccessKeyId) !== Boolean(b.s3SecretAccessKey)) {
    problems.push('SVC_S3_ACCESS_KEY_ID and SVC_S3_SECRET_ACCESS_KEY must be set together');
  }
  if (b.signedUrlDefaultSeconds > b.signedUrlMaxSeconds) {
    problems.push('SVC_BLOB_SIGNED_URL_DEFAULT_SECONDS must not exceed SVC_BLOB_SIGNED_URL_MAX_SECONDS');
  }
  return problems;
}
