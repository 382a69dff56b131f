/**
 * SQL of the job queue. The claim is a single UPDATE ... WHERE job_id IN (SELECT ... LIMIT n)
 * RETURNING: on PostgreSQL the inner SELECT takes FOR UPDATE SKIP LOCKED, so concurrent claimers
 * on several instances each get different rows without waiting; on SQLite the statement runs
 * under the database's single write lock, which gives the same exclusivity.
 */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { engineOf } from '../db/dialect';
import type { Database } from '../db/schema';
import type { QueueJobsTable } from '../db/tables/blobs';
import type { EnqueueOptions, JobState, QueueJob } from './types';

type Row = QueueJobsTable;

function toJob<P>(r: Row, leaseToken?: string): QueueJob<P> {
  return {
    jobId: r.job_id,
    queue: r.queue,
    dedupeKey: r.dedupe_key,
    payload: JSON.parse(r.payload) as P,
    state: r.state as JobState,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    runAt: Number(r.run_at),
    lastError: r.last_error,
    createdAt: Number(r.created_at),
    ...(leaseToken ? { leaseToken } : {}),
  };
}

export function createQueueStore(db: Kysely<Database>) {
  const pg = engineOf(db) === 'postgres';
  const lock = pg ? sql`FOR UPDATE SKIP LOCKED` : sql``;
  const due = (now: number) =>
    sql`((state = 'pending' AND run_at <= ${now}) OR (state = 'running' AND lease_expires_at <= ${now}))`;

  return {
    async insert(queue: string, payload: unknown, opts: EnqueueOptions & { maxAttempts: number; now: number }): Promise<string> {
      const q = opts.trx ?? db;
      const jobId = randomUUID();
      const res = await q.insertInto('queue_jobs').values({
        job_id: jobId, queue, dedupe_key: opts.dedupeKey ?? null, payload: JSON.stringify(payload), state: 'pending',
        attempts: 0, max_attempts: opts.maxAttempts, run_at: opts.runAt ?? opts.now, lease_owner: null, lease_expires_at: null,
        last_error: null, created_at: opts.now, updated_at: opts.now,
      }).onConflict((oc) => oc.column('dedupe_key').doNothing()).executeTakeFirst();
      if (Number(res.numInsertedOrUpdatedRows ?? 0) > 0 || !opts.dedupeKey) return jobId;
      const existing = await q.selectFrom('queue_jobs').select('job_id').where('dedupe_key', '=', opts.dedupeKey).executeTakeFirstOrThrow();
      return existing.job_id;
    },

    /** Claims up to `limit` due jobs of `queue` under a fresh lease token. */
    async claim<P>(queue: string, limit: number, now: number, leaseMs: number): Promise<QueueJob<P>[]> {
      const token = randomUUID();
      const res = await sql<Row>`
        UPDATE queue_jobs SET state = 'running', lease_owner = ${token}, lease_expires_at = ${now + leaseMs},
          attempts = attempts + 1, updated_at = ${now}
        WHERE job_id IN (
          SELECT job_id FROM queue_jobs WHERE queue = ${queue} AND ${due(now)}
          ORDER BY run_at LIMIT ${limit} ${lock})
        RETURNING *`.execute(db);
      return res.rows.map((r) => toJob<P>(r, token));
    },

    /** Claims one job by its dedupe key whatever its run_at (push delivery decides when), if it is claimable. */
    async claimByKey<P>(dedupeKey: string, now: number, leaseMs: number): Promise<QueueJob<P> | undefined> {
      const token = randomUUID();
      const res = await sql<Row>`
        UPDATE queue_jobs SET state = 'running', lease_owner = ${token}, lease_expires_at = ${now + leaseMs},
          attempts = attempts + 1, updated_at = ${now}
        WHERE job_id IN (
          SELECT job_id FROM queue_jobs WHERE dedupe_key = ${dedupeKey}
            AND (state = 'pending' OR (state = 'running' AND lease_expires_at <= ${now})) ${lock})
        RETURNING *`.execute(db);
      const row = res.rows[0];
      return row ? toJob<P>(row, token) : undefined;
    },

    async byKey<P>(dedupeKey: string): Promise<QueueJob<P> | undefined> {
      const row = await db.selectFrom('queue_jobs').selectAll().where('dedupe_key', '=', dedupeKey).executeTakeFirst();
      return row ? toJob<P>(row) : undefined;
    },

    async byId<P>(jobId: string): Promise<QueueJob<P> | undefined> {
      const row = await db.selectFrom('queue_jobs').selectAll().where('job_id', '=', jobId).executeTakeFirst();
      return row ? toJob<P>(row) : undefined;
    },

    /** Moves a claimed job on; false when the lease was lost (another claimer owns it now). */
    async settle(job: QueueJob, next: { state: JobState; runAt?: number; error?: string | null }, now: number): Promise<boolean> {
      const res = await db.updateTable('queue_jobs').set({
        state: next.state,
        run_at: next.runAt ?? job.runAt,
        last_error: next.error === undefined ? job.lastError : next.error,
        lease_owner: null,
        lease_expires_at: null,
        updated_at: now,
      }).where('job_id', '=', job.jobId).where('lease_owner', '=', job.leaseToken ?? '').where('state', '=', 'running').executeTakeFirst();
      return Number(res.numUpdatedRows) > 0;
    },

    async extend(job: QueueJob, until: number, now: number): Promise<boolean> {
      const res = await db.updateTable('queue_jobs').set({ lease_expires_at: until, updated_at: now })
        .where('job_id', '=', job.jobId).where('lease_owner', '=', job.leaseToken ?? '').where('state', '=', 'running').executeTakeFirst();
      return Number(res.numUpdatedRows) > 0;
    },

    async counts(queue: string): Promise<Record<JobState, number>> {
      const rows = await db.selectFrom('queue_jobs').select(['state', (e) => e.fn.countAll<number>().as('n')])
        .where('queue', '=', queue).groupBy('state').execute();
      const out: Record<JobState, number> = { pending: 0, running: 0, done: 0, dead: 0 };
      for (const r of rows) out[r.state as JobState] = Number(r.n);
      return out;
    },
  };
}

export type QueueStore = ReturnType<typeof createQueueStore>;
