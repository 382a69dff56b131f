/**
 * Signed requests: "verify a passport signature over scheme X for challenge Y". The one place that
 * consumes a challenge from POST /v1/auth/passport/challenge for a signed request (amends of the
 * covenant, consolidation policy and policy bindings; recovery veto) and checks the Ed25519 signature
 * over the scheme's bytes (src/lib/signing.ts) against the agent's passport key.
 *
 * Order: a missing challenge_id or signature is PASSPORT_SIGNATURE_REQUIRED before anything is read;
 * then the challenge must be the agent's, unused and unexpired; it is consumed by this attempt
 * whatever the outcome (single use, as for session verification); then the passport must be active
 * and the signature must verify over the bytes of this request's content. A step signed by another key
 * (a recovery key; a recovery's new passport key as co-signer) names it in `signer` / `cosigners`.
 */
import { createPublicKey } from 'node:crypto';
import { ApiError } from '../../http/errors';
import type { Clock } from '../../lib/clock';
import { verifyEd25519 } from '../../lib/ed25519';
import { sha256hex } from '../../lib/hash';
import { isUuid } from '../../lib/ids';
import { contentSha256, signedRequestPayload, type SignedRequestScheme } from '../../lib/signing';
import type { IdentityStore } from './store';

export interface SignedRequest {
  agentId: string;
  scheme: SignedRequestScheme;
  challengeId?: string | null;
  signature?: string | null;
  /** What the signature speaks for (each scheme names it in src/lib/signing.ts). */
  content: unknown;
  /**
   * When the signature is not by the agent's passport key: the body field it came in and the key that
   * must have made it (a recovery key, a recovery's new passport key). The passport's state is then
   * not consulted (a recovery may replace a revoked passport).
   */
  signer?: { field: string; publicKeyPem: string };
  /** Further signatures over the same bytes (one challenge), each by its own key: a recovery completion is also signed by the new passport key. */
  cosigners?: { field: string; signature?: string | null; publicKeyPem: string }[];
}

export interface VerifiedSignature {
  challengeId: string;
  /** The challenge's nonce (spent: publishing it lets anyone rebuild the signed bytes). */
  nonce: string;
  /** The signature as standard base64 of its 64 bytes (however it was sent). */
  signature: string;
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
    const given = (v: string | null | undefined) => typeof v === 'string' && v.trim() !== '';
    const signatureField = req.signer?.field ?? 'passport_signature';
    const missing = [
      ...(given(req.challengeId) ? [] : ['challenge_id']),
      ...(given(req.signature) ? [] : [signatureField]),
      ...(req.cosigners ?? []).filter((c) => !given(c.signature)).map((c) => c.field),
    ];
    if (missing.length > 0) {
      throw new ApiError(422, 'PASSPORT_SIGNATURE_REQUIRED',
        `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} required: sign the ${req.scheme} bytes for a challenge from POST /v1/auth/passport/challenge with ${req.signer ? 'the key this step names' : 'your passport key'}`,
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
    let signerPem: string;
    if (req.signer) {
      signerPem = req.signer.publicKeyPem;
    } else {
      const passport = await store.findPassport(agentId);
      if (!passport || passport.revoked_at !== null) throw new ApiError(403, 'PASSPORT_REVOKED', 'This passport has been revoked: it can no longer sign');
      signerPem = passport.public_key_pem;
    }
    const payload = signedRequestPayload(req.scheme, { agentId, challengeId: challenge.challenge_id, nonce: challenge.nonce, content: req.content });
    const bytes = Buffer.from(payload, 'utf8');
    for (const s of [{ field: signatureField, signature: req.signature, publicKeyPem: signerPem }, ...(req.cosigners ?? [])]) {
      if (!verifyEd25519(s.publicKeyPem, bytes, s.signature as string)) {
        const whose = s.field === 'passport_signature' && !req.signer ? "this agent's passport key" : `the key ${s.field} must be made with`;
        throw new ApiError(401, 'PASSPORT_SIGNATURE_INVALID',
          `${s.field} does not verify against ${whose} over the ${req.scheme} bytes of this challenge and this request's content`,
          { scheme: req.scheme, field: `body.${s.field}`, content_sha256: contentSha256(req.content) });
      }
    }
    return {
      challengeId: challenge.challenge_id,
      nonce: challenge.nonce,
      signature: Buffer.from((req.signature as string).replace(/\s+/g, '').replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('base64'),
      publicKeySha256: sha256hex(createPublicKey(signerPem).export({ format: 'der', type: 'spki' })),
      payloadSha256: sha256hex(payload),
    };
  };
}
