/**
 * Canonical signing payloads. One function per scheme; the bytes are UTF-8 of the lines below joined
 * by a single "\n" (no trailing newline). Documented byte for byte in docs/api.md.
 *
 * svc.passport.challenge.v1
 *   svc.passport.challenge.v1
 *   agent_id:<agent uuid, lowercase>
 *   challenge_id:<challenge uuid>
 *   nonce:<challenge_nonce>
 *   issued_at:<ISO 8601 UTC with milliseconds>
 *   expires_at:<ISO 8601 UTC with milliseconds>
 */
export const PASSPORT_CHALLENGE_SCHEME = 'svc.passport.challenge.v1';

export interface ChallengeFields {
  agentId: string;
  challengeId: string;
  nonce: string;
  issuedAt: string;
  expiresAt: string;
}

export function passportChallengePayload(f: ChallengeFields): string {
  return [
    PASSPORT_CHALLENGE_SCHEME,
    `agent_id:${f.agentId.toLowerCase()}`,
    `challenge_id:${f.challengeId}`,
    `nonce:${f.nonce}`,
    `issued_at:${f.issuedAt}`,
    `expires_at:${f.expiresAt}`,
  ].join('\n');
}
