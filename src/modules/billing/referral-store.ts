/**
 * SQL of referral payouts. Reads (never writes) the foundation's `referrals` and `agents` tables:
 * the referral is recorded by registration, the payout decision is billing's (referral_payouts).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { Db } from './ledger-store';

export function createReferralStore(db: Kysely<Database>) {
  return {
    /** Deferred referrals without a decision yet, oldest first. */
    pending(limit: number) {
      return db.selectFrom('referrals as r')
        .innerJoin('agents as a', 'a.agent_id', 'r.referred_agent_id')
        .leftJoin('referral_payouts as p', 'p.referred_agent_id', 'r.referred_agent_id')
        .select(['r.referred_agent_id', 'r.referrer_agent_id', 'a.created_at as referred_created_at', 'a.owner_identifier as referred_owner'])
        .where('r.status', '=', 'deferred').where('p.referred_agent_id', 'is', null)
        .orderBy('a.created_at').limit(limit).execute();
    },

    agent(agentId: string) {
      return db.selectFrom('agents').select(['agent_id', 'tier', 'status', 'frozen', 'created_at', 'owner_identifier'])
        .where('agent_id', '=', agentId).executeTakeFirst();
    },

    async paidOn(trx: Db, day: string, referrerId?: string): Promise<number> {
      let q = trx.selectFrom('referral_payouts').select(sql<number>`count(*)`.as('n')).where('day', '=', day).where('status', '=', 'paid');
      if (referrerId) q = q.where('referrer_agent_id', '=', referrerId);
      return Number((await q.executeTakeFirstOrThrow()).n);
    },

    decided(trx: Db, referredId: string) {
      return trx.selectFrom('referral_payouts').select('status').where('referred_agent_id', '=', referredId).executeTakeFirst();
    },

    decide(trx: Db, row: { referred_agent_id: string; referrer_agent_id: string; status: 'paid' | 'rejected'; reason: string | null; amount_units: number; day: string; decided_at: number }) {
      return trx.insertInto('referral_payouts').values(row).execute();
    },

    status(referredId: string) {
      return db.selectFrom('referral_payouts').selectAll().where('referred_agent_id', '=', referredId).executeTakeFirst();
    },
  };
}
