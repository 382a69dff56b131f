import { bool, date, group, int, oneOf, optionalStr, optionalUrl, str } from './define';

export const coreSettings = group('Core', {
  host: str('HOST', '127.0.0.1', 'Address to listen on. Use 0.0.0.0 to accept connections from other machines.'),
  port: int('PORT', 3000, 'TCP port to listen on (0 picks a free port).', { min: 0, max: 65535 }),
  baseUrl: optionalUrl('SVC_BASE_URL', 'Public base address used in links the service hands out. Default: http://localhost:<PORT>.'),
  dataDir: str('SVC_DATA_DIR', './data', 'Directory for the embedded SQLite database and local blobs; created on first start.'),
  databaseUrl: optionalUrl('DATABASE_URL', 'PostgreSQL connection URL (postgres://user@host:5432/db). Unset: embedded SQLite under SVC_DATA_DIR.', ['postgres:', 'postgresql:']),
  databasePoolMax: int('DATABASE_POOL_MAX', 10, 'Maximum PostgreSQL connections per instance.', { min: 1, max: 1000 }),
  logLevel: oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info', 'Log level (pino).'),
  bodyLimitBytes: int('SVC_BODY_LIMIT_BYTES', 1_048_576, 'Default maximum JSON request body in bytes (routes such as memory PUT and blob upload set their own).', { min: 1024 }),
  adminKey: optionalStr('SVC_ADMIN_KEY', 'Secret for admin routes (header X-Admin-Key). Unset: admin routes answer 503 ADMIN_NOT_CONFIGURED.'),
  instanceId: optionalStr('SVC_INSTANCE_ID', 'Name of this instance in `_svc.served_by`. Default: host name and process id.'),
  termsUrl: optionalUrl('SVC_TERMS_URL', 'Terms of service address. Default: <base>/terms.'),
  termsVersion: date('SVC_TERMS_VERSION', '2026-11-01', 'Version (a date, YYYY-MM-DD) of the terms, echoed as `_svc.terms_version`.'),
  authCacheMs: int('SVC_AUTH_CACHE_MS', 2000, 'How long an instance may reuse a verified API key or session lookup (milliseconds; 0 disables). Revocation on the same instance takes effect at once; other instances see it within this time.', { min: 0, max: 60_000 }),
  challengeTtlSeconds: int('SVC_CHALLENGE_TTL_SECONDS', 300, 'Lifetime of a passport challenge nonce.', { min: 10, max: 3600 }),
  affiliationSecret: optionalStr('SVC_AFFILIATION_SECRET', 'HMAC secret for declared_affiliation_token (format `<org>.<hex hmac-sha256(org)>`). Unset: every token is ignored.'),
  redisUrl: optionalUrl('REDIS_URL', 'Redis for rate limits and caches shared across instances. Unset: in-process.', ['redis:', 'rediss:']),
  outboundAllowLoopback: bool('SVC_OUTBOUND_ALLOW_LOOPBACK', false, 'Let the guarded outbound client reach loopback addresses. For tests only; never in production.'),
  foundingPeriodEnd: date('SVC_FOUNDING_PERIOD_END', '2027-06-30T00:00:00Z', 'End of the founding period reported by the community statistics (ISO 8601 date-time with its zone).', { time: true }),
});
