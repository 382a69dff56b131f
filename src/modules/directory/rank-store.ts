/** SQL of the directory: versioned rank rows and the version counter (migration 0602). */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { DirectoryRanksTable } from '../../infra/db/tables/trust';
import type { Filters, RankKey } from './cursor';

type Db = Kysely<Database> | Transaction<Database>;

export function createRankStore(db: Kysely<Database>) {
  return {
    /** The newest committed directory version (a new walk pages it). */
    async version(): Promise<number> {
      const r = await db.selectFrom('directory_state').select('version').where('id', '=', 1).executeTakeFirstOrThrow();
      return Number(r.version);
    },

    async state() {
      return db.selectFrom('directory_state').selectAll().where('id', '=', 1).executeTakeFirstOrThrow();
    },

    /**
     * Takes the directory's write lock for the rest of `trx` (the state row; SQLite has one writer
     * anyway). Writers hold it from before they read the rows they replace, so versions commit in order
     * and a version a reader sees is complete.
     */
    async lock(trx: Transaction<Database>): Promise<void> {
      await trx.updateTable('directory_state').set({ version: sql`version` }).where('id', '=', 1).execute();
    },

    /** The next version (under the lock). */
    async bump(trx: Transaction<Database>): Promise<number> {
      const r = await trx.updateTable('directory_state').set({ version: sql`version + 1` }).where('id', '=', 1).returning('version').executeTakeFirstOrThrow();
      return Number(r.version);
    },

    async markRefreshed(at: number): Promise<void> {
      await db.updateTable('directory_state').set({ refreshed_at: at }).where('id', '=', 1).execute();
    },

    /** Current rows of these agents. */
    async current(agentIds: string[], trx: Db = db): Promise<DirectoryRanksTable[]> {
      if (agentIds.length === 0) return [];
      return trx.selectFrom('directory_ranks').selectAll().where('agent_id', 'in', agentIds).where('valid_to', 'is', null).execute();
    },

    /** Current synthetic rows. */
    currentSynthetic(trx: Db = db) {
      return trx.selectFrom('directory_ranks').selectAll().where('synthetic', '=', 1).where('valid_to', 'is', null).execute();
    },

    /** Ids of current rows of registered agents, in id order after `after`. */
    async currentAgentIds(after: string | undefined, limit: number): Promise<string[]> {
      let q = db.selectFrom('directory_ranks').select('agent_id').where('valid_to', 'is', null).where('synthetic', '=', 0);
      if (after !== undefined) q = q.where('agent_id', '>', after);
      return (await q.orderBy('agent_id').limit(limit).execute()).map((r) => r.agent_id);
    },

    async close(trx: Transaction<Database>, agentId: string, version: number, at: number): Promise<void> {
      await trx.updateTable('directory_ranks').set({ valid_to: version, closed_at: at }).where('agent_id', '=', agentId).where('valid_to', 'is', null).execute();
    },

    async insert(trx: Transaction<Database>, row: DirectoryRanksTable): Promise<void> {
      await trx.insertInto('directory_ranks').values(row).execute();
    },

    /**
     * One page of version `version`: rows valid at it, matching the filters, after `after` in the
     * order (order_score, created_at, agent_id) — a range read of one index, whatever the page's depth.
     */
    page(version: number, filters: Filters, after: RankKey | undefined, limit: number) {
      let q = db.selectFrom('directory_ranks').selectAll()
        .where('valid_from', '<=', version)
        .where((eb) => eb.or([eb('valid_to', 'is', null), eb('valid_to', '>', version)]));
      if (filters[0] !== null) q = q.where('agent_type', '=', filters[0]);
      if (filters[1] !== null) q = q.where('domain', '=', filters[1]);
      // A literal, so both engines match the partial index of bridge rows.
      if (filters[2] === 1) q = q.where('bridge', '=', sql.lit(1));
      if (after) {
        const a = after;
        q = q.where((eb) => eb(eb.refTuple('order_score', 'created_at', 'agent_id'), '>', eb.tuple(a.order, a.created, a.id)));
      }
      return q.orderBy('order_score').orderBy('created_at').orderBy('agent_id').limit(limit).execute();
    },

    /** Deletes rows closed before `before` (no cursor still pages a version they belong to). */
    async prune(before: number): Promise<number> {
      const r = await db.deleteFrom('directory_ranks').where('closed_at', 'is not', null).where('closed_at', '<', before).executeTakeFirst();
      return Number(r.numDeletedRows);
    },

    async countCurrent(synthetic: 0 | 1): Promise<number> {
      const r = await db.selectFrom('directory_ranks').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('valid_to', 'is', null).where('synthetic', '=', synthetic).executeTakeFirstOrThrow();
      return Number(r.n);
    },
  };
}

export type RankStore = ReturnType<typeof createRankStore>;
