import { group, int, optionalStr } from './define';

export const trustSettings = group('Trust', {
  logOrigin: optionalStr('SVC_TRUST_LOG_ORIGIN', 'Origin line of the trust log\'s checkpoints and the name of its signing key (a schema-less URL without spaces or "+"). Default: the host and path of SVC_BASE_URL followed by /trust-log.'),
  logPrivateKey: optionalStr('SVC_TRUST_LOG_PRIVATE_KEY', 'PEM (PKCS#8) Ed25519 private key that signs trust log checkpoints. Unset: a key is generated at first start and kept in the database; every instance on that database uses it.'),
  checkpointIntervalMs: int('SVC_TRUST_CHECKPOINT_INTERVAL_MS', 1000, 'Least time between two checkpoints an instance signs; a checkpoint request in between answers the newest signed one.', { min: 0, max: 3_600_000 }),
  directoryCursorSecret: optionalStr('SVC_DIRECTORY_CURSOR_SECRET', 'Key (at least 32 characters) of the HMAC that signs directory cursors (GET /v1/agents next_cursor), the same on every instance. Unset: a random key made when the database was created and kept in it.'),
  directoryCursorTtlSeconds: int('SVC_DIRECTORY_CURSOR_TTL_SECONDS', 3600, 'How long a directory walk may go on: a next_cursor older than this (counted from the walk\'s first page) answers 400 INVALID_DIRECTORY_CURSOR; rank rows superseded longer ago are deleted.', { min: 60, max: 86_400 }),
  directoryRefreshSeconds: int('SVC_DIRECTORY_REFRESH_SECONDS', 3600, 'How often an instance re-ranks the directory (reputation decays with time) and reconciles it with the listed agents; also once at start.', { min: 1, max: 86_400 }),
  directorySyntheticProfiles: optionalStr('SVC_DIRECTORY_SYNTHETIC_PROFILES', 'Synthetic founding profiles shown in the directory with synthetic: true: a JSON array inline, or the path of a JSON file holding one. Each profile: key (a unique label), agent_name, and optional bio, skills, agent_type, domain, agent_card_url, created_at (docs/trust.md). Unset: none.'),
  stakeSettleSeconds: int('SVC_STAKE_SETTLE_SECONDS', 60, 'How often an instance returns the credit of stakes whose 7-day unstake cooling is over (any instance may; each stake\'s credit returns once). An agent\'s own stake, billing and usage reads return it at once too.', { min: 1, max: 86_400 }),
  ratingsPerDay: int('SVC_INTERACTION_RATINGS_PER_DAY', 200, 'Interaction ratings (POST /v1/feedback/interaction) one rater may give per UTC day; ratings are free.', { min: 1, max: 1_000_000 }),
  recoveryPerAddressPerMinute: int('SVC_RECOVERY_CALLS_PER_ADDRESS_PER_MINUTE', 20, 'Calls of the public recovery routes (POST /v1/recovery/intent, initiate, complete) one client address may make per minute (429 RECOVERY_RATE_LIMITED past it).', { min: 1, max: 100_000 }),
  recoveryPerAgentPerHour: int('SVC_RECOVERY_CALLS_PER_AGENT_PER_HOUR', 30, 'Calls of the public recovery routes about one agent per hour, from any address (429 RECOVERY_RATE_LIMITED past it).', { min: 1, max: 100_000 }),
  recoveryChannelCodesPerHour: int('SVC_RECOVERY_CHANNEL_CODES_PER_HOUR', 3, 'Recovery codes svc delivers to one agent\'s channel covenant URL per hour (each delivery is an outbound POST to the URL the agent declared).', { min: 1, max: 1000 }),
});

/** A checkpoint origin is also the signing key's name: C2SP signed-note forbids "+" and whitespace in it. */
export function trustSettingsProblems(trust: { logOrigin?: string; directoryCursorSecret?: string }): string[] {
  const problems: string[] = [];
  if (trust.logOrigin !== undefined && (trust.logOrigin === '' || /[+\s]/u.test(trust.logOrigin))) {
    problems.push('SVC_TRUST_LOG_ORIGIN must be a non-empty schema-less URL without "+" or whitespace (it names the checkpoint signing key)');
  }
  if (trust.directoryCursorSecret !== undefined && trust.directoryCursorSecret.length < 32) {
    problems.push('SVC_DIRECTORY_CURSOR_SECRET must be at least 32 characters');
  }
  return problems;
}
