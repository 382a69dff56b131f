import { sql, type Kysely } from 'kysely';
import { engineOf } from '../dialect';

/**
 * SQLite: an item's terms wait in its `lexical_docs` row (`pending_terms`) until they move into the
 * FTS5 table (src/infra/lexical/pending.ts); `in_fts` says whether `lexical_fts` holds a row of the
 * item (every row indexed before this migration does). A partial index finds one owner's waiting
 * items. PostgreSQL writes its `tsvector` in the row itself and needs neither.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) === 'postgres') return;
  await db.schema.alterTable('lexical_docs').addColumn('pending_terms', 'text').execute();
  await db.schema.alterTable('lexical_docs').addColumn('in_fts', 'integer', (c) => c.notNull().defaultTo(1)).execute();
  await sql`create index if not exists lexical_docs_pending_idx on lexical_docs (collection, owner_id) where pending_terms is not null`.execute(db);
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
