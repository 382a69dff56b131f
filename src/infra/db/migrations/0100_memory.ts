import type { Kysely } from 'kysely';

/** Memory ledger, live pointers and counters. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('memory_versions')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('op', 'text', (c) => c.notNull())
    .addColumn('value', 'text')
    .addColumn('size_bytes', 'integer', (c) => c.notNull())
    .addColumn('importance', 'text')
    .addColumn('source', 'text')
    .addColumn('confidence', 'double precision')
    .addColumn('derived_start', 'bigint')
    .addColumn('derived_end', 'bigint')
    .addColumn('expires_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('memory_versions_pk', ['agent_id', 'key', 'version'])
    .execute();

  await db.schema
    .createTable('memory_heads')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'integer', (c) => c.notNull())
    .addColumn('importance', 'text', (c) => c.notNull())
    .addColumn('importance_rank', 'integer', (c) => c.notNull())
    .addColumn('source', 'text')
    .addColumn('confidence', 'double precision', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('memory_heads_pk', ['agent_id', 'key'])
    .execute();
  // context: live entries of an agent by importance then recency.
  await db.schema.createIndex('memory_heads_context_idx').on('memory_heads')
    .columns(['agent_id', 'state', 'importance_rank', 'updated_at']).execute();
  // sweeper and the expired-bytes correction.
  await db.schema.createIndex('memory_heads_expiry_idx').on('memory_heads').columns(['expires_at']).execute();
  await db.schema.createIndex('memory_heads_agent_expiry_idx').on('memory_heads').columns(['agent_id', 'expires_at']).execute();

  await db.schema
    .createTable('memory_agents')
    .addColumn('agent_id', 'text', (c) => c.primaryKey())
    .addColumn('storage_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('live_keys', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('memory_usage')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('writes', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('searches', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('memory_usage_pk', ['agent_id', 'month'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
