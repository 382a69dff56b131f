import type { Kysely } from 'kysely';

/** Browse log and feedback events (search has no table: search_id is an opaque reference). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('browse_log')
    .addColumn('browse_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('final_url', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('http_status', 'integer', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('title', 'text')
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('response_time_ms', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // activity feed: an agent's browses newest first, keyset-paginated on (created_at, browse_id).
  await db.schema.createIndex('browse_log_agent_time_idx').on('browse_log').columns(['agent_id', 'created_at', 'browse_id']).execute();

  await db.schema
    .createTable('feedback_events')
    .addColumn('feedback_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('ref_type', 'text', (c) => c.notNull())
    .addColumn('ref_id', 'text', (c) => c.notNull())
    .addColumn('signal', 'text', (c) => c.notNull())
    .addColumn('note', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // stats windows and the activity feed.
  await db.schema.createIndex('feedback_events_agent_time_idx').on('feedback_events').columns(['agent_id', 'created_at', 'feedback_id']).execute();

  await db.schema
    .createTable('feedback_monthly')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('feedback_monthly_pk', ['agent_id', 'month'])
    .execute();
}
