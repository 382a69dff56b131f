import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema';
import type { Engine } from './dialect';

// int8 (bigint) columns hold epoch milliseconds and counters: well inside 2^53, so read them as numbers.
pg.types.setTypeParser(20, (v) => Number(v));
// numeric as number too (sums of integer columns come back as numeric).
pg.types.setTypeParser(1700, (v) => Number(v));

export interface DatabaseHandle {
  db: Kysely<Database>;
  engine: Engine;
  /** The raw better-sqlite3 connection (SQLite only): used to load sqlite-vec. */
  sqlite?: SQLite.Database;
  /** The pg pool (PostgreSQL only). */
  pool?: pg.Pool;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl?: string;
  dataDir: string;
  poolMax: number;
}

export function openDatabase(opts: DatabaseOptions): DatabaseHandle {
  if (opts.databaseUrl) {
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: opts.poolMax });
    // An idle client losing its connection must not crash the process.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, engine: 'postgres', pool, close: () => db.destroy() };
  }
  const dir = resolve(opts.dataDir);
  mkdirSync(dir, { recursive: true });
  const sqlite = new SQLite(join(dir, 'svc.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  // FULL: an acknowledged write survives power loss, not just a process crash.
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, engine: 'sqlite', sqlite, close: () => db.destroy() };
}
