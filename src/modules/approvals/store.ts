/**
 * SQL of approval events: append-only rows plus one counter row per agent and UTC month, the cap
 * decided on that row in the insert's transaction (infra/db/monthly-cap.ts).
 */
import type { Kysely } from 'kysely';
import { countWithinCap, monthlyCount } from '../../infra/db/monthly-cap';
import type { Database } from '../../infra/db/schema';
import type { ApprovalEventsTable } from '../../infra/db/tables/web';
import { beforeBound } from '../usage/activity-bound';
import type { ActivityBound } from '../usage/activity-types';

export type ApprovalRow = ApprovalEventsTable;

const normalize = (r: ApprovalRow): ApprovalRow => ({ ...r, decided_at: Number(r.decided_at), created_at: Number(r.created_at) });

export function createApprovalStore(db: Kysely<Database>) {
  return {
    /** Inserts the event unless the agent already has `cap` events this month; false when capped. */
    async appendWithinCap(row: ApprovalRow, month: string, cap: number): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        if (!(await countWithinCap(trx, 'approval_monthly', row.agent_id, month, cap))) return false;
        await trx.insertInto('approval_events').values(row).execute();
        return true;
      });
    },

    monthCount(agentId: string, month: string): Promise<number> {
      return monthlyCount(db, 'approval_monthly', agentId, month);
    },

    /** Newest first (recorded time, then id), after the bound; optionally one decision only. */
    async page(agentId: string, limit: number, before?: ActivityBound, decision?: string): Promise<ApprovalRow[]> {
      let q = db.selectFrom('approval_events').selectAll().where('agent_id', '=', agentId);
      if (decision) q = q.where('decision', '=', decision);
      if (before) q = q.where(beforeBound('approval_id', before));
      const rows = await q.orderBy('created_at', 'desc').orderBy('approval_id', 'desc').limit(limit).execute();
      return rows.map(normalize);
    },
  };
}

export type ApprovalStore = ReturnType<typeof createApprovalStore>;
