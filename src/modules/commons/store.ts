/** SQL of the commons. Entries are soft-deleted (deleted_at) so vouches keep their referent. */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { CommonsEntriesTable } from '../../infra/db/tables/memory';
import type { Trx } from '../memory/store';

export function createCommonsStore(db: Kysely<Database>) {
  const visible = () => db.selectFrom('commons_entries').where('deleted_at', 'is', null);
  return {
    async insert(row: CommonsEntriesTable, afterWrite?: (trx: Trx) => Promise<void>): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('commons_entries').values(row).execute();
        if (afterWrite) await afterWrite(trx);
      });
    },

    get: (entryId: string) => visible().selectAll().where('entry_id', '=', entryId).executeTakeFirst(),

    getMany: (ids: string[]) => (ids.length ? visible().selectAll().where('entry_id', 'in', ids).execute() : Promise.resolve([])),

    async list(f: { tag?: string; publisher?: string; offset: number; limit: number }) {
      let q = visible();
      if (f.publisher) q = q.where('publisher_id', '=', f.publisher);
      // Tags are a JSON array of [a-z0-9-_.] strings: the quoted tag matches only that tag. '_' is escaped.
      if (f.tag) {
        const pattern = `%${JSON.stringify(f.tag).replace(/[\\%_]/g, '\\$&')}%`;
        q = q.where(sql<boolean>`tags like ${pattern} escape '\\'`);
      }
      const [rows, total] = await Promise.all([
        q.selectAll().orderBy('created_at', 'desc').orderBy('entry_id').limit(f.limit).offset(f.offset).execute(),
        q.select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
      ]);
      return { rows, total: Number(total.n) };
    },

    /** Records a vouch once; returns whether it was new. */
    async vouch(entryId: string, agentId: string, now: number): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const added = await trx.insertInto('commons_vouches').values({ entry_id: entryId, agent_id: agentId, created_at: now })
          .onConflict((oc) => oc.columns(['entry_id', 'agent_id']).doNothing()).returning('agent_id').executeTakeFirst();
        if (added) {
          await trx.updateTable('commons_entries').set({ vouch_count: sql`vouch_count + 1` }).where('entry_id', '=', entryId).execute();
        }
        return added !== undefined;
      });
    },

    async remove(entryId: string, now: number, afterWrite?: (trx: Trx) => Promise<void>): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('commons_entries').set({ deleted_at: now, updated_at: now }).where('entry_id', '=', entryId).execute();
        if (afterWrite) await afterWrite(trx);
      });
    },

    count: () => visible().select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow().then((r) => Number(r.n)),

    countBy: (publisherId: string) => visible().where('publisher_id', '=', publisherId)
      .select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow().then((r) => Number(r.n)),
  };
}

export type CommonsStore = ReturnType<typeof createCommonsStore>;
