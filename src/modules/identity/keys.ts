/**
 * API keys of the identity module: minting root keys and session tokens, authenticating any
 * presented token (with the short-lived lookup cache), and the scoped sub-keys of
 * POST/GET/DELETE /v1/me/keys with their trust log events.
 */
import type { Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import type { AuthContext, KeyKind } from '../../http/route-config';
import type { Database } from '../../infra/db/schema';
import { iso, type Clock } from '../../lib/clock';
import { sha256hex } from '../../lib/hash';
import { isUuid, newId, randomToken } from '../../lib/ids';
import type { IdentityStore } from './store';

export const API_KEY_PREFIX = 'svc_';
export const SESSION_PREFIX = 'svc_session_';
export const SESSION_TTL_SECONDS = 3600;
/** Active scoped keys one agent may hold. */
export const MAX_ACTIVE_SCOPED_KEYS = 50;
/** Revoked or expired scoped keys GET /v1/me/keys lists besides the active ones (the newest). */
export const LISTED_INACTIVE_KEYS = 50;

/** A scoped key created or revoked, the passport revoked or its key rotated; `data` carries no secret. */
export type KeyEvent = {
  kind: 'key.created' | 'key.revoked';
  agentId: string;
  at: number;
  data: { key_id: string; scopes: string[]; label: string | null; expires_at: string | null };
} | {
  kind: 'passport.revoked';
  agentId: string;
  at: number;
  /** SHA-256 (hex) of the revoked key's SPKI bytes. */
  data: { public_key_sha256: string };
} | {
  kind: 'passport.rotated';
  agentId: string;
  at: number;
  /** Keys named by the SHA-256 (hex) of their SPKI bytes; the replaced key verifies until previous_key_valid_until. */
  data: {
    previous_public_key_sha256: string; public_key_sha256: string; key_version: number;
    grace_seconds: number; previous_key_valid_until: string; challenge_id: string;
  };
};

/** Records a key event in the caller's transaction (the trust log); returns the entry's index when it appended one. */
export type KeyEventSink = (trx: Transaction<Database>, event: KeyEvent) => Promise<{ index: number } | void>;

/** A new token and the api_keys row that stores its SHA-256 (the token itself is never stored). */
export function issueToken(clock: Clock, agentId: string, kind: KeyKind, ttlSeconds?: number) {
  const token = (kind === 'session' ? SESSION_PREFIX : API_KEY_PREFIX) + randomToken(32);
  const now = clock.now();
  return {
    token,
    row: {
      key_hash: sha256hex(token), agent_id: agentId, kind, scopes: '[]', label: null,
      created_at: now, expires_at: ttlSeconds ? now + ttlSeconds * 1000 : null, revoked_at: null, key_id: null,
    },
  };
}

export interface KeysDeps {
  store: IdentityStore;
  clock: Clock;
  /** Milliseconds a verified token lookup may be reused (0 = every request reads the database). */
  authCacheMs?: number;
  /** Records a scoped key's creation or revocation (the trust log), in that change's transaction. */
  onKeyEvent?: KeyEventSink;
}

export function createKeys(deps: KeysDeps) {
  const { store, clock } = deps;
  const authCache = createAuthCache(deps.authCacheMs ?? 0);
  const logged = (event: KeyEvent) => {
    const sink = deps.onKeyEvent;
    return sink ? async (trx: Transaction<Database>) => {
      await sink(trx, event);
    } : undefined;
  };

  return {
    /** Forgets every cached token lookup (a revocation, a tier change): the next request reads the database. */
    forgetCachedTokens() {
      authCache.clear();
    },

    async authenticate(token: string): Promise<AuthContext | undefined> {
      if (!token.startsWith(API_KEY_PREFIX) || token.length > 200) return undefined;
      const now = clock.now();
      // Keyed by the token itself (it is in this request's memory anyway): a hit costs no hashing.
      const hit = authCache.get(token, now);
      if (hit) return hit.expiresAt !== null && hit.expiresAt <= now ? undefined : hit.ctx;
      // A revocation or tier change that clears the cache while this lookup is out must not see the
      // row read before it cached afterwards: the answer is cached only if no clear came between.
      const generation = authCache.generation();
      const row = await store.lookupKey(sha256hex(token));
      if (!row || row.status !== 'active') return undefined;
      if (row.expires_at !== null && row.expires_at <= now) return undefined;
      if (row.kind === 'session' && row.passport_revoked_at !== null) return undefined;
      const expiresAt = row.kind === 'session' ? sessionExpiry(row, now) : row.expires_at;
      if (expiresAt === undefined) return undefined;
      const ctx: AuthContext = {
        agentId: row.agent_id,
        keyKind: row.kind as KeyKind,
        scopes: JSON.parse(row.scopes) as string[],
        tier: row.tier,
        createdAt: row.agent_created_at,
        ...(row.ephemeral_passport_id ? { ephemeral: true, ephemeralPassportId: row.ephemeral_passport_id } : {}),
        ...(row.tools ? { tools: JSON.parse(row.tools) as string[] } : {}),
      };
      authCache.set(token, { ctx, expiresAt }, now, generation);
      return ctx;
    },

    /** POST /v1/me/keys (root): a key limited to `scopes`; the secret is in this answer only, its SHA-256 is stored. */
    async createScopedKey(auth: AuthContext, input: { scopes: string[]; label?: string; expires_in?: number }) {
      const scopes = [...new Set(input.scopes)];
      const label = input.label === undefined || input.label.trim() === '' ? null : input.label;
      const key = issueToken(clock, auth.agentId, 'scoped', input.expires_in);
      const row = { ...key.row, kind: 'scoped', scopes: JSON.stringify(scopes), label, key_id: newId() };
      const view = scopedKeyView(row, row.created_at);
      const stored = await store.insertScopedKey(row, MAX_ACTIVE_SCOPED_KEYS, row.created_at, logged({
        kind: 'key.created', agentId: auth.agentId, at: row.created_at,
        data: { key_id: row.key_id, scopes, label, expires_at: view.expires_at },
      }));
      if (!stored) {
        throw new ApiError(409, 'API_KEY_LIMIT_REACHED', `An agent holds at most ${MAX_ACTIVE_SCOPED_KEYS} active scoped keys: revoke one (DELETE /v1/me/keys/{key_id}) first`,
          { max_active_scoped_keys: MAX_ACTIVE_SCOPED_KEYS });
      }
      const { active: _active, revoked_at: _revoked, ...shown } = view;
      return { status: 'success', api_key: key.token, kind: 'scoped', ...shown };
    },

    /** GET /v1/me/keys (root): the agent's scoped keys, never their secrets. */
    async listScopedKeys(auth: AuthContext) {
      const now = clock.now();
      const rows = await store.listScopedKeys(auth.agentId, now, LISTED_INACTIVE_KEYS);
      const keys = rows.map((r) => scopedKeyView(r, now));
      return {
        status: 'success', keys, active_count: keys.filter((k) => k.active).length,
        max_active: MAX_ACTIVE_SCOPED_KEYS, inactive_listed_max: LISTED_INACTIVE_KEYS,
      };
    },

    /** DELETE /v1/me/keys/{key_id} (root): the key stops working at once (the token cache is cleared). Revoking a revoked key changes nothing. */
    async revokeScopedKey(auth: AuthContext, keyId: string) {
      const found = isUuid(keyId) ? await store.findScopedKey(auth.agentId, keyId.toLowerCase()) : undefined;
      if (!found) throw new ApiError(404, 'API_KEY_NOT_FOUND', 'No scoped key with this key_id for this agent');
      if (found.revoked_at !== null) return;
      const now = clock.now();
      const scopes = JSON.parse(found.scopes) as string[];
      await store.revokeScopedKey(auth.agentId, found.key_id as string, now, logged({
        kind: 'key.revoked', agentId: auth.agentId, at: now,
        data: { key_id: found.key_id as string, scopes, label: found.label, expires_at: found.expires_at === null ? null : iso(Number(found.expires_at)) },
      }));
      authCache.clear();
    },
  };
}

export type Keys = ReturnType<typeof createKeys>;

/**
 * When a session token stops working: its own expiry, or sooner when the passport key it was issued
 * under has been rotated away (it lasts the rotation's grace, like the key); undefined when it no
 * longer works (issued under a key older than the one the latest rotation replaced).
 */
export function sessionExpiry(
  row: { expires_at: number | null; passport_key_version: number | null; current_key_version: number | null; rotation_grace_until: number | null },
  now: number,
): number | null | undefined {
  const issuedUnder = Number(row.passport_key_version ?? 0);
  const current = Number(row.current_key_version ?? 0);
  if (issuedUnder === current) return row.expires_at;
  const graceUntil = row.rotation_grace_until === null ? 0 : Number(row.rotation_grace_until);
  if (issuedUnder !== current - 1 || graceUntil <= now) return undefined;
  return row.expires_at === null ? graceUntil : Math.min(Number(row.expires_at), graceUntil);
}

/** A scoped key as its owner sees it: no secret, no digest. */
function scopedKeyView(r: { key_id: string | null; scopes: string; label: string | null; created_at: number; expires_at: number | null; revoked_at: number | null }, now: number) {
  const expiresAt = r.expires_at === null ? null : Number(r.expires_at);
  return {
    key_id: r.key_id as string,
    scopes: JSON.parse(r.scopes) as string[],
    label: r.label,
    created_at: iso(Number(r.created_at)),
    expires_at: expiresAt === null ? null : iso(expiresAt),
    revoked_at: r.revoked_at === null ? null : iso(Number(r.revoked_at)),
    active: r.revoked_at === null && (expiresAt === null || expiresAt > now),
  };
}

/**
 * Verified token lookups, keyed by the presented token, reused for a short time so an authenticated request does not pay a
 * database read each time. Bounded; the oldest entry goes first. Only successful lookups are kept
 * (an unknown token always reads the database).
 */
function createAuthCache(ttlMs: number, max = 10_000) {
  const entries = new Map<string, { value: { ctx: AuthContext; expiresAt: number | null }; until: number }>();
  /** Counts clears: a lookup started before one must not fill the cache after it. */
  let cleared = 0;
  return {
    generation: () => cleared,
    get(token: string, now: number) {
      if (ttlMs <= 0) return undefined;
      const e = entries.get(token);
      if (!e) return undefined;
      if (e.until <= now) {
        entries.delete(token);
        return undefined;
      }
      return e.value;
    },
    /** Caches a lookup that began at `generation`; nothing if the cache was cleared since. */
    set(token: string, value: { ctx: AuthContext; expiresAt: number | null }, now: number, generation: number) {
      if (ttlMs <= 0 || generation !== cleared) return;
      if (entries.size >= max) entries.delete(entries.keys().next().value as string);
      entries.set(token, { value, until: now + ttlMs });
    },
    clear() {
      entries.clear();
      cleared++;
    },
  };
}
