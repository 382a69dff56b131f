/**
 * The passport key on the client's side: an Ed25519 keypair made and kept locally, challenge
 * signing (POST /v1/auth/passport/challenge, then /verify for a session token) and signed requests
 * (amends, recovery steps: docs/api.md, "Signed requests"). The private key never leaves this
 * process: only signatures and the public key are sent.
 *
 * The bytes signed are rebuilt here from the challenge's fields, never taken on trust from the
 * answer's `sign_payload`: a server (or anything between) that handed over other bytes, say those of
 * a custody transfer, cannot get them signed by asking for a session.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';
import { ok, SvcProtocolError, type JsonBody, type SvcClient } from './client';

export interface PassportKeys {
  /** SPKI PEM: what svc stores and shows on the passport. */
  publicKeyPem: string;
  /** PKCS#8 PEM: keep it to yourself (a file of mode 0600). */
  privateKeyPem: string;
}

/** A new Ed25519 keypair for a passport. */
export function generatePassportKeys(): PassportKeys {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

export type PrivateKeyInput = string | Buffer | KeyObject;

/** An Ed25519 private key from PEM (PKCS#8) or a KeyObject; anything else throws. */
export function privateKeyOf(key: PrivateKeyInput): KeyObject {
  const k = typeof key === 'string' || Buffer.isBuffer(key) ? createPrivateKey(key) : key;
  if (k.type !== 'private' || k.asymmetricKeyType !== 'ed25519') throw new TypeError('not an Ed25519 private key');
  return k;
}

/** The SPKI PEM of the public half of a private key. */
export const publicKeyPemOf = (key: PrivateKeyInput): string =>
  createPublicKey(privateKeyOf(key)).export({ type: 'spki', format: 'pem' }).toString();

/** base64 of the raw 64-byte Ed25519 signature over the UTF-8 bytes of `payload`. */
export const signPayload = (key: PrivateKeyInput, payload: string): string =>
  sign(null, Buffer.from(payload, 'utf8'), privateKeyOf(key)).toString('base64');

export const PASSPORT_CHALLENGE_SCHEME = 'svc.passport.challenge.v1';

export interface ChallengeFields {
  agent_id: string;
  challenge_id: string;
  challenge_nonce: string;
  issued_at: string;
  expires_at: string;
}

/** The `svc.passport.challenge.v1` bytes (docs/api.md): six lines joined by LF, no trailing newline. */
export const challengePayload = (c: ChallengeFields): string => [
  PASSPORT_CHALLENGE_SCHEME,
  `agent_id:${c.agent_id.toLowerCase()}`,
  `challenge_id:${c.challenge_id}`,
  `nonce:${c.challenge_nonce}`,
  `issued_at:${c.issued_at}`,
  `expires_at:${c.expires_at}`,
].join('\n');

export type Challenge = ChallengeFields & { sign_payload: string; purpose: string };

const CHALLENGE_FIELDS = ['agent_id', 'challenge_id', 'challenge_nonce', 'issued_at', 'expires_at', 'sign_payload', 'purpose'] as const;

/**
 * A fresh single-use challenge for `agentId` (no key needed). Its fields become bytes that get
 * signed, so they are checked here rather than taken on the document's word: each a string, and the
 * agent the one asked for.
 */
export async function requestChallenge(client: SvcClient, agentId: string, purpose: 'session' | 'recovery' = 'session'): Promise<Challenge> {
  const body = await ok(client.POST('/v1/auth/passport/challenge', { body: { agent_id: agentId, purpose } }));
  for (const name of CHALLENGE_FIELDS) {
    if (typeof (body as Record<string, unknown>)[name] !== 'string') throw new SvcProtocolError(`the challenge has no string ${name}`);
  }
  const c: Challenge = {
    agent_id: body.agent_id, challenge_id: body.challenge_id, challenge_nonce: body.challenge_nonce,
    issued_at: body.issued_at, expires_at: body.expires_at, sign_payload: body.sign_payload, purpose: body.purpose,
  };
  if (c.agent_id.toLowerCase() !== agentId.toLowerCase()) throw new SvcProtocolError(`the challenge is for agent ${c.agent_id}, not ${agentId}`);
  return c;
}

/**
 * The signature (base64) over a challenge. Signs the bytes rebuilt from its fields and refuses a
 * `sign_payload` that differs from them.
 */
export function signChallenge(challenge: Challenge, key: PrivateKeyInput): string {
  const payload = challengePayload(challenge);
  if (challenge.sign_payload !== payload) throw new SvcProtocolError('the challenge\'s sign_payload is not the svc.passport.challenge.v1 bytes of its fields; not signed');
  return signPayload(key, payload);
}

/** svc's verify answer: `session_token` (`svc_session_…`), `token_type`, `expires_in`, `expires_at`. */
export type PassportSession = JsonBody<'/v1/auth/passport/verify', 'post'>;

/**
 * Proves control of the passport key: a challenge, signed locally, exchanged for a session token
 * (`svc_session_…`, 3600 s; `expires_at` in the answer). Use the token as an API key.
 */
export async function passportSession(client: SvcClient, opts: { agentId: string; privateKey: PrivateKeyInput }): Promise<PassportSession> {
  const challenge = await requestChallenge(client, opts.agentId);
  const signature = signChallenge(challenge, opts.privateKey);
  return ok(client.POST('/v1/auth/passport/verify', {
    body: { agent_id: opts.agentId, challenge_id: challenge.challenge_id, signature },
  }));
}

export const SIGNED_REQUEST_SCHEMES = [
  'svc.covenant.amend.v1', 'svc.consolidation.amend.v1', 'svc.policy_binding.amend.v1',
  'svc.recovery.intent.v1', 'svc.recovery.veto.v1', 'svc.recovery.initiate.v1', 'svc.recovery.complete.v1',
  'svc.custody.transfer.v1',
] as const;
export type SignedRequestScheme = (typeof SIGNED_REQUEST_SCHEMES)[number];

/** Lowercase hex SHA-256 of the RFC 8785 (JCS) bytes of `content`. */
export function contentSha256(content: unknown): string {
  const text = canonicalize(content);
  if (typeof text !== 'string') throw new TypeError('content has no JSON representation');
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The bytes of a signed request (docs/api.md): five lines joined by LF. */
export const signedRequestPayload = (scheme: SignedRequestScheme, f: { agentId: string; challengeId: string; nonce: string; content: unknown }): string => [
  scheme,
  `agent_id:${f.agentId.toLowerCase()}`,
  `challenge_id:${f.challengeId.toLowerCase()}`,
  `nonce:${f.nonce}`,
  `content_sha256:${contentSha256(f.content)}`,
].join('\n');

export interface SignedRequest {
  challenge_id: string;
  /** base64 Ed25519 signature over `sign_payload` */
  signature: string;
  sign_payload: string;
}

/**
 * Signs `content` under `scheme` with a fresh challenge (purpose `recovery` for the recovery
 * schemes). `content` is what the scheme speaks for, e.g. `{template_id, params}` for an amend.
 */
export async function signRequest(client: SvcClient, opts: { scheme: SignedRequestScheme; agentId: string; privateKey: PrivateKeyInput; content: unknown }): Promise<SignedRequest> {
  const challenge = await requestChallenge(client, opts.agentId, opts.scheme.startsWith('svc.recovery.') ? 'recovery' : 'session');
  const sign_payload = signedRequestPayload(opts.scheme, { agentId: opts.agentId, challengeId: challenge.challenge_id, nonce: challenge.challenge_nonce, content: opts.content });
  return { challenge_id: challenge.challenge_id, signature: signPayload(opts.privateKey, sign_payload), sign_payload };
}

type AmendScheme = 'svc.covenant.amend.v1' | 'svc.consolidation.amend.v1' | 'svc.policy_binding.amend.v1';

/**
 * The body of an amend route, signed: `content` plus `challenge_id` and `passport_signature`.
 * `POST /v1/me/covenant/amend` and `/v1/me/consolidation-policy/amend` take `{template_id, params}`,
 * `/v1/me/policy-bindings/amend` `{binding_type, params}`.
 */
export async function signedAmend<C extends Record<string, unknown>>(client: SvcClient, opts: { scheme: AmendScheme; agentId: string; privateKey: PrivateKeyInput; content: C }): Promise<C & { challenge_id: string; passport_signature: string }> {
  const s = await signRequest(client, opts);
  return { ...opts.content, challenge_id: s.challenge_id, passport_signature: s.signature };
}
