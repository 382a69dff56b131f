import { group, int, optionalStr } from './define';

export const trustSettings = group('Trust', {
  logOrigin: optionalStr('SVC_TRUST_LOG_ORIGIN', 'Origin line of the trust log\'s checkpoints and the name of its signing key (a schema-less URL without spaces or "+"). Default: the host and path of SVC_BASE_URL followed by /trust-log.'),
  logPrivateKey: optionalStr('SVC_TRUST_LOG_PRIVATE_KEY', 'PEM (PKCS#8) Ed25519 private key that signs trust log checkpoints. Unset: a key is generated at first start and kept in the database; every instance on that database uses it.'),
  checkpointIntervalMs: int('SVC_TRUST_CHECKPOINT_INTERVAL_MS', 1000, 'Least time between two checkpoints an instance signs; a checkpoint request in between answers the newest signed one.', { min: 0, max: 3_600_000 }),
  ratingsPerDay: int('SVC_INTERACTION_RATINGS_PER_DAY', 200, 'Interaction ratings (POST /v1/feedback/interaction) one rater may give per UTC day; ratings are free.', { min: 1, max: 1_000_000 }),
});

/** A checkpoint origin is also the signing key's name: C2SP signed-note forbids "+" and whitespace in it. */
export function trustSettingsProblems(trust: { logOrigin?: string }): string[] {
  if (trust.logOrigin !== undefined && (trust.logOrigin === '' || /[+\s]/u.test(trust.logOrigin))) {
    return ['SVC_TRUST_LOG_ORIGIN must be a non-empty schema-less URL without "+" or whitespace (it names the checkpoint signing key)'];
  }
  return [];
}
