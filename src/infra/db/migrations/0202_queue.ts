import type { Kysely } from 'kysely';

/** The durable job queue (src/infra/queue): one row per job, claimed under a lease. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('queue_jobs')
    .addColumn('job_id', 'text', (c) => c.primaryKey())
    .addColumn('queue', 'text', (c) => c.notNull())
    .addColumn('dedupe_key', 'text', (c) => c.unique())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('run_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // Claim scans: due pending jobs, and running jobs whose lease ran out.
  await db.schema.createIndex('queue_jobs_due_idx').on('queue_jobs').columns(['queue', 'state', 'run_at']).execute();
  await db.schema.createIndex('queue_jobs_lease_idx').on('queue_jobs').columns(['queue', 'state', 'lease_expires_at']).execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
