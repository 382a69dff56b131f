/** SQL of the passport lifecycle: key rotations (passport_rotations) and ephemeral passports. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { ApiKeysTable, EphemeralPassportsTable, PassportRotationsTable } from '../../infra/db/tables/core';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Locks the agent's passport row for the rest of `trx` (PostgreSQL: a row lock that concurrent
 * rotations and ephemeral issues wait on; SQLite has one writer); true when the agent has an active
 * passport.
 */
async function lockActivePassport(trx: Transaction<Database>, agentId: string): Promise<boolean> {
  const r = await trx.updateTable('passports').set((eb) => ({ agent_id: eb.ref('agent_id') }))
    .where('agent_id', '=', agentId).where('revoked_at', 'is', null).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export function createLifecycleStore(db: Kysely<Database>) {
  const rotationOf = (q: Db, agentId: string) =>
    q.selectFrom('passport_rotations').selectAll().where('agent_id', '=', agentId).executeTakeFirst();

  return {
    /** The agent's latest rotation (undefined: its key was never rotated). */
    findRotation: (agentId: string) => rotationOf(db, agentId),

    /**
     * Runs `fn` in a transaction holding the agent's passport row lock, with the passport and its
     * latest rotation as of that lock; `fn` gets undefined for the passport when it is revoked or missing.
     */
    async withLockedPassport<T>(agentId: string, fn: (
      trx: Transaction<Database>,
      passport: { public_key_pem: string } | undefined,
      rotation: PassportRotationsTable | undefined,
    ) => Promise<T>): Promise<T> {
      return db.transaction().execute(async (trx) => {
        if (!(await lockActivePassport(trx, agentId))) return fn(trx, undefined, undefined);
        const [passport, rotation] = await Promise.all([
          trx.selectFrom('passports').select('public_key_pem').where('agent_id', '=', agentId).executeTakeFirst(),
          rotationOf(trx, agentId),
        ]);
        return fn(trx, passport, rotation);
      });
    },

    /** The passport key becomes `publicKeyPem` (client-supplied: operator_derived) and the rotation row is written. */
    async writeRotation(trx: Transaction<Database>, row: PassportRotationsTable, publicKeyPem: string): Promise<void> {
      await trx.updateTable('passports').set({ public_key_pem: publicKeyPem, derivation_method: 'operator_derived' })
        .where('agent_id', '=', row.agent_id).execute();
      const { agent_id: _id, ...update } = row;
      await trx.insertInto('passport_rotations').values(row)
        .onConflict((oc) => oc.column('agent_id').doUpdateSet(update)).execute();
    },

    /** A revocation ends a running rotation grace (in the revocation's transaction). */
    async endGrace(trx: Transaction<Database>, agentId: string, now: number): Promise<void> {
      await trx.updateTable('passport_rotations').set({ grace_until: now })
        .where('agent_id', '=', agentId).where('grace_until', '>', now).execute();
    },

    /** Session tokens of ephemeral passports of the agent that still work at `now`. */
    async activeEphemeralCount(trx: Db, agentId: string, now: number): Promise<number> {
      const r = await trx.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('agent_id', '=', agentId).where('kind', '=', 'session').where('ephemeral_passport_id', 'is not', null)
        .where('revoked_at', 'is', null).where('expires_at', '>', now)
        .executeTakeFirstOrThrow();
      return Number(r.n);
    },

    /** Stores an ephemeral passport and its session token; the agent's records older than `forgetBefore` go. */
    async insertEphemeral(trx: Transaction<Database>, passport: EphemeralPassportsTable, session: ApiKeysTable, forgetBefore: number): Promise<void> {
      await trx.insertInto('ephemeral_passports').values(passport).execute();
      await trx.insertInto('api_keys').values(session).execute();
      await trx.deleteFrom('ephemeral_passports').where('agent_id', '=', passport.agent_id).where('expires_at', '<', forgetBefore).execute();
    },

    /** Ephemeral passports issued since `since` (trust adoption). */
    async countEphemeralSince(since: number): Promise<number> {
      const r = await db.selectFrom('ephemeral_passports').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('created_at', '>=', since).executeTakeFirstOrThrow();
      return Number(r.n);
    },
  };
}

export type LifecycleStore = ReturnType<typeof createLifecycleStore>;
