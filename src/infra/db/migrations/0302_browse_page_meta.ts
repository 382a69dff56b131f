import type { Kysely } from 'kysely';

/**
 * What a browsed page states about itself, beside its title and text: byline, publication date
 * (ISO 8601 as stated), language (BCP 47) and site name; null when the page does not state them.
 * One ALTER per column (SQLite adds one column a statement).
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const column of ['byline', 'published_at', 'language', 'site_name']) {
    await db.schema.alterTable('browse_log').addColumn(column, 'text').execute();
  }
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
