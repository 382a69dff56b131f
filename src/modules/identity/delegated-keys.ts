/**
 * Scoped keys issued by delegation (POST /v1/agents/{parent_agent_id}/delegate): a scoped key of the
 * parent, limited to its scopes and to a write_set of tools (api_keys.tools, which the auth hook
 * reads), with an expiry. It counts towards the parent's active scoped keys and is listed and revoked
 * like any scoped key (/v1/me/keys); its key.created entry comes first, then the caller's `also`
 * (the delegation's own entry and row) in the same transaction.
 */
import type { Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import { iso, type Clock } from '../../lib/clock';
import { newId } from '../../lib/ids';
import { issueToken, MAX_ACTIVE_SCOPED_KEYS, type KeyEventSink } from './keys';
import type { IdentityStore } from './store';

export interface DelegatedKeyInput { scopes: string[]; tools: string[]; label: string | null; expiresIn: number }

export function createDelegatedKeys(deps: { store: IdentityStore; clock: Clock; onKeyEvent?: KeyEventSink }) {
  return async (
    parentAgentId: string,
    input: DelegatedKeyInput,
    also: (trx: Transaction<Database>, key: { keyId: string; createdAt: number; expiresAt: number }) => Promise<void>,
  ) => {
    const key = issueToken(deps.clock, parentAgentId, 'scoped', input.expiresIn);
    const row = { ...key.row, kind: 'scoped', scopes: JSON.stringify(input.scopes), label: input.label, key_id: newId(), tools: JSON.stringify(input.tools) };
    const expiresAt = row.expires_at as number;
    const sink = deps.onKeyEvent;
    const stored = await deps.store.insertScopedKey(row, MAX_ACTIVE_SCOPED_KEYS, row.created_at, async (trx) => {
      if (sink) {
        await sink(trx, {
          kind: 'key.created', agentId: parentAgentId, at: row.created_at,
          data: { key_id: row.key_id, scopes: input.scopes, label: input.label, expires_at: iso(expiresAt) },
        });
      }
      await also(trx, { keyId: row.key_id, createdAt: row.created_at, expiresAt });
    });
    if (!stored) {
      throw new ApiError(409, 'API_KEY_LIMIT_REACHED', `An agent holds at most ${MAX_ACTIVE_SCOPED_KEYS} active scoped keys, delegated ones included: revoke one (DELETE /v1/me/keys/{key_id}) first`,
        { max_active_scoped_keys: MAX_ACTIVE_SCOPED_KEYS });
    }
    return {
      api_key: key.token, key_id: row.key_id, scopes: input.scopes, label: input.label, created_at: iso(row.created_at), expires_at: iso(expiresAt),
    };
  };
}
