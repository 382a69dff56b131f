import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import type pg from 'pg';
import { lazyModule } from '../../lib/lazy-module';
import { loadVectorExtension } from '../vectors/sqlite-vec';
import type { Database } from './schema';
import type { Engine } from './dialect';
import { createCommitSync, type CommitSync } from './commit-sync';

/** The pg driver, loaded when a PostgreSQL DATABASE_URL is opened (a SQLite host never needs it). */
const pgDriver = lazyModule<typeof pg>('pg', (driver) => {
  // int8 (bigint) columns hold epoch milliseconds and counters: well inside 2^53, so read them as numbers.
  driver.types.setTypeParser(20, (v) => Number(v));
  // numeric as number too (sums of integer columns come back as numeric).
  driver.types.setTypeParser(1700, (v) => Number(v));
});

/**
 * The PostgreSQL server could not be reached for a connection (down, restarting, refusing, out of
 * connection slots): routes answer 503 DATABASE_UNAVAILABLE (http/errors.ts, `publicStatus`), the
 * driver's message stays in the log.
 */
export class DatabaseUnavailableError extends Error {
  readonly code = 'DATABASE_UNAVAILABLE';
  readonly publicStatus = 503;
  readonly publicMessage = 'The database cannot be reached right now; try again shortly';
  constructor(cause: unknown) {
    super(`database connection failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

/** Whether a driver error means the server cannot be reached (rather than a statement refused). */
function isConnectionLoss(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown } | null;
  const code = typeof err?.code === 'string' ? err.code : '';
  const message = typeof err?.message === 'string' ? err.message : '';
  return code.startsWith('08') // SQLSTATE class 08: connection exception
    || ['57P01', '57P02', '57P03', '53300'].includes(code) // shut down, crashed, starting up, too many connections
    || ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)
    || /^Connection terminated|not queryable/i.test(message);
}

/**
 * The pool as Kysely takes it, with every way to lose the server (no connection to be had, a
 * connection cut under a statement) turned into DatabaseUnavailableError; any other error (a
 * constraint, a bad statement) passes as it is.
 */
function unavailableAware(pool: pg.Pool) {
  const wrapped = new WeakMap<pg.PoolClient, { query: pg.PoolClient['query']; release: () => void }>();
  const lost = (e: unknown) => (isConnectionLoss(e) ? new DatabaseUnavailableError(e) : e);
  return {
    async connect() {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (e) {
        throw new DatabaseUnavailableError(e);
      }
      let w = wrapped.get(client);
      if (!w) {
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        w = {
          // A cursor (a streamed query) is returned as it is; a statement's promise has its error mapped.
          query: ((...args: unknown[]) => {
            const r = query(...args);
            return r instanceof Promise ? r.catch((e: unknown) => { throw lost(e); }) : r;
          }) as pg.PoolClient['query'],
          release: () => client.release(),
        };
        wrapped.set(client, w);
      }
      return w;
    },
    end: () => pool.end(),
  };
}

export interface DatabaseHandle {
  db: Kysely<Database>;
  engine: Engine;
  /** The raw better-sqlite3 connection (SQLite only). */
  sqlite?: SQLite.Database;
  /** Why sqlite-vec could not be loaded (SQLite only; vector search then scans exactly). */
  vectorExtensionError?: string;
  /** Group commit with the disk flush off the event loop (commit-sync.ts); for the write batchers. */
  commits: CommitSync;
  /** The pg pool (PostgreSQL only). */
  pool?: pg.Pool;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl?: string;
  dataDir: string;
  poolMax: number;
}

/** WAL pages between automatic checkpoints (SQLite's default 1,000); ~40 MiB of WAL at 4 KiB pages. docs/decisions.md. */
export const WAL_CHECKPOINT_PAGES = 10_000;
/** Bytes the WAL file is truncated to after a checkpoint restarts it. */
const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

export function openDatabase(opts: DatabaseOptions): DatabaseHandle {
  if (opts.databaseUrl) {
    const pool = new (pgDriver().Pool)({ connectionString: opts.databaseUrl, max: opts.poolMax });
    // A client losing its connection must not crash the process: idle ones report to the pool, and
    // every client keeps a listener of its own, because the pool takes its listener off a client it
    // hands out (a connection cut between two statements of a transaction emitted 'error' with no
    // listener: an uncaught exception). The statement running, if any, fails with the error.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: unavailableAware(pool) }) });
    return { db, engine: 'postgres', pool, commits: createCommitSync(db), close: () => db.destroy() };
  }
  const dir = resolve(opts.dataDir);
  mkdirSync(dir, { recursive: true });
  const sqlite = new SQLite(join(dir, 'svc.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  // FULL: an acknowledged write survives power loss, not just a process crash.
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('busy_timeout = 5000');
  // Savepoint journals (every grouped write runs in its own savepoint) in memory, not in a temporary
  // file: they only serve rollbacks inside an open transaction, durability is the WAL's. With a file,
  // each first change of a page inside a savepoint cost a write() call (memory PUT 3.1k → 4.5k req/s).
  sqlite.pragma('temp_store = MEMORY');
  // A checkpoint every WAL_CHECKPOINT_PAGES pages rather than SQLite's 1,000: each one runs at the
  // end of a COMMIT on the event loop and fsyncs the WAL and the database file there (~10–15 ms on
  // a small VM whatever its size), and sustained writes filled 1,000 pages many times a second.
  // The WAL file is cut back to WAL_SIZE_LIMIT after a restart if a long reader let it grow past.
  sqlite.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
  sqlite.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
  sqlite.pragma('foreign_keys = ON');
  // sqlite-vec before migrations: once a vec0 table exists, schema introspection needs the module.
  const vectorExtensionError = loadVectorExtension({ engine: 'sqlite', sqlite });
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  const commits = createCommitSync(db, sqlite);
  return {
    db, engine: 'sqlite', sqlite, vectorExtensionError, commits,
    async close() {
      await commits.close();
      await db.destroy();
    },
  };
}

/**
 * Kysely's SQLite driver calls `prepare(sql)` for every query; preparing costs more than running a
 * key lookup. This wrapper hands Kysely a cached statement per SQL text (bounded; least recently
 * used evicted). Kysely runs one query at a time on the connection and never leaves an iterator
 * open between calls except when streaming, which svc does not use on SQLite.
 */
function withStatementCache(sqlite: SQLite.Database, max = 500): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = (sql: string): SQLite.Statement => {
    let stmt = cache.get(sql);
    if (stmt) {
      cache.delete(sql);
    } else {
      stmt = sqlite.prepare(sql);
      if (cache.size >= max) cache.delete(cache.keys().next().value as string);
    }
    cache.set(sql, stmt);
    return stmt;
  };
  return new Proxy(sqlite, {
    get(target, prop, receiver) {
      if (prop === 'prepare') return prepare;
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
