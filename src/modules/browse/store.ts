/**
 * SQL of the browse log; every query is scoped by agent_id (a foreign id reads as missing).
 *
 * Durability (docs/decisions.md, "Browse answers at COMMIT"): the log row and its charge commit in
 * one transaction through commit-sync, whose COMMIT puts the frames in the WAL without waiting for
 * the disk; the WAL flush starts at once, off the event loop, and the browse is answered without
 * waiting for it. A process crash loses nothing; only a power cut within that one flush could take
 * a record and its charge back (the agent keeps the page it was sent and is not charged for it).
 * Readers of the log (GET /v1/browse/{id}, the activity feed) answer only once what they read is
 * on disk, as memory reads do, so nobody is shown a record a power cut could still take back.
 */
import type { Transaction } from 'kysely';
import { settled as settledRead } from '../../infra/db/commit-sync';
import type { DatabaseHandle } from '../../infra/db/database';
import { preparedWrite } from '../../infra/db/prepared';
import type { Database } from '../../infra/db/schema';
import type { BrowseLogTable } from '../../infra/db/tables/web';
import { beforeBound } from '../usage/activity-bound';
import type { ActivityBound } from '../usage/activity-types';

export type BrowseRow = BrowseLogTable;

const normalize = (r: BrowseRow): BrowseRow => ({
  ...r, http_status: Number(r.http_status), response_time_ms: Number(r.response_time_ms), created_at: Number(r.created_at),
});

export function createBrowseStore({ db, sqlite, commits }: Pick<DatabaseHandle, 'db' | 'sqlite' | 'commits'>) {
  /** A read answered once everything committed before it is on disk (as memory's reads). */
  const settled = <T>(read: Promise<T>) => settledRead(commits, read);
  // Compiled once (infra/db/prepared.ts); on SQLite it runs straight on the connection in the transaction.
  const S = {
    browse_id: '\u0000id', agent_id: '\u0000agent', url: '\u0000url', final_url: '\u0000final', mode: '\u0000mode',
    content_type: '\u0000type', title: '\u0000title', text: '\u0000text',
    byline: '\u0000byline', published_at: '\u0000published', language: '\u0000language', site_name: '\u0000site',
    http_status: -987_654_321_000_011, response_time_ms: -987_654_321_000_012, created_at: -987_654_321_000_013,
  };
  const insertRow = preparedWrite(db, S, (s) => db.insertInto('browse_log').values(s), sqlite);
  return {
    /**
     * Logs a browse in one transaction with `charge` (billing's), which runs first and may refuse.
     * Resolves at COMMIT; the WAL flush that makes it durable is started here and not awaited.
     */
    async insertCharged<C>(row: BrowseRow, charge: (trx: Transaction<Database>) => Promise<C>): Promise<C> {
      const c = await commits.transaction(async (trx) => {
        const out = await charge(trx);
        await insertRow(row, trx);
        return out;
      });
      commits.durable().catch(() => {});
      return c;
    },

    async get(agentId: string, browseId: string): Promise<BrowseRow | undefined> {
      const r = await settled(db.selectFrom('browse_log').selectAll().where('browse_id', '=', browseId).where('agent_id', '=', agentId).executeTakeFirst());
      return r ? normalize(r) : undefined;
    },

    /** Newest first for the activity feed, without the page text. */
    async page(agentId: string, limit: number, before?: ActivityBound) {
      let q = db.selectFrom('browse_log')
        .select(['browse_id', 'url', 'final_url', 'mode', 'http_status', 'content_type', 'title', 'response_time_ms', 'created_at'])
        .where('agent_id', '=', agentId);
      if (before) q = q.where(beforeBound('browse_id', before));
      return settled(q.orderBy('created_at', 'desc').orderBy('browse_id', 'desc').limit(limit).execute());
    },
  };
}

export type BrowseStore = ReturnType<typeof createBrowseStore>;
