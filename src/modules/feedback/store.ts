/**
 * SQL of feedback: append-only events plus one counter row per agent and UTC month. The monthly
 * cap is decided on that row (infra/db/monthly-cap.ts) in the same transaction as the insert, so
 * concurrent posts (even from several instances) never pass the cap.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { FeedbackEventsTable } from '../../infra/db/tables/web';
import { countWithinCap, monthlyCount } from '../../infra/db/monthly-cap';
import { beforeBound } from '../usage/activity-bound';
import type { ActivityBound } from '../usage/activity-types';

export type FeedbackRow = FeedbackEventsTable;

export interface SignalCount { ref_type: string; signal: string; last_7d: number; last_30d: number }

export function createFeedbackStore(db: Kysely<Database>) {
  return {
    /** Inserts the event unless the agent already has `cap` events this month; false when capped. */
    async appendWithinCap(row: FeedbackRow, month: string, cap: number): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        if (!(await countWithinCap(trx, 'feedback_monthly', row.agent_id, month, cap))) return false;
        await trx.insertInto('feedback_events').values(row).execute();
        return true;
      });
    },

    monthCount(agentId: string, month: string): Promise<number> {
      return monthlyCount(db, 'feedback_monthly', agentId, month);
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
    page(agentId: string, limit: number, before?: ActivityBound) {
      let q = db.selectFrom('feedback_events').selectAll().where('agent_id', '=', agentId);
      if (before) q = q.where(beforeBound('feedback_id', before));
      return q.orderBy('created_at', 'desc').orderBy('feedback_id', 'desc').limit(limit).execute();
    },
  };
}

export type FeedbackStore = ReturnType<typeof createFeedbackStore>;
