import { sql, type Kysely } from 'kysely';
import { engineOf } from '../dialect';

/**
 * The lexical (full-text) index shared by memory, commons and blob search (src/infra/lexical):
 * one `lexical_docs` row per indexed item and one `lexical_stats` row per (collection, owner)
 * holding its document count and total length (BM25's N and average length). The terms live in an
 * FTS5 table on SQLite (`lexical_fts`, contentless, rowid = lexical_docs.id) and in a `tsvector`
 * column with a GIN index on PostgreSQL. Both are written in the item's own transaction.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = engineOf(db) === 'postgres';
  await db.schema
    .createTable('lexical_docs')
    .ifNotExists()
    .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('collection', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('doc_len', 'integer', (c) => c.notNull())
    .addUniqueConstraint('lexical_docs_item_unique', ['collection', 'owner_id', 'item_id'])
    .execute();
  await db.schema
    .createTable('lexical_stats')
    .ifNotExists()
    .addColumn('collection', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('docs', 'bigint', (c) => c.notNull())
    .addColumn('tokens', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('lexical_stats_pk', ['collection', 'owner_id'])
    .execute();
  if (pg) {
    await sql`alter table lexical_docs add column if not exists tsv tsvector not null default ''::tsvector`.execute(db);
    await sql`create index if not exists lexical_docs_tsv_idx on lexical_docs using gin (tsv)`.execute(db);
  } else {
    await sql.raw(`create virtual table if not exists lexical_fts using fts5(terms, content='', contentless_delete=1, `
      + `tokenize="unicode61 remove_diacritics 0 categories 'L* N* Co M*'")`).execute(db);
    await sql.raw('create virtual table if not exists lexical_fts_terms using fts5vocab(lexical_fts, row)').execute(db);
  }
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
