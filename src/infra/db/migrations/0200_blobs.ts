import type { Kysely } from 'kysely';

/** Blobs: per-agent records, shared stored contents, per-agent storage counter. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('blobs')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('blob_id', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('filename', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .addPrimaryKeyConstraint('blobs_pk', ['agent_id', 'blob_id'])
    .execute();
  // Listing (newest first) and "is this content still referenced by anyone" (sweeper, delete).
  await db.schema.createIndex('blobs_list_idx').on('blobs').columns(['agent_id', 'deleted_at', 'created_at']).execute();
  await db.schema.createIndex('blobs_sha_idx').on('blobs').columns(['sha256', 'deleted_at']).execute();

  await db.schema
    .createTable('blob_contents')
    .addColumn('sha256', 'text', (c) => c.primaryKey())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('released_at', 'bigint')
    .addColumn('state_changed_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('blob_contents_released_idx').on('blob_contents').columns(['released_at']).execute();

  await db.schema
    .createTable('blob_agents')
    .addColumn('agent_id', 'text', (c) => c.primaryKey())
    .addColumn('storage_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('blob_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
