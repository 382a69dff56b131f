/** SQL of the commons. Entries are soft-deleted (deleted_at) so vouches keep their referent. */
import type SQLite from 'better-sqlite3';
import { sql, type Kysely } from 'kysely';
import { prepared } from '../../infra/db/prepared';
import type { Database } from '../../infra/db/schema';
import type { CommonsEntriesTable } from '../../infra/db/tables/memory';
import type { Trx } from '../memory/store';

export function createCommonsStore(db: Kysely<Database>, sqlite?: SQLite.Database) {
  const visible = () => db.selectFrom('commons_entries').where('deleted_at', 'is', null);
  // Entries in the commons and one publisher's, in one read. On SQLite it runs straight on the
  // connection (prepared.ts), so the usage figure of a metered answer never waits for a write batch;
  // it may count an entry whose insert is committing at that moment, which is harmless for a count.
  const S = { publisher: '\u0000publisher' };
  const statsQ = prepared(db, S, (s) => db.selectNoFrom((eb) => [
    eb.selectFrom('commons_entries').where('deleted_at', 'is', null).select((e) => e.fn.countAll<number>().as('n')).as('size'),
    eb.selectFrom('commons_entries').where('deleted_at', 'is', null).where('publisher_id', '=', s.publisher)
      .select((e) => e.fn.countAll<number>().as('n')).as('mine'),
  ]), sqlite);
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

    /** Records a vouch once; whether it was new, and the entry's count after it (read in the same transaction). */
    async vouch(entryId: string, agentId: string, now: number): Promise<{ added: boolean; count: number }> {
      return db.transaction().execute(async (trx) => {
        const added = await trx.insertInto('commons_vouches').values({ entry_id: entryId, agent_id: agentId, created_at: now })
          .onConflict((oc) => oc.columns(['entry_id', 'agent_id']).doNothing()).returning('agent_id').executeTakeFirst();
        if (added) {
          await trx.updateTable('commons_entries').set({ vouch_count: sql`vouch_count + 1` }).where('entry_id', '=', entryId).execute();
        }
        const row = await trx.selectFrom('commons_entries').select('vouch_count').where('entry_id', '=', entryId).executeTakeFirstOrThrow();
        return { added: added !== undefined, count: Number(row.vouch_count) };
      });
    },

    /** Live entries whose vector is missing or made by another model (re-embedding after a model change). */
    async entriesNeedingVectors(modelId: string, owner: string, limit: number): Promise<string[]> {
      const rows = await visible().select('commons_entries.entry_id')
        .where(({ not, exists, selectFrom }) => not(exists(
          selectFrom('vector_items as vi').select('vi.id')
            .where('vi.collection', '=', 'commons').where('vi.owner_id', '=', owner).whereRef('vi.item_id', '=', 'commons_entries.entry_id')
            .where('vi.model_id', '=', modelId),
        )))
        .where(({ not, exists, selectFrom }) => not(exists(
          selectFrom('vector_outbox as o').select('o.item_id')
            .where('o.collection', '=', 'commons').where('o.owner_id', '=', owner).whereRef('o.item_id', '=', 'commons_entries.entry_id'),
        )))
        .limit(limit).execute();
      return rows.map((r) => r.entry_id);
    },

    async remove(entryId: string, now: number, afterWrite?: (trx: Trx) => Promise<void>): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('commons_entries').set({ deleted_at: now, updated_at: now }).where('entry_id', '=', entryId).execute();
        if (afterWrite) await afterWrite(trx);
      });
    },

    async stats(publisherId: string): Promise<{ size: number; contributions: number }> {
      const [r] = await statsQ({ publisher: publisherId });
      return { size: Number((r as { size: unknown }).size ?? 0), contributions: Number((r as { mine: unknown }).mine ?? 0) };
    },
  };
}

export type CommonsStore = ReturnType<typeof createCommonsStore>;
