/** SQL of skill vouches (a projection of the trust log). */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { VouchesTable } from '../../infra/db/tables/trust';

type Db = Kysely<Database> | Transaction<Database>;

export function createVouchStore(db: Kysely<Database>) {
  return {
    active(voucher: string, target: string, skill: string, trx: Db = db) {
      return trx.selectFrom('vouches').selectAll()
        .where('voucher_agent_id', '=', voucher).where('target_agent_id', '=', target).where('skill', '=', skill).where('revoked_at', 'is', null)
        .executeTakeFirst();
    },

    async insert(trx: Transaction<Database>, row: VouchesTable): Promise<void> {
      await trx.insertInto('vouches').values(row).execute();
    },

    async revoke(trx: Transaction<Database>, vouchId: string, at: number, logIndex: number): Promise<void> {
      await trx.updateTable('vouches').set({ revoked_at: at, revoked_log_index: logIndex }).where('vouch_id', '=', vouchId).where('revoked_at', 'is', null).execute();
    },

    /** Active vouches per skill for the target's epoch: count and the sum of the vouchers' weights. */
    async perSkill(target: string, epoch: number) {
      const rows = await db.selectFrom('vouches')
        .select(['skill', (eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.sum<number>('weight').as('w')])
        .where('target_agent_id', '=', target).where('epoch', '=', epoch).where('revoked_at', 'is', null)
        .groupBy('skill').execute();
      return rows.map((r) => ({ skill: r.skill, count: Number(r.n), weighted: Number(r.w) }));
    },

    /** Active vouches per (target, epoch) of these targets (a directory page). */
    async activeByTarget(targets: string[]) {
      if (targets.length === 0) return [];
      const rows = await db.selectFrom('vouches').select(['target_agent_id', 'epoch', (eb) => eb.fn.countAll<number>().as('n')])
        .where('target_agent_id', 'in', targets).where('revoked_at', 'is', null).groupBy(['target_agent_id', 'epoch']).execute();
      return rows.map((r) => ({ target: r.target_agent_id, epoch: r.epoch, count: Number(r.n) }));
    },

    all(snap: Db = db) {
      return snap.selectFrom('vouches').selectAll().execute();
    },

    async counts(since: number) {
      const rows = await db.selectFrom('vouches').select(['created_at', 'revoked_at']).where((eb) => eb.or([eb('revoked_at', 'is', null), eb('created_at', '>=', since)])).execute();
      return { active: rows.filter((r) => r.revoked_at === null).length, given_in_window: rows.filter((r) => Number(r.created_at) >= since).length };
    },
  };
}

export type VouchStore = ReturnType<typeof createVouchStore>;
