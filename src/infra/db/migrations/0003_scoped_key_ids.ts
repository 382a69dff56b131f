import type { Kysely } from 'kysely';

/**
 * Scoped API keys get a public id (`key_id`) to list and revoke them by: the row's primary key is the
 * SHA-256 digest of the secret, which is never shown. Root keys and session tokens keep a null id.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('key_id', 'text').execute();
  await db.schema.createIndex('api_keys_key_id_idx').on('api_keys').column('key_id').unique().execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
