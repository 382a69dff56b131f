import { sql, type Kysely } from 'kysely';
import { engineOf } from '../dialect';

/**
 * SQLite: vector search no longer mirrors vectors into sqlite-vec `vec0` tables (`vec_bits_<dims>`);
 * it keeps resident codes built from `vector_items` (src/infra/vectors/resident.ts). The mirrors are
 * dropped with their shadow tables. The extension is still loaded when a database is opened, so a
 * database that has them can be introspected and migrated.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) !== 'sqlite') return;
  const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name glob 'vec_bits_[0-9]*' and sql like '%using vec0%'`.execute(db);
  for (const r of rows) await sql`drop table if exists ${sql.table(r.name)}`.execute(db);
}

export async function down(): Promise<void> {
  // Nothing to restore: the mirrors were derived from vector_items.
}
