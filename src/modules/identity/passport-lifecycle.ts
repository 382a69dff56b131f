/**
 * The passport's key lifecycle beyond registration and revocation:
 *
 * - challenges: issued (the public challenge route, and custody's signed steps), kept newest first
 *   per agent, consumed once;
 * - the challenge exchange (POST /v1/auth/passport/verify): a signature over a challenge's
 *   sign_payload by the passport key, or by the key the latest rotation replaced while its grace runs;
 * - rotation (POST /v1/me/passport/rotate, root key): a new key, proved by its own signature over a
 *   fresh challenge's sign_payload; the replaced key, and the session tokens issued under it, work for
 *   ROTATION_GRACE_SECONDS more, then never; a `passport.rotated` trust log entry in the same transaction;
 * - ephemeral passports (POST /v1/auth/passport/ephemeral, root key or a signed challenge): a
 *   session-scoped passport with its own id and a session token bound to it (trust level `ephemeral`).
 */
import { createPublicKey } from 'node:crypto';
import { ApiError } from '../../http/errors';
import type { AuthContext } from '../../http/route-config';
import { iso, type Clock } from '../../lib/clock';
import { KeyFormatError, parseEd25519PublicKey, publicKeyPem, verifyEd25519 } from '../../lib/ed25519';
import { sha256hex } from '../../lib/hash';
import { isUuid, newId, randomToken } from '../../lib/ids';
import { passportChallengePayload } from '../../lib/signing';
import { issueToken, SESSION_TTL_SECONDS, type KeyEventSink } from './keys';
import type { LifecycleStore } from './lifecycle-store';
import { EPHEMERAL_TTL_MAX } from './schemas';
import type { IdentityStore } from './store';

/** Seconds the replaced key keeps verifying challenges after a rotation (the API contract's rotation grace). */
export const ROTATION_GRACE_SECONDS = 300;
/** Ephemeral passports (their session tokens) one agent may have working at once. */
export const MAX_ACTIVE_EPHEMERAL_PASSPORTS = 100;
/** Challenges kept per agent (the newest): the challenge route is public, so the table grows with the agents, not with the calls. */
export const MAX_OPEN_CHALLENGES = 20;
const DAY = 86_400_000;

export const spkiSha256 = (pem: string): string => sha256hex(createPublicKey(pem).export({ format: 'der', type: 'spki' }));

export interface LifecycleDeps {
  store: IdentityStore;
  lifecycle: LifecycleStore;
  clock: Clock;
  /** Lifetime of a challenge (SVC_CHALLENGE_TTL_SECONDS). */
  challengeTtlSeconds: number;
  onKeyEvent?: KeyEventSink;
  /** Cached token lookups are dropped after a rotation (sessions of older keys stop at once). */
  forgetCachedTokens: () => void;
  /** Trust levels of the agent for a request made with an ephemeral passport's session. */
  ephemeralLevels: (agentId: string) => Promise<string[]>;
}

export interface EphemeralInput { agent_id?: string; challenge_id?: string; signature?: string; ttl_seconds?: number }

export function createPassportLifecycle(deps: LifecycleDeps) {
  const { store, lifecycle, clock } = deps;

  /**
   * A challenge of the agent, checked and consumed: unknown (or another agent's) 404, used 409, expired
   * 401. The attempt consumes it whatever follows (single use).
   */
  async function takeChallenge(agentId: string, challengeId: string) {
    const challenge = isUuid(challengeId) ? await store.findChallenge(challengeId.toLowerCase(), agentId) : undefined;
    if (!challenge) throw new ApiError(404, 'CHALLENGE_NOT_FOUND', 'No challenge with this id for this agent: request one from POST /v1/auth/passport/challenge');
    if (challenge.used_at !== null) throw new ApiError(409, 'CHALLENGE_ALREADY_USED', 'This challenge nonce was already used; request a new challenge');
    const now = clock.now();
    if (Number(challenge.expires_at) <= now) throw new ApiError(401, 'CHALLENGE_EXPIRED', 'This challenge has expired; request a new challenge');
    if (!(await store.consumeChallenge(challenge.challenge_id, now))) {
      throw new ApiError(409, 'CHALLENGE_ALREADY_USED', 'This challenge nonce was already used; request a new challenge');
    }
    const payload = passportChallengePayload({
      agentId, challengeId: challenge.challenge_id, nonce: challenge.nonce,
      issuedAt: iso(Number(challenge.issued_at)), expiresAt: iso(Number(challenge.expires_at)),
    });
    return { challengeId: challenge.challenge_id, payload: Buffer.from(payload, 'utf8') };
  }

  /**
   * The challenge exchange's check: the signature over the challenge's sign_payload verifies against
   * the passport key, or against the key the latest rotation replaced while its grace runs. Returns
   * the key version the signature proved and, for the replaced key, when its grace ends (a session
   * issued on it lasts no longer than the key).
   */
  async function verifySignedChallenge(agentId: string, challengeId: string, signature: string): Promise<{ keyVersion: number; until: number | null }> {
    const { payload } = await takeChallenge(agentId, challengeId);
    const [passport, rotation] = await Promise.all([store.findPassport(agentId), lifecycle.findRotation(agentId)]);
    if (!passport) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
    if (passport.revoked_at !== null) throw new ApiError(403, 'PASSPORT_REVOKED', 'This passport has been revoked');
    const version = rotation ? Number(rotation.key_version) : 0;
    if (verifyEd25519(passport.public_key_pem, payload, signature)) return { keyVersion: version, until: null };
    // The replaced key, while its grace runs and only if the key it handed over to is still the
    // passport's (a later change of the key by another path ends the grace).
    if (rotation && Number(rotation.grace_until) > clock.now() && rotation.current_key_sha256 === spkiSha256(passport.public_key_pem)
      && verifyEd25519(rotation.previous_key_pem, payload, signature)) {
      return { keyVersion: version - 1, until: Number(rotation.grace_until) };
    }
    throw new ApiError(401, 'PASSPORT_SIGNATURE_INVALID', 'The signature does not verify against this agent\'s passport key over sign_payload');
  }

  /** A session token issued on key `keyVersion`, ending after `ttlSeconds` or at `until` (the key's grace end), whichever is first. */
  function sessionRow(agentId: string, ttlSeconds: number, key: { keyVersion: number; until: number | null }, ephemeralPassportId: string | null) {
    const session = issueToken(clock, agentId, 'session', ttlSeconds);
    const expiresAt = Math.min(session.row.expires_at as number, key.until ?? Infinity);
    return {
      token: session.token,
      expiresIn: Math.floor((expiresAt - session.row.created_at) / 1000),
      row: { ...session.row, expires_at: expiresAt, passport_key_version: key.keyVersion, ephemeral_passport_id: ephemeralPassportId },
    };
  }

  return {
    /**
     * A new challenge of the agent (whether its passport may use it is the caller's check). Only the
     * agent's newest MAX_OPEN_CHALLENGES are kept (a client signs the one it just asked for), and
     * challenges expired a day ago go.
     */
    async issueChallenge(agentId: string) {
      const now = clock.now();
      const row = {
        challenge_id: newId(), agent_id: agentId, nonce: randomToken(32),
        issued_at: now, expires_at: now + deps.challengeTtlSeconds * 1000, used_at: null,
      };
      await store.insertChallenge(row);
      await store.trimChallenges(agentId, MAX_OPEN_CHALLENGES);
      await store.deleteExpiredChallenges(now - DAY);
      return { challengeId: row.challenge_id, nonce: row.nonce, issuedAt: iso(now), expiresAt: iso(row.expires_at) };
    },

    /** POST /v1/auth/passport/verify: a signed challenge for a session token (3600 s, or until the signing key's grace ends). */
    async verifyChallenge(input: { agent_id: string; challenge_id: string; signature: string }) {
      const id = input.agent_id.toLowerCase();
      const key = await verifySignedChallenge(id, input.challenge_id, input.signature);
      const session = sessionRow(id, SESSION_TTL_SECONDS, key, null);
      await store.insertKey(session.row);
      return {
        status: 'success',
        agent_id: id,
        session_token: session.token,
        token_type: 'Bearer',
        expires_in: session.expiresIn,
        expires_at: iso(session.row.expires_at),
      };
    },

    /** POST /v1/me/passport/rotate (root key). */
    async rotate(auth: AuthContext, input: { public_key: string; challenge_id: string; signature: string }) {
      const agentId = auth.agentId;
      let newPem: string;
      try {
        newPem = publicKeyPem(parseEd25519PublicKey(input.public_key));
      } catch (e) {
        const why = e instanceof KeyFormatError ? e.message : 'unreadable key';
        throw new ApiError(422, 'INVALID_PASSPORT_PUBLIC_KEY', `public_key is not a valid Ed25519 public key: ${why}`);
      }
      const newSha = spkiSha256(newPem);
      const unchanged = () => new ApiError(409, 'PASSPORT_KEY_UNCHANGED', 'public_key is the passport\'s current key: rotate to a new key');
      const revoked = () => new ApiError(403, 'PASSPORT_REVOKED', 'This passport has been revoked: its key can no longer be rotated');
      // Refusals that need no challenge come before one is spent.
      const before = await store.findPassport(agentId);
      if (!before || before.revoked_at !== null) throw revoked();
      if (spkiSha256(before.public_key_pem) === newSha) throw unchanged();
      const { challengeId, payload } = await takeChallenge(agentId, input.challenge_id);
      if (!verifyEd25519(newPem, payload, input.signature)) {
        throw new ApiError(401, 'PASSPORT_SIGNATURE_INVALID',
          'signature does not verify against public_key over the challenge\'s sign_payload: sign it with the NEW private key (proof of possession)');
      }
      // Under the passport row's lock: a concurrent rotation or revocation is seen, not overwritten.
      const done = await lifecycle.withLockedPassport(agentId, async (trx, passport, rotation) => {
        if (!passport) throw revoked();
        const oldPem = passport.public_key_pem;
        const oldSha = spkiSha256(oldPem);
        if (oldSha === newSha) throw unchanged();
        const now = clock.now();
        const keyVersion = (rotation ? Number(rotation.key_version) : 0) + 1;
        const graceUntil = now + ROTATION_GRACE_SECONDS * 1000;
        const appended = await deps.onKeyEvent?.(trx, {
          kind: 'passport.rotated', agentId, at: now,
          data: {
            previous_public_key_sha256: oldSha, public_key_sha256: newSha, key_version: keyVersion,
            grace_seconds: ROTATION_GRACE_SECONDS, previous_key_valid_until: iso(graceUntil), challenge_id: challengeId,
          },
        });
        const logIndex = appended ? appended.index : null;
        await lifecycle.writeRotation(trx, {
          agent_id: agentId, key_version: keyVersion, previous_key_pem: oldPem, previous_key_sha256: oldSha,
          current_key_sha256: newSha, rotated_at: now, grace_until: graceUntil, log_index: logIndex ?? -1,
        }, newPem);
        return { oldSha, keyVersion, now, graceUntil, logIndex };
      });
      // Sessions issued under a key older than the replaced one stop at once; the replaced key's at its grace's end.
      deps.forgetCachedTokens();
      return {
        status: 'success',
        agent_id: agentId,
        did: `did:svc:${agentId}`,
        public_key: newPem,
        public_key_sha256: newSha,
        key_algorithm: 'ed25519',
        derivation_method: 'operator_derived',
        key_version: done.keyVersion,
        rotated_at: iso(done.now),
        previous_public_key_sha256: done.oldSha,
        previous_key_valid_until: iso(done.graceUntil),
        rotation_grace_seconds: ROTATION_GRACE_SECONDS,
        log_index: done.logIndex,
      };
    },

    /**
     * POST /v1/auth/passport/ephemeral: with the root key as Bearer, or (no Bearer) agent_id +
     * challenge_id + signature over the challenge's sign_payload by the passport key.
     */
    async issueEphemeral(auth: AuthContext | undefined, input: EphemeralInput) {
      const ttl = input.ttl_seconds ?? EPHEMERAL_TTL_MAX;
      let agentId: string;
      let key: { keyVersion: number; until: number | null };
      let via: 'root_key' | 'passport_signature';
      if (auth) {
        if (auth.keyKind !== 'root') {
          throw new ApiError(403, 'ROOT_KEY_REQUIRED', 'An ephemeral passport is issued for the root API key or a passport signature; a scoped key or session token does not suffice');
        }
        const conflicting = [
          ...(input.challenge_id !== undefined ? ['challenge_id'] : []), ...(input.signature !== undefined ? ['signature'] : []),
          ...(input.agent_id !== undefined && input.agent_id.toLowerCase() !== auth.agentId ? ['agent_id'] : []),
        ];
        if (conflicting.length > 0) {
          throw new ApiError(422, 'EPHEMERAL_CREDENTIALS_CONFLICT',
            `Send either the root API key as Bearer or agent_id, challenge_id and signature, not both (${conflicting.join(', ')} given with the key${conflicting.includes('agent_id') ? '; agent_id names another agent' : ''})`,
            { conflicting });
        }
        agentId = auth.agentId;
        const rotation = await lifecycle.findRotation(agentId);
        key = { keyVersion: rotation ? Number(rotation.key_version) : 0, until: null };
        via = 'root_key';
      } else {
        const missing = [
          ...(input.agent_id === undefined ? ['agent_id'] : []), ...(input.challenge_id === undefined ? ['challenge_id'] : []),
          ...(input.signature === undefined ? ['signature'] : []),
        ];
        if (missing.length > 0) {
          throw new ApiError(422, 'PASSPORT_SIGNATURE_REQUIRED',
            `${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} required without a Bearer key: send the root API key, or agent_id, challenge_id and signature (base64 of the raw Ed25519 signature over the challenge's sign_payload)`,
            { missing });
        }
        agentId = (input.agent_id as string).toLowerCase();
        key = await verifySignedChallenge(agentId, input.challenge_id as string, input.signature as string);
        via = 'passport_signature';
      }
      const passportId = newId();
      const session = sessionRow(agentId, ttl, key, passportId);
      const createdAt = session.row.created_at;
      const expiresAt = session.row.expires_at;
      await lifecycle.withLockedPassport(agentId, async (trx, passport) => {
        if (!passport) throw new ApiError(403, 'PASSPORT_REVOKED', 'This passport has been revoked: no ephemeral passport can be issued for it');
        if (await lifecycle.activeEphemeralCount(trx, agentId, createdAt) >= MAX_ACTIVE_EPHEMERAL_PASSPORTS) {
          throw new ApiError(409, 'EPHEMERAL_PASSPORT_LIMIT_REACHED',
            `An agent has at most ${MAX_ACTIVE_EPHEMERAL_PASSPORTS} ephemeral passports working at once: wait for one to expire, or use a shorter ttl_seconds`,
            { max_active_ephemeral_passports: MAX_ACTIVE_EPHEMERAL_PASSPORTS });
        }
        await lifecycle.insertEphemeral(trx, {
          ephemeral_passport_id: passportId, agent_id: agentId, issued_via: via, created_at: createdAt, expires_at: expiresAt,
        }, session.row, createdAt - 30 * DAY);
      });
      return {
        status: 'success',
        ephemeral_passport: {
          ephemeral_passport_id: passportId,
          agent_id: agentId,
          did: `did:svc:${agentId}`,
          trust_levels: await deps.ephemeralLevels(agentId),
          issued_via: via,
          created_at: iso(createdAt),
          expires_at: iso(expiresAt),
        },
        session_token: session.token,
        token_type: 'Bearer',
        expires_in: session.expiresIn,
        expires_at: iso(expiresAt),
      };
    },

    /** Ephemeral passports issued in the last 30 days (trust adoption). */
    ephemeralLast30Days: () => lifecycle.countEphemeralSince(clock.now() - 30 * DAY),
  };
}

export type PassportLifecycle = ReturnType<typeof createPassportLifecycle>;
