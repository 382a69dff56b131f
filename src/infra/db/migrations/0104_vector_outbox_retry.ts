import type { Kysely } from 'kysely';

/**
 * An outbox row whose text the embeddings model refuses (a poison item) no longer blocks the queue:
 * the indexer counts its `attempts` and sets `not_before`, the time before which neither the
 * background loop nor a search's drain picks it up again (src/infra/vectors/indexer.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
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
