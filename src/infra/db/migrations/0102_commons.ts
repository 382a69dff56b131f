import type { Kysely } from 'kysely';

/** Commons: shared entries and vouches (see docs/memory.md, "Commons"). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('commons_entries')
    .addColumn('entry_id', 'text', (c) => c.primaryKey())
    .addColumn('publisher_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'integer', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('source', 'text')
    .addColumn('confidence', 'double precision', (c) => c.notNull())
    .addColumn('vouch_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('commons_entries_recent_idx').on('commons_entries').columns(['deleted_at', 'created_at']).execute();
  await db.schema.createIndex('commons_entries_publisher_idx').on('commons_entries').columns(['publisher_id', 'created_at']).execute();

  await db.schema
    .createTable('commons_vouches')
    .addColumn('entry_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('commons_vouches_pk', ['entry_id', 'agent_id'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
