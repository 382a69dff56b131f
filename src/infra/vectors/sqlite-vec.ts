/**
 * The sqlite-vec extension, loaded into each SQLite connection right after it is opened and before
 * migrations: databases written by earlier versions hold sqlite-vec `vec0` tables, and any schema
 * introspection (Kysely's migrator lists every table) needs the module until migration 0106 has
 * dropped them. Vector search itself does not use it (resident.ts).
 */
import type BetterSqlite3 from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';

/** Returns the error message when the extension cannot be loaded. */
export function loadVectorExtension(database: { engine: string; sqlite?: BetterSqlite3.Database }): string | undefined {
  if (database.engine !== 'sqlite' || !database.sqlite) return undefined;
  try {
    database.sqlite.prepare('select vec_version()').get(); // already loaded
    return undefined;
  } catch {
    /* not yet */
  }
  try {
    sqliteVec.load(database.sqlite);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}
