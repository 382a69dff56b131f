import type { Kysely } from 'kysely';

/**
 * Passport key rotation and ephemeral passports.
 *
 * - `passport_rotations`: one row per agent whose passport key was rotated (a projection of the trust
 *   log's `passport.rotated` entries): the key version now in force, the key it replaced (it still
 *   verifies challenges until `grace_until`) and the key that replaced it.
 * - `ephemeral_passports`: session-scoped passports issued by POST /v1/auth/passport/ephemeral.
 * - `api_keys.passport_key_version`: the passport key version a session token was issued under
 *   (null: 0, before any rotation); `api_keys.ephemeral_passport_id`: the ephemeral passport a
 *   session token is bound to.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('passport_rotations')
    .addColumn('agent_id', 'text', (c) => c.primaryKey().references('agents.agent_id'))
    .addColumn('key_version', 'integer', (c) => c.notNull())
    .addColumn('previous_key_pem', 'text', (c) => c.notNull())
    .addColumn('previous_key_sha256', 'text', (c) => c.notNull())
    .addColumn('current_key_sha256', 'text', (c) => c.notNull())
    .addColumn('rotated_at', 'bigint', (c) => c.notNull())
    .addColumn('grace_until', 'bigint', (c) => c.notNull())
    .addColumn('log_index', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('ephemeral_passports')
    .addColumn('ephemeral_passport_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.agent_id'))
    .addColumn('issued_via', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('ephemeral_passports_agent_idx').on('ephemeral_passports').columns(['agent_id', 'expires_at']).execute();
  await db.schema.createIndex('ephemeral_passports_created_idx').on('ephemeral_passports').column('created_at').execute();

  await db.schema.alterTable('api_keys').addColumn('passport_key_version', 'integer').execute();
  await db.schema.alterTable('api_keys').addColumn('ephemeral_passport_id', 'text').execute();
  await db.schema.createIndex('api_keys_ephemeral_idx').on('api_keys').column('ephemeral_passport_id').execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
