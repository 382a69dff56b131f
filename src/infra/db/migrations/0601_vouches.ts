import { sql, type Kysely } from 'kysely';

/** Skill vouches (a projection of the trust log's vouch.given / vouch.revoked entries). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('vouches')
    .addColumn('vouch_id', 'text', (c) => c.primaryKey())
    .addColumn('target_agent_id', 'text', (c) => c.notNull())
    .addColumn('voucher_agent_id', 'text', (c) => c.notNull())
    .addColumn('skill', 'text', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('weight', 'double precision', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('created_log_index', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('revoked_log_index', 'bigint')
    .execute();
  // One active vouch per (voucher, target, skill); revoked ones stay as history.
  await db.schema.createIndex('vouches_active_once').on('vouches').columns(['voucher_agent_id', 'target_agent_id', 'skill']).unique()
    .where(sql.ref('revoked_at'), 'is', null).execute();
  await db.schema.createIndex('vouches_target_idx').on('vouches').columns(['target_agent_id', 'epoch', 'revoked_at']).execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
