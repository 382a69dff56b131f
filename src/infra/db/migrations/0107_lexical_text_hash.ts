import type { Kysely } from 'kysely';

/**
 * `lexical_docs.text_hash`: a hash of the text an item's terms were made from, so writing the same
 * text again leaves the index as it is (src/infra/lexical). Rows indexed before have none and are
 * rewritten, with their hash, on their next write.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('lexical_docs').addColumn('text_hash', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
