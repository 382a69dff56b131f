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
/** The later recovery steps, each signed anew over a fresh challenge (proof on every step). */
export const RECOVERY_INITIATE_SCHEME = 'svc.recovery.initiate.v1';
export const RECOVERY_COMPLETE_SCHEME = 'svc.recovery.complete.v1';
/** The canonical custody-transfer bytes, signed by the outgoing custodian's passport key. */
export const CUSTODY_TRANSFER_SCHEME = 'svc.custody.transfer.v1';

export const SIGNED_REQUEST_SCHEMES = [
  COVENANT_AMEND_SCHEME, CONSOLIDATION_AMEND_SCHEME, POLICY_BINDING_AMEND_SCHEME, RECOVERY_INTENT_SCHEME, RECOVERY_VETO_SCHEME,
  RECOVERY_INITIATE_SCHEME, RECOVERY_COMPLETE_SCHEME, CUSTODY_TRANSFER_SCHEME,
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

/** svc.covenant.amend.v1: the content is {template_id, params} as sent. */
export const covenantAmendPayload = (f: Omit<SignedRequestFields, 'content'> & { templateId: string; params: unknown }): string =>
  signedRequestPayload(COVENANT_AMEND_SCHEME, { ...f, content: { template_id: f.templateId, params: f.params } });

/** svc.recovery.intent.v1 (signed by the recovery key): the content is {agent_id, new_passport_public_key} as sent. */
export const recoveryIntentPayload = (f: Omit<SignedRequestFields, 'content'> & { newPassportPublicKey: string }): string =>
  signedRequestPayload(RECOVERY_INTENT_SCHEME, { ...f, content: { agent_id: f.agentId, new_passport_public_key: f.newPassportPublicKey } });

/** svc.recovery.initiate.v1: the content is {agent_id} (the agent has one open intent at a time). */
export const recoveryInitiatePayload = (f: Omit<SignedRequestFields, 'content'>): string =>
  signedRequestPayload(RECOVERY_INITIATE_SCHEME, { ...f, content: { agent_id: f.agentId } });

/** svc.recovery.veto.v1 and svc.recovery.complete.v1: the content is {intent_id}. */
export const recoveryVetoPayload = (f: Omit<SignedRequestFields, 'content'> & { intentId: string }): string =>
  signedRequestPayload(RECOVERY_VETO_SCHEME, { ...f, content: { intent_id: f.intentId } });
export const recoveryCompletePayload = (f: Omit<SignedRequestFields, 'content'> & { intentId: string }): string =>
  signedRequestPayload(RECOVERY_COMPLETE_SCHEME, { ...f, content: { intent_id: f.intentId } });

/**
 * svc.custody.transfer.v1: the content is {incoming_owner_identifier, incoming_public_key}, the key as
 * the PEM svc normalised it to (the transfer intent returns the content and these bytes).
 */
export const custodyTransferPayload = (f: Omit<SignedRequestFields, 'content'> & { incomingOwnerIdentifier: string; incomingPublicKeyPem: string }): string =>
  signedRequestPayload(CUSTODY_TRANSFER_SCHEME, {
    ...f, content: { incoming_owner_identifier: f.incomingOwnerIdentifier, incoming_public_key: f.incomingPublicKeyPem },
  });
