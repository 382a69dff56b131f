/**
 * SQL of feedback: append-only events plus one counter row per agent and UTC month. The monthly
 * cap is decided by a conditional increment of that row (`count < cap`) in the same transaction
 * as the insert, so concurrent posts (even from several instances) never pass the cap.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { FeedbackEventsTable } from '../../infra/db/tables/web';

export type FeedbackRow = FeedbackEventsTable;

export interface SignalCount { ref_type: string; signal: string; last_7d: number; last_30d: number }

export function createFeedbackStore(db: Kysely<Database>) {
  return {
    /** Inserts the event unless the agent already has `cap` events this month; false when capped. */
    async appendWithinCap(row: FeedbackRow, month: string, cap: number): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        await trx.insertInto('feedback_monthly').values({ agent_id: row.agent_id, month, count: 0 })
          .onConflict((oc) => oc.columns(['agent_id', 'month']).doNothing()).execute();
        const r = await trx.updateTable('feedback_monthly').set({ count: sql`count + 1` })
          .where('agent_id', '=', row.agent_id).where('month', '=', month).where('count', '<', cap)
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) === 0) return false;
        await trx.insertInto('feedback_events').values(row).execute();
        return true;
      });
    },

    async monthCount(agentId: string, month: string): Promise<number> {
      const r = await db.selectFrom('feedback_monthly').select('count').where('agent_id', '=', agentId).where('month', '=', month).executeTakeFirst();
      return Number(r?.count ?? 0);
    },

    /** Counts per (ref_type, signal) in the windows (since7, now] and (since30, now]. */
    async signalCounts(agentId: string, since7: number, since30: number, now: number): Promise<SignalCount[]> {
      const rows = await db.selectFrom('feedback_events')
        .select(['ref_type', 'signal',
          sql<number>`sum(case when created_at > ${since7} then 1 else 0 end)`.as('last_7d'),
          sql<number>`count(*)`.as('last_30d')])
        .where('agent_id', '=', agentId).where('created_at', '>', since30).where('created_at', '<=', now)
        .groupBy(['ref_type', 'signal'])
        .execute();
      return rows.map((r) => ({ ref_type: r.ref_type, signal: r.signal, last_7d: Number(r.last_7d), last_30d: Number(r.last_30d) }));
    },

    /**
     * Newest first (activity feed). `before.sameAt` says which rows at exactly `before.at` still
     * belong after the cursor: all, none, or those with a smaller id.
     */
    page(agentId: string, limit: number, before?: { at: number; sameAt: 'all' | 'none' | { idBelow: string } }) {
      let q = db.selectFrom('feedback_events').selectAll().where('agent_id', '=', agentId);
      if (before) {
        const { at, sameAt } = before;
        if (sameAt === 'all') q = q.where('created_at', '<=', at);
        else if (sameAt === 'none') q = q.where('created_at', '<', at);
        else q = q.where((eb) => eb.or([eb('created_at', '<', at), eb.and([eb('created_at', '=', at), eb('feedback_id', '<', sameAt.idBelow)])]));
      }
      return q.orderBy('created_at', 'desc').orderBy('feedback_id', 'desc').limit(limit).execute();
    },
  };
}

export type FeedbackStore = ReturnType<typeof createFeedbackStore>;
