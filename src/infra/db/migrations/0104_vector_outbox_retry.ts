import type { Kysely } from 'kysely';
import { engineOf } from '../dialect';

/**
 * An outbox row whose text the embeddings model refuses (a poison item) no longer blocks the queue:
 * the indexer counts its `attempts` and sets `not_before`, the time before which neither the
 * background loop nor a search's drain picks it up again (src/infra/vectors/indexer.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) === 'postgres') {
    // One transaction (Kysely runs PostgreSQL migrations in one). IF NOT EXISTS resolves the table as
    // the ALTER does (search path); introspection lists every schema's tables, so another schema's
    // vector_outbox that already had the columns made this skip svc's own table.
    await db.schema.alterTable('vector_outbox').addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0).ifNotExists()).execute();
    await db.schema.alterTable('vector_outbox').addColumn('not_before', 'bigint', (c) => c.ifNotExists()).execute();
    return;
  }
  // SQLite runs migrations outside a transaction and ALTER TABLE adds one column at a time: add only
  // what is missing, so a crash between the two can run this again.
  const table = (await db.introspection.getTables()).find((t) => t.name === 'vector_outbox');
  const has = new Set(table?.columns.map((c) => c.name));
  if (!has.has('attempts')) {
    await db.schema.alterTable('vector_outbox').addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  }
  if (!has.has('not_before')) {
    await db.schema.alterTable('vector_outbox').addColumn('not_before', 'bigint').execute();
  }
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
