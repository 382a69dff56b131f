/**
 * SQL of identity's share in a custody change (a completed recovery or custody transfer), run in the
 * custody module's transaction: every key of the agent is revoked, a new root key stored, the
 * passport key replaced and, on a transfer, the owner changed. Every query is keyed by agent_id.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { ApiKeysTable } from '../../infra/db/tables/core';

export function createCustodyStore(db: Kysely<Database>) {
  return {
    /** Revokes every unrevoked key of the agent (root, scoped, sessions); returns the scoped ones (their log entries). */
    async revokeAllKeys(trx: Transaction<Database>, agentId: string, now: number) {
      const scoped = await trx.selectFrom('api_keys').select(['key_id', 'scopes', 'label', 'expires_at'])
        .where('agent_id', '=', agentId).where('kind', '=', 'scoped').where('revoked_at', 'is', null).where('key_id', 'is not', null)
        .orderBy('created_at').execute();
      await trx.updateTable('api_keys').set({ revoked_at: now }).where('agent_id', '=', agentId).where('revoked_at', 'is', null).execute();
      return scoped;
    },

    async insertKey(trx: Transaction<Database>, key: ApiKeysTable): Promise<void> {
      await trx.insertInto('api_keys').values(key).execute();
    },

    /** The passport's key becomes `publicKeyPem`; a revoked passport is active again (a new passport of the same agent). */
    async replacePassportKey(trx: Transaction<Database>, agentId: string, publicKeyPem: string): Promise<boolean> {
      const r = await trx.updateTable('passports')
        .set({ public_key_pem: publicKeyPem, revoked_at: null, derivation_method: 'operator_derived' })
        .where('agent_id', '=', agentId).executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    async setOwner(trx: Transaction<Database>, agentId: string, owner: string, now: number): Promise<void> {
      await trx.updateTable('agents').set({ owner_identifier: owner, updated_at: now }).where('agent_id', '=', agentId).execute();
    },

    /** Another agent already has this (agent_name, owner_identifier) pair. */
    async pairTaken(agentName: string, owner: string, exceptAgentId: string): Promise<boolean> {
      const row = await db.selectFrom('agents').select('agent_id').where('agent_name', '=', agentName).where('owner_identifier', '=', owner)
        .where('agent_id', '!=', exceptAgentId).executeTakeFirst();
      return row !== undefined;
    },
  };
}

export type CustodyStore = ReturnType<typeof createCustodyStore>;
