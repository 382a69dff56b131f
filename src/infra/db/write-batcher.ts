/**
 * Group commit: writes that arrive while a transaction is running wait and go together in the next
 * one (first without savepoints; if a write fails, the batch runs again with each write inside its
 * own savepoint). A write is acknowledged only after the COMMIT that contains it
 * is on disk (one flush for the batch instead of one per write; on SQLite the flush runs off the
 * event loop and the next batch may commit meanwhile, see infra/db/commit-sync.ts), and a write that
 * fails rolls back to its savepoint without touching the others in its batch.
 *
 * Jobs of a batch run in the order of their lock key (the agent id; stable, so one agent's writes
 * keep their order): every transaction then takes the agents' row locks in the same global order,
 * so two instances' batches on PostgreSQL cannot deadlock on each other.
 *
 * The batch is a transaction scope (infra/db/trx-scope.ts): billing's charges of one agent share one
 * account lock and write their lot and day-counter updates once, when the scope ends (before COMMIT
 * for an optimistic batch; inside each job's savepoint when jobs run guarded, so a job rolled back
 * to its savepoint takes its share with it).
 */
import { sql, type Transaction } from 'kysely';
import type { Database } from './schema';
import type { CommitSync } from './commit-sync';
import { withScope } from './trx-scope';

interface Job<T> {
  key: string;
  /** False: settled once its transaction has committed, without waiting for the flush (see submit). */
  durable: boolean;
  run(trx: Transaction<Database>): Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
  outcome?: { ok: true; value: T } | { ok: false; error: unknown };
}

/** Batches run with savepoints straight away after an optimistic batch failed. */
const GUARDED_AFTER_REFUSAL = 16;

export function createWriteBatcher(commits: CommitSync, maxBatch = 256) {
  const queue: Job<any>[] = [];
  let running = false;
  let guardedBatches = 0;

  const settle = (job: Job<any>) => {
    const o = job.outcome!;
    if (o.ok) job.resolve(o.value);
    else job.reject(o.error);
  };

  /**
   * Settles the batch's jobs once its commit is on disk (every outcome, so none is answered early);
   * jobs submitted with `durable: false` at once (their flush still starts now).
   */
  function settleWhenDurable(batch: Job<any>[]): void {
    const waiting: Job<any>[] = [];
    for (const job of batch) {
      if (job.durable) waiting.push(job);
      else settle(job);
    }
    commits.durable().then(
      () => { for (const job of waiting) settle(job); },
      (error) => { for (const job of waiting) job.reject(error); },
    );
  }

  async function runBatch(batch: Job<any>[]): Promise<void> {
    if (batch.length === 1) {
      // Alone: no savepoint needed; a failure rolls the whole transaction back.
      const [job] = batch;
      try {
        job.outcome = { ok: true, value: await commits.transaction((trx) => withScope(trx, () => job.run(trx))) };
      } catch (error) {
        job.outcome = { ok: false, error };
      }
      settleWhenDurable(batch);
      return;
    }
    batch.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    if (guardedBatches > 0) {
      guardedBatches--;
    } else {
      // Optimistic: no savepoints (they cost about as much as a write's own statements). If every job
      // succeeds, done; if one throws, the whole transaction rolled back and the batch runs again below,
      // each job in its savepoint. Jobs only write through `trx` (their in-memory caches follow the
      // database's stamps and reload after a rollback), so running one twice is safe. After a refusal
      // the next batches go straight to savepoints for a while, so a client that keeps being refused
      // cannot make every batch run twice.
      let failed = false;
      try {
        // One scope for the whole batch (trx-scope.ts): jobs may share what it holds and put writes off to its end.
        await commits.transaction((trx) => withScope(trx, async () => {
          for (const job of batch) job.outcome = { ok: true, value: await job.run(trx) };
        }));
      } catch {
        failed = true;
      }
      if (!failed) return settleWhenDurable(batch);
      guardedBatches = GUARDED_AFTER_REFUSAL;
    }
    try {
      await commits.transaction(async (trx) => {
        for (const job of batch) {
          await sql`savepoint svc_write`.execute(trx);
          try {
            // A scope per job: what it put off is written inside its savepoint, and forgotten if that rolls back.
            job.outcome = { ok: true, value: await withScope(trx, () => job.run(trx)) };
            await sql`release savepoint svc_write`.execute(trx);
          } catch (error) {
            job.outcome = { ok: false, error };
            try {
              await sql`rollback to savepoint svc_write`.execute(trx);
              await sql`release savepoint svc_write`.execute(trx);
            } catch {
              // The transaction itself is gone (SQLite rolls back on SQLITE_FULL and I/O errors): the
              // batch fails with this job's error, not the savepoint's.
              throw error;
            }
          }
        }
      });
    } catch (error) {
      // The batch did not commit: nothing of it is durable, so no job succeeded.
      for (const job of batch) job.reject(error);
      return;
    }
    settleWhenDurable(batch);
  }

  async function drain(): Promise<void> {
    running = true;
    try {
      while (queue.length > 0) await runBatch(queue.splice(0, maxBatch));
    } finally {
      running = false;
    }
  }

  return {
    /**
     * Runs `run` in a shared transaction; resolves after that transaction has committed and is on
     * disk. `key`: the lock key (agent id). `durable: false` resolves after the COMMIT without
     * waiting for the flush (which starts at once): only for bookkeeping that may be lost to a power
     * cut (never to a process crash: the commit is in the WAL), such as counting a search.
     */
    submit<T>(run: (trx: Transaction<Database>) => Promise<T>, key = '', opts: { durable?: boolean } = {}): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ key, durable: opts.durable ?? true, run, resolve, reject });
        // After the current tick, so requests arriving together share the first batch too.
        if (!running) {
          running = true;
          setImmediate(() => void drain());
        }
      });
    },
  };
}
