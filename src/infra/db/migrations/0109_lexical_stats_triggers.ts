import { sql, type Kysely } from 'kysely';
import { engineOf } from '../dialect';

/**
 * SQLite: `lexical_stats` (each owner's and the ('*', '*') document count and total length) kept by
 * triggers on `lexical_docs`, so indexing an item is one statement (src/infra/lexical/index.ts: an
 * upsert that writes nothing when the text is unchanged) rather than a read, a write and a count
 * update from the application. The counts already stored stay as they are; the triggers continue
 * them. PostgreSQL keeps counting from the application.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) === 'postgres') return;
  const bump = (row: 'new' | 'old', docs: string, tokens: string) => [
    `update lexical_stats set docs = docs + ${docs}, tokens = tokens + ${tokens} where collection = ${row}.collection and owner_id = ${row}.owner_id;`,
    `update lexical_stats set docs = docs + ${docs}, tokens = tokens + ${tokens} where collection = '*' and owner_id = '*';`,
  ].join('\n');
  await sql.raw(`create trigger if not exists lexical_docs_counted after insert on lexical_docs begin
    insert into lexical_stats (collection, owner_id, docs, tokens) values (new.collection, new.owner_id, 1, new.doc_len), ('*', '*', 1, new.doc_len)
      on conflict (collection, owner_id) do update set docs = docs + excluded.docs, tokens = tokens + excluded.tokens;
  end`).execute(db);
  await sql.raw(`create trigger if not exists lexical_docs_recounted after update of doc_len on lexical_docs when new.doc_len <> old.doc_len begin
    ${bump('new', '0', 'new.doc_len - old.doc_len')}
  end`).execute(db);
  await sql.raw(`create trigger if not exists lexical_docs_uncounted after delete on lexical_docs begin
    ${bump('old', '-1', '-old.doc_len')}
  end`).execute(db);
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
