import { sql, type Kysely } from 'kysely';

/**
 * Custody: covenants become a projection of the trust log (the entry that bound each one; existing
 * covenants get theirs at start-up), one active covenant per agent; recovery intents (their veto
 * window, initiation, completion and the staged resurrection of a channel recovery); the HMAC secret
 * of a channel covenant and the single-use codes delivered through it; pending custody transfers.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('covenants').addColumn('bound_log_index', 'bigint').execute();
  await db.schema.createIndex('covenants_active_once').on('covenants').column('agent_id').unique()
    .where(sql.ref('superseded_at'), 'is', null).execute();
  await db.schema.createIndex('covenants_unlogged_idx').on('covenants').column('bound_log_index').execute();

  await db.schema.createTable('recovery_intents')
    .addColumn('intent_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    /** recovery_key | channel: the covenant the intent was proved through. */
    .addColumn('tier', 'text', (c) => c.notNull())
    .addColumn('new_public_key_pem', 'text', (c) => c.notNull())
    .addColumn('new_public_key_sha256', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull()) // open | vetoed | initiated | completed
    .addColumn('opened_at', 'bigint', (c) => c.notNull())
    .addColumn('veto_deadline', 'bigint', (c) => c.notNull())
    .addColumn('lapses_at', 'bigint', (c) => c.notNull())
    .addColumn('opened_log_index', 'bigint', (c) => c.notNull())
    .addColumn('vetoed_at', 'bigint')
    .addColumn('initiated_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('closed_log_index', 'bigint')
    .addColumn('staged_until', 'bigint')
    .execute();
  await db.schema.createIndex('recovery_intents_agent_idx').on('recovery_intents').columns(['agent_id', 'opened_log_index']).execute();
  await db.schema.createIndex('recovery_intents_staged_idx').on('recovery_intents').columns(['agent_id', 'staged_until']).execute();

  await db.schema.createTable('covenant_channel_secrets')
    .addColumn('covenant_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema.createTable('recovery_channel_codes')
    .addColumn('code_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    /** SHA-256 of the JCS bytes of the content the code proves (the intent request). */
    .addColumn('binding_sha256', 'text', (c) => c.notNull())
    .addColumn('code_sha256', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('recovery_channel_codes_agent_idx').on('recovery_channel_codes').columns(['agent_id', 'created_at']).execute();

  await db.schema.createTable('custody_transfers')
    .addColumn('transfer_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('challenge_id', 'text', (c) => c.notNull())
    .addColumn('incoming_public_key_pem', 'text', (c) => c.notNull())
    .addColumn('incoming_owner_identifier', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema.createIndex('custody_transfers_agent_idx').on('custody_transfers').columns(['agent_id', 'created_at']).execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
