import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('agents')
    .addColumn('agent_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_name', 'text', (c) => c.notNull())
    .addColumn('owner_identifier', 'text', (c) => c.notNull())
    .addColumn('tier', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
    .addColumn('frozen', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('referral_agent', 'text')
    .addColumn('registration_source', 'text')
    .addColumn('agent_card_url', 'text')
    .addColumn('affiliation', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('agents_name_owner_unique', ['agent_name', 'owner_identifier'])
    .execute();
  await db.schema.createIndex('agents_owner_idx').on('agents').column('owner_identifier').execute();

  await db.schema
    .createTable('passports')
    .addColumn('agent_id', 'text', (c) => c.primaryKey().references('agents.agent_id'))
    .addColumn('public_key_pem', 'text', (c) => c.notNull())
    .addColumn('derivation_method', 'text', (c) => c.notNull())
    .addColumn('key_algorithm', 'text', (c) => c.notNull().defaultTo('ed25519'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('bio', 'text')
    .addColumn('skills', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('listed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sub_signal_visibility', 'text', (c) => c.notNull().defaultTo('decomposed'))
    .addColumn('self_reported_capabilities', 'text')
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('key_hash', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.agent_id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('label', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_agent_idx').on('api_keys').columns(['agent_id', 'kind']).execute();

  await db.schema
    .createTable('passport_challenges')
    .addColumn('challenge_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.agent_id'))
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('issued_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('passport_challenges_expiry_idx').on('passport_challenges').column('expires_at').execute();

  await db.schema
    .createTable('recovery_keys')
    .addColumn('agent_id', 'text', (c) => c.primaryKey().references('agents.agent_id'))
    .addColumn('public_key_pem', 'text', (c) => c.notNull())
    .addColumn('enrolled_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('covenants')
    .addColumn('covenant_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.agent_id'))
    .addColumn('template_id', 'text', (c) => c.notNull())
    .addColumn('params', 'text', (c) => c.notNull())
    .addColumn('bound_at', 'bigint', (c) => c.notNull())
    .addColumn('superseded_at', 'bigint')
    .execute();
  await db.schema.createIndex('covenants_agent_idx').on('covenants').columns(['agent_id', 'superseded_at']).execute();

  await db.schema
    .createTable('referrals')
    .addColumn('referred_agent_id', 'text', (c) => c.primaryKey().references('agents.agent_id'))
    .addColumn('referrer_agent_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('referrals_referrer_idx').on('referrals').columns(['referrer_agent_id', 'status']).execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
