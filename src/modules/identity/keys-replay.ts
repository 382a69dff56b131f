/** Parity of scoped keys: `key.created` / `key.revoked` entries against the api_keys rows they made. */
import type { Mismatch, ReplayEntry, Replayer, SnapshotDb } from '../trust/parity';
import { diffRows } from '../trust/parity';

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
        const out: Mismatch[] = [];
        for (const [id, r] of rows) out.push(...diffRows('api_keys', id, r as unknown as Record<string, unknown>, byId.get(id)));
        for (const id of byId.keys()) if (!rows.has(id)) out.push(...diffRows('api_keys', id, undefined, byId.get(id)));
        return out;
      },
      agents: () => new Set([...rows.values()].map((r) => r.agent_id)),
    };
  };
}
