/** SQL of the browse log; every query is scoped by agent_id (a foreign id reads as missing). */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { BrowseLogTable } from '../../infra/db/tables/web';
import type { ActivityBound } from '../usage/activity-types';

export type BrowseRow = BrowseLogTable;

const normalize = (r: BrowseRow): BrowseRow => ({
  ...r, http_status: Number(r.http_status), response_time_ms: Number(r.response_time_ms), created_at: Number(r.created_at),
});

export function createBrowseStore(db: Kysely<Database>) {
  return {
    /** Logs a browse in one transaction with `charge` (billing's), which runs first and may refuse. */
    async insertCharged<C>(row: BrowseRow, charge: (trx: Transaction<Database>) => Promise<C>): Promise<C> {
      return db.transaction().execute(async (trx) => {
        const c = await charge(trx);
        await trx.insertInto('browse_log').values(row).execute();
        return c;
      });
    },

    async get(agentId: string, browseId: string): Promise<BrowseRow | undefined> {
      const r = await db.selectFrom('browse_log').selectAll().where('browse_id', '=', browseId).where('agent_id', '=', agentId).executeTakeFirst();
      return r ? normalize(r) : undefined;
    },

    /** Newest first for the activity feed, without the page text. */
    async page(agentId: string, limit: number, before?: ActivityBound) {
      let q = db.selectFrom('browse_log')
        .select(['browse_id', 'url', 'final_url', 'mode', 'http_status', 'content_type', 'title', 'response_time_ms', 'created_at'])
        .where('agent_id', '=', agentId);
      if (before) {
        const { at, sameAt } = before;
        if (sameAt === 'all') q = q.where('created_at', '<=', at);
        else if (sameAt === 'none') q = q.where('created_at', '<', at);
        else q = q.where((eb) => eb.or([eb('created_at', '<', at), eb.and([eb('created_at', '=', at), eb('browse_id', '<', sameAt.idBelow)])]));
      }
      return q.orderBy('created_at', 'desc').orderBy('browse_id', 'desc').limit(limit).execute();
    },
  };
}

export type BrowseStore = ReturnType<typeof createBrowseStore>;
