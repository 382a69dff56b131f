import type { Kysely } from 'kysely';

/** Parse jobs, their callback deliveries, search chunks of parsed blobs, callback signing secrets. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('parse_jobs')
    .addColumn('parse_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('blob_id', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('callback_url', 'text')
    .addColumn('result', 'text')
    .addColumn('error_code', 'text')
    .addColumn('error_reason', 'text')
    .addColumn('error_message', 'text')
    .addColumn('callback_body', 'text')
    .addColumn('callback_signature', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('parse_jobs_blob_idx').on('parse_jobs').columns(['agent_id', 'blob_id', 'created_at']).execute();

  await db.schema
    .createTable('parse_deliveries')
    .addColumn('delivery_id', 'text', (c) => c.primaryKey())
    .addColumn('parse_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('attempt_number', 'integer', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('http_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('parse_deliveries_attempt_unique', ['parse_id', 'attempt_number'])
    .execute();

  await db.schema
    .createTable('blob_chunks')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('blob_id', 'text', (c) => c.notNull())
    .addColumn('chunk_index', 'integer', (c) => c.notNull())
    .addColumn('parse_id', 'text', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('location', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('blob_chunks_pk', ['agent_id', 'blob_id', 'chunk_index'])
    .execute();

  await db.schema
    .createTable('callback_secrets')
    .addColumn('agent_id', 'text', (c) => c.primaryKey())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
