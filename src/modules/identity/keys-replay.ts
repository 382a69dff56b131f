/** Parity of identity's key facts: scoped keys (`key.created` / `key.revoked`) and passport rotations (`passport.rotated`). */
import { createPublicKey } from 'node:crypto';
import { sha256hex } from '../../lib/hash';
import type { Mismatch, ReplayEntry, Replayer, SnapshotDb } from '../trust/parity';
import { diffMaps } from '../trust/parity';

interface KeyRow { agent_id: string; scopes: string; label: string | null; created_at: number; expires_at: number | null; revoked_at: number | null }

export function scopedKeysReplayer(): () => Replayer {
  return () => {
    const rows = new Map<string, KeyRow>();
    return {
      feed(e: ReplayEntry) {
        if (!e.agent_id || (e.kind !== 'key.created' && e.kind !== 'key.revoked')) return;
        const keyId = String(e.data.key_id);
        if (e.kind === 'key.created') {
          const expires = e.data.expires_at;
          rows.set(keyId, {
            agent_id: e.agent_id,
            scopes: JSON.stringify(e.data.scopes),
            label: e.data.label === null || e.data.label === undefined ? null : String(e.data.label),
            created_at: e.at,
            expires_at: typeof expires === 'string' ? Date.parse(expires) : null,
            revoked_at: null,
          });
        } else {
          const r = rows.get(keyId);
          if (r) r.revoked_at = e.at;
        }
      },
      async diff(_now: number, db: SnapshotDb): Promise<Mismatch[]> {
        const stored = await db.selectFrom('api_keys').select(['key_id', 'agent_id', 'scopes', 'label', 'created_at', 'expires_at', 'revoked_at'])
          .where('kind', '=', 'scoped').where('key_id', 'is not', null).execute();
        const byId = new Map(stored.map((s) => {
          const { key_id: id, ...rest } = s;
          return [id as string, rest as unknown as Record<string, unknown>];
        }));
        return diffMaps('api_keys', rows, byId);
      },
      agents: () => new Set([...rows.values()].map((r) => r.agent_id)),
    };
  };
}

interface RotationRow { key_version: number; previous_key_sha256: string; current_key_sha256: string; rotated_at: number; grace_until: number; log_index: number }

/**
 * Parity of passport rotations: `passport.rotated` entries rebuild each agent's passport_rotations row
 * (key version, the replaced and the new key's SHA-256, when, the grace's end, the entry's index); a
 * `passport.revoked` entry ends a running grace at the revocation. The stored replaced key must still
 * hash to the SHA-256 its entry named.
 */
export function passportRotationsReplayer(): () => Replayer {
  return () => {
    const rows = new Map<string, RotationRow>();
    return {
      feed(e: ReplayEntry) {
        if (!e.agent_id) return;
        if (e.kind === 'passport.rotated') {
          rows.set(e.agent_id, {
            key_version: Number(e.data.key_version),
            previous_key_sha256: String(e.data.previous_public_key_sha256),
            current_key_sha256: String(e.data.public_key_sha256),
            rotated_at: e.at,
            grace_until: Date.parse(String(e.data.previous_key_valid_until)),
            log_index: e.index,
          });
        } else if (e.kind === 'passport.revoked') {
          const r = rows.get(e.agent_id);
          if (r) r.grace_until = Math.min(r.grace_until, e.at);
        }
      },
      async diff(_now: number, db: SnapshotDb): Promise<Mismatch[]> {
        const stored = await db.selectFrom('passport_rotations').selectAll().execute();
        const byId = new Map(stored.map((s) => {
          const { agent_id: id, previous_key_pem: pem, ...rest } = s;
          return [id, { ...rest, previous_key_pem_sha256: spkiSha256OrNull(pem) } as unknown as Record<string, unknown>];
        }));
        const rebuilt = new Map([...rows].map(([id, r]) => [id, { ...r, previous_key_pem_sha256: r.previous_key_sha256 }]));
        return diffMaps('passport_rotations', rebuilt, byId);
      },
      agents: () => rows.keys(),
    };
  };
}

function spkiSha256OrNull(pem: string): string | null {
  try {
    return sha256hex(createPublicKey(pem).export({ format: 'der', type: 'spki' }));
  } catch {
    return null;
  }
}
