import { canonicalJson } from '../infra/tlog/jcs';
import { sha256hex } from './hash';

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

/**
 * Schemes of signed requests: an Ed25519 signature by the passport key (or, for a recovery intent,
 * the recovery key) over a challenge from POST /v1/auth/passport/challenge and the request's content.
 *
 *   <scheme>
 *   agent_id:<agent uuid, lowercase>
 *   challenge_id:<challenge uuid, lowercase>
 *   nonce:<challenge_nonce>
 *   content_sha256:<lowercase hex SHA-256 of the RFC 8785 (JCS) bytes of the request's content>
 *
 * The content is the part of the body the signature speaks for (each scheme's function below names
 * it), so a signature cannot be replayed onto other content, by another agent or with another
 * challenge. Documented with a worked example in docs/trust.md.
 */
export const COVENANT_AMEND_SCHEME = 'svc.covenant.amend.v1';
export const CONSOLIDATION_AMEND_SCHEME = 'svc.consolidation.amend.v1';
export const POLICY_BINDING_AMEND_SCHEME = 'svc.policy_binding.amend.v1';
export const RECOVERY_INTENT_SCHEME = 'svc.recovery.intent.v1';
export const RECOVERY_VETO_SCHEME = 'svc.recovery.veto.v1';

export const SIGNED_REQUEST_SCHEMES = [
  COVENANT_AMEND_SCHEME, CONSOLIDATION_AMEND_SCHEME, POLICY_BINDING_AMEND_SCHEME, RECOVERY_INTENT_SCHEME, RECOVERY_VETO_SCHEME,
] as const;
export type SignedRequestScheme = (typeof SIGNED_REQUEST_SCHEMES)[number];

export interface SignedRequestFields {
  agentId: string;
  challengeId: string;
  nonce: string;
  /** What the signature speaks for (a JSON value); hashed as its RFC 8785 bytes. */
  content: unknown;
}

/** Lowercase hex SHA-256 of the RFC 8785 bytes of `content`. */
export const contentSha256 = (content: unknown): string => sha256hex(canonicalJson(content));

/** The bytes (UTF-8) signed for `scheme`. */
export function signedRequestPayload(scheme: SignedRequestScheme, f: SignedRequestFields): string {
  return [
    scheme,
    `agent_id:${f.agentId.toLowerCase()}`,
    `challenge_id:${f.challengeId.toLowerCase()}`,
    `nonce:${f.nonce}`,
    `content_sha256:${contentSha256(f.content)}`,
  ].join('\n');
}

/** svc.consolidation.amend.v1: the content is {template_id, params} as sent. */
export const consolidationAmendPayload = (f: Omit<SignedRequestFields, 'content'> & { templateId: string; params: unknown }): string =>
  signedRequestPayload(CONSOLIDATION_AMEND_SCHEME, { ...f, content: { template_id: f.templateId, params: f.params } });

/** svc.policy_binding.amend.v1: the content is {binding_type, params} as sent. */
export const policyBindingAmendPayload = (f: Omit<SignedRequestFields, 'content'> & { bindingType: string; params: unknown }): string =>
  signedRequestPayload(POLICY_BINDING_AMEND_SCHEME, { ...f, content: { binding_type: f.bindingType, params: f.params } });
