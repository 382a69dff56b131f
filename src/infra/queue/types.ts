/**
 * The durable job queue: jobs are rows of `queue_jobs` in the service's own database, so an
 * accepted job survives a restart and every instance sharing the database sees it.
 *
 * Life of a job: pending → (claimed under a lease) running → done, or back to pending with a
 * backoff after a retryable failure, or dead once its attempts are spent (kept for inspection).
 * A running job whose lease runs out (its instance died) is claimed again by anyone.
 * "Once" with several instances: a claim is one atomic UPDATE (with FOR UPDATE SKIP LOCKED on
 * PostgreSQL), and every later write of the job is fenced by the claim's unique lease token.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../db/schema';

export type JobState = 'pending' | 'running' | 'done' | 'dead';

export interface QueueJob<P = unknown> {
  jobId: string;
  queue: string;
  dedupeKey: string | null;
  payload: P;
  state: JobState;
  /** Claims so far, this one included. */
  attempts: number;
  maxAttempts: number;
  runAt: number;
  lastError: string | null;
  createdAt: number;
  /** The claim's lease token (fences writes); absent when read without a claim. */
  leaseToken?: string;
}

export interface EnqueueOptions {
  /** At most one job per key ever: enqueueing it again returns the existing job's id. */
  dedupeKey?: string;
  /** Not before this time (epoch ms). Default now. */
  runAt?: number;
  /** Default from the queue options. */
  maxAttempts?: number;
  /** Enqueue inside the caller's transaction, so the job exists iff the caller's write commits. */
  trx?: Transaction<Database>;
}

/** Thrown by a handler for a failure that retrying cannot fix: the job goes dead at once. */
export class PermanentJobError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PermanentJobError';
  }
}

export interface JobHandler<P = any> {
  /** Does the job. Throws to fail it (retried with backoff unless PermanentJobError). */
  run(job: QueueJob<P>): Promise<void>;
  /** Called once when the job goes dead (attempts spent or permanent failure). */
  onDead?(job: QueueJob<P>, error: string): Promise<void>;
  /** Backoff of this queue (default: the queue options'). */
  retry?: { baseMs: number; maxMs: number };
}

/** Backoff before attempt n+1 after n failed attempts: base·2^(n-1), capped. Deterministic (tests drive a manual clock). */
export function backoffMs(failedAttempts: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, failedAttempts - 1));
}
