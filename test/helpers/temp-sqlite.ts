import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, type LogConfig } from 'kysely';
import { migrateToLatest, migrateUpTo } from '../../src/infra/db/migrate';
import type { Database } from '../../src/infra/db/schema';

/**
 * A SQLite file in a fresh temporary directory, opened as svc opens it (WAL, `synchronous = FULL`),
 * with Kysely over the same connection: for unit tests of stores and of the commit path that need a
 * real file (the WAL, its flush) rather than `:memory:`.
 */
export interface TempSqlite {
  dir: string;
  sqlite: SQLite.Database;
  db: Kysely<Database>;
  /** Destroys Kysely (closing the connection) and removes the directory. */
  close(): Promise<void>;
}

export async function openTempSqlite(name: string, opts: { migrate?: 'latest' | string; log?: LogConfig } = {}): Promise<TempSqlite> {
  const dir = mkdtempSync(join(tmpdir(), `svc-${name}-`));
  const sqlite = new SQLite(join(dir, 'db.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log: opts.log });
  if (opts.migrate === 'latest') await migrateToLatest(db);
  else if (opts.migrate) await migrateUpTo(db, opts.migrate);
  return {
    dir, sqlite, db,
    async close() {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
