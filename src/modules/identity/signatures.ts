/**
 * Signed requests: "verify a passport signature over scheme X for challenge Y". The one place that
 * consumes a challenge from POST /v1/auth/passport/challenge for a signed request (amends of the
 * covenant, consolidation policy and policy bindings; recovery veto) and checks the Ed25519 signature
 * over the scheme's bytes (src/lib/signing.ts) against the agent's passport key.
 *
 * Order: a missing challenge_id or signature is PASSPORT_SIGNATURE_REQUIRED before anything is read;
 * then the challenge must be the agent's, unused and unexpired; it is consumed by this attempt
 * whatever the outcome (single use, as for session verification); then the passport must be active
 * and the signature must verify over the bytes of this request's content.
 */
import { createPublicKey } from 'node:crypto';
import { ApiError } from '../../http/errors';
import type { Clock } from '../../lib/clock';
import { verifyEd25519 } from '../../lib/ed25519';
import { sha256hex } from '../../lib/hash';
import { isUuid } from '../../lib/ids';
import { signedRequestPayload, type SignedRequestScheme } from '../../lib/signing';
import type { IdentityStore } from './store';

export interface SignedRequest {
  agentId: string;
  scheme: SignedRequestScheme;
  challengeId?: string | null;
  signature?: string | null;
  /** What the signature speaks for (each scheme names it in src/lib/signing.ts). */
  content: unknown;
}

export interface VerifiedSignature {
  challengeId: string;
  /** SHA-256 (hex) of the SPKI bytes of the key that verified. */
  publicKeySha256: string;
  /** SHA-256 (hex) of the signed payload bytes. */
  payloadSha256: string;
}

/** Codes the verifier can answer, for the routes' discovery (`errors`). */
export const SIGNED_REQUEST_ERRORS = {
  401: ['PASSPORT_SIGNATURE_INVALID', 'CHALLENGE_EXPIRED'],
  403: ['PASSPORT_REVOKED'],
  404: ['CHALLENGE_NOT_FOUND'],
  409: ['CHALLENGE_ALREADY_USED'],
  422: ['PASSPORT_SIGNATURE_REQUIRED'],
} as const;

export type PassportSignatureVerifier = (req: SignedRequest) => Promise<VerifiedSignature>;

export function createPassportSignatures(deps: { store: Pick<IdentityStore, 'findChallenge' | 'consumeChallenge' | 'findPassport'>; clock: Clock }): PassportSignatureVerifier {
  const { store, clock } = deps;
  return async (req) => {
    const agentId = req.agentId.toLowerCase();
    const missing = [
      ...(typeof req.challengeId === 'string' && req.challengeId.trim() !== '' ? [] : ['challenge_id']),
      ...(typeof req.signature === 'string' && req.signature.trim() !== '' ? [] : ['passport_signature']),
    ];
    if (missing.length > 0) {
      throw new ApiError(422, 'PASSPORT_SIGNATURE_REQUIRED',
        `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} required: sign the ${req.scheme} bytes for a challenge from POST /v1/auth/passport/challenge with your passport key`,
        { scheme: req.scheme, missing });
    }
    const challengeId = (req.challengeId as string).toLowerCase();
    const challenge = isUuid(challengeId) ? await store.findChallenge(challengeId, agentId) : undefined;
    if (!challenge) throw new ApiError(404, 'CHALLENGE_NOT_FOUND', 'No challenge with this challenge_id for this agent: request one from POST /v1/auth/passport/challenge');
    if (challenge.used_at !== null) throw new ApiError(409, 'CHALLENGE_ALREADY_USED', 'This challenge was already used; request a new challenge');
    const now = clock.now();
    if (Number(challenge.expires_at) <= now) throw new ApiError(401, 'CHALLENGE_EXPIRED', 'This challenge has expired; request a new challenge');
    if (!(await store.consumeChallenge(challenge.challenge_id, now))) {
      throw new ApiError(409, 'CHALLENGE_ALREADY_USED', 'This challenge was already used; request a new challenge');
    }
    const passport = await store.findPassport(agentId);
    if (!passport || passport.revoked_at !== null) throw new ApiError(403, 'PASSPORT_REVOKED', 'This passport has been revoked: it can no longer sign');
    const payload = signedRequestPayload(req.scheme, { agentId, challengeId: challenge.challenge_id, nonce: challenge.nonce, content: req.content });
    if (!verifyEd25519(passport.public_key_pem, Buffer.from(payload, 'utf8'), req.signature as string)) {
      throw new ApiError(401, 'PASSPORT_SIGNATURE_INVALID',
        `passport_signature does not verify against this agent's passport key over the ${req.scheme} bytes of this challenge and this request's content`,
        { scheme: req.scheme });
    }
    return {
      challengeId: challenge.challenge_id,
      publicKeySha256: sha256hex(createPublicKey(passport.public_key_pem).export({ format: 'der', type: 'spki' })),
      payloadSha256: sha256hex(payload),
    };
  };
}
