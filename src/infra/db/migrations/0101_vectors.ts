import type { Kysely } from 'kysely';
import { engineOf } from '../dialect';

/**
 * Vector store shared by memory, commons and blob search. `vector_items` always holds every vector
 * (float32 bytes), so the accelerated indexes (sqlite-vec, pgvector) can be rebuilt from it and an
 * engine without an extension can scan it exactly. The accelerated tables are created at start-up
 * by src/infra/vectors, because they depend on the extension being present and on the dimensions.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = engineOf(db) === 'postgres';
  await db.schema
    .createTable('vector_items')
    .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('collection', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('model_id', 'text', (c) => c.notNull())
    .addColumn('item_version', 'bigint', (c) => c.notNull())
    .addColumn('dimensions', 'integer', (c) => c.notNull())
    .addColumn('embedding', pg ? 'bytea' : 'blob', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('vector_items_item_unique', ['collection', 'owner_id', 'item_id'])
    .execute();
  await db.schema.createIndex('vector_items_scan_idx').on('vector_items').columns(['collection', 'owner_id', 'model_id']).execute();
  await db.schema.createIndex('vector_items_model_idx').on('vector_items').columns(['collection', 'model_id']).execute();

  await db.schema
    .createTable('vector_outbox')
    .addColumn('collection', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('ticket', 'text', (c) => c.notNull())
    .addColumn('enqueued_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('vector_outbox_pk', ['collection', 'owner_id', 'item_id'])
    .execute();
  await db.schema.createIndex('vector_outbox_age_idx').on('vector_outbox').columns(['enqueued_at']).execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
