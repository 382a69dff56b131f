/**
 * Group commit with the disk flush off the event loop (SQLite).
 *
 * better-sqlite3 is synchronous: with `synchronous = FULL` every COMMIT calls fsync on the WAL while
 * the event loop waits, so no request is parsed, authenticated or answered during the flush. The
 * write batchers (memory writes, metering charges) commit instead with `synchronous = NORMAL` for
 * that one transaction: the WAL frames are written (the OS has them) but not flushed. They then
 * call `durable()`, which runs `fdatasync` on the WAL file in libuv's thread pool, and acknowledge
 * their writes only when it has returned. One flush covers every commit made before it started, so
 * writes that commit while a flush runs share the next one.
 *
 * Why this is as durable as FULL for every acknowledged write: the commit's frames are in the WAL
 * file when COMMIT returns, and an fdatasync that starts after that puts them on disk. SQLite in
 * NORMAL mode still syncs the WAL before each checkpoint and the database file after it, and only
 * restarts the WAL after a complete checkpoint, so frames overwritten later were already on disk in
 * the database file. SQLite deletes the WAL file only when the last connection closes or the journal
 * mode changes, and svc does neither while serving, so the descriptor kept open here stays the file.
 *
 * Every other transaction keeps the connection's `synchronous = FULL` (the pragma is set back after
 * the deferred transaction, on the same connection, before anyone else can use it).
 *
 * On PostgreSQL the commit already waits for the WAL flush without blocking the event loop, so
 * `transaction` is a plain transaction and `durable` resolves at once.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type SQLite from 'better-sqlite3';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema';

export interface CommitSync {
  /** Runs fn in one transaction whose COMMIT does not wait for the disk; await `durable()` before acknowledging. */
  transaction<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
  /** Resolves once every transaction committed before the call is on disk; rejects if the flush failed. */
  durable(): Promise<void>;
  /** True while some commit is not yet known to be on disk (readers that must not see it wait on `durable()`). */
  readonly unsynced: boolean;
  /** WAL flushes started so far (0 on PostgreSQL). */
  readonly flushes: number;
  close(): Promise<void>;
}

/**
 * A read answered only once everything committed before it is on disk, so nobody is shown a write a
 * power loss could still take back. The wait comes after the read: a read that found the connection
 * busy waits for the open batch's COMMIT, then sees it. Nothing to wait for without unflushed commits.
 */
export async function settled<T>(commits: Pick<CommitSync, 'unsynced' | 'durable'>, read: Promise<T>): Promise<T> {
  const value = await read;
  if (commits.unsynced) await commits.durable().catch(() => {});
  return value;
}

/**
 * Runs a transaction and, when it fails, throws the error of the work rather than one of the
 * rollback: SQLite rolls a transaction back by itself on some errors (SQLITE_FULL, I/O errors), and
 * the ROLLBACK that follows ("cannot rollback - no transaction is active") would hide the cause.
 */
export async function keepingCause<T>(fn: (trx: Transaction<Database>) => Promise<T>, run: (f: (trx: Transaction<Database>) => Promise<T>) => Promise<T>): Promise<T> {
  let cause: { error: unknown } | undefined;
  try {
    return await run(async (trx) => {
      try {
        return await fn(trx);
      } catch (error) {
        cause = { error };
        throw error;
      }
    });
  } catch (error) {
    if (cause && error !== cause.error && /no transaction is active/i.test(String((error as Error | null)?.message))) throw cause.error;
    throw error;
  }
}

export function createCommitSync(
  db: Kysely<Database>,
  sqlite?: SQLite.Database,
  /** Tests only: replaces the fdatasync of the WAL file. */
  opts: { flush?: () => Promise<void> } = {},
): CommitSync {
  // PostgreSQL; or an in-memory SQLite database, which has no file to flush.
  if (!sqlite || sqlite.memory) {
    return {
      transaction: (fn) => keepingCause(fn, (f) => db.transaction().execute(f)),
      durable: () => Promise.resolve(),
      unsynced: false,
      flushes: 0,
      close: async () => {},
    };
  }
  const walPath = `${sqlite.name}-wal`;
  let wal: Promise<FileHandle> | undefined;
  const flushWal = opts.flush ?? (async () => {
    wal ??= open(walPath, 'r');
    await (await wal).datasync();
  });
  // Run straight on the connection: `transaction` holds it (Kysely's connection lock) meanwhile.
  // exec, not a statement prepared once: SQLite applies this pragma when it compiles it, so a
  // prepared statement run again does nothing.
  const deferred = () => sqlite.exec('pragma synchronous = normal');
  const restored = () => sqlite.exec('pragma synchronous = full');
  let flushes = 0;
  // Commits counted as they finish; `synced` is the count the last completed flush covered.
  let committed = 0;
  let synced = 0;
  let running: Promise<void> | undefined;
  let runningUpTo = 0;
  let queued: Promise<void> | undefined;
  // A failed flush is final: after an fsync error Linux may report later flushes as good although the
  // lost pages never reached the disk, so no write is acknowledged again until a restart.
  let failed: Error | undefined;

  async function flush(upTo: number): Promise<void> {
    try {
      flushes++;
      await flushWal();
    } catch (e) {
      failed = new Error(`flushing the SQLite WAL failed; writes are no longer acknowledged until restart: ${(e as Error).message}`);
      throw failed;
    }
    if (upTo > synced) synced = upTo;
  }

  function durable(): Promise<void> {
    if (failed) return Promise.reject(failed);
    const need = committed;
    if (synced >= need) return Promise.resolve();
    if (running && runningUpTo >= need) return running;
    if (!running) {
      runningUpTo = need;
      running = flush(need).finally(() => { running = undefined; });
      return running;
    }
    // The running flush started before the caller's commit: wait for the next one.
    queued ??= running.catch(() => {}).then(() => { queued = undefined; return durable(); });
    return queued;
  }

  return {
    async transaction(fn) {
      return db.connection().execute(async (conn) => {
        deferred();
        try {
          const out = await keepingCause(fn, (f) => conn.transaction().execute(f));
          committed++;
          return out;
        } finally {
          restored();
        }
      });
    },
    durable,
    get unsynced() {
      return synced !== committed;
    },
    get flushes() {
      return flushes;
    },
    async close() {
      // Commits still waiting for a flush get it before the file is closed.
      await durable().catch(() => {});
      const handle = await wal?.catch(() => undefined);
      wal = undefined;
      await handle?.close();
    },
  };
}
