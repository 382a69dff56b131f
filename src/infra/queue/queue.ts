/**
 * JobQueue: enqueue, a polling worker that claims and runs due jobs with bounded concurrency, and
 * `runByKey` for push delivery (POST /internal/queue/parse runs one job inline). Handlers are
 * registered per queue name. While a handler runs its lease is renewed every third of the lease,
 * so a long job is not taken over; a job whose instance died is claimed again once its lease ends.
 * Each claim counts an attempt; a failure goes back to pending after backoff (deterministic, see
 * backoffMs) until max_attempts, then dead (the handler's onDead runs once).
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock';
import type { Database } from '../db/schema';
import { createQueueStore } from './store';
import { backoffMs, PermanentJobError, type EnqueueOptions, type JobHandler, type JobState, type QueueJob } from './types';

export interface QueueOptions {
  clock: Clock;
  /** How often an idle worker looks for due jobs (real time). */
  pollIntervalMs?: number;
  /** Jobs one instance runs at once, all queues together. */
  concurrency?: number;
  leaseMs?: number;
  maxAttempts?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Errors of the loop itself (database down...): logged, the loop keeps going. */
  onError?: (message: string, err: unknown) => void;
}

export type RunOutcome =
  | { outcome: 'ran'; state: JobState; job: QueueJob }
  | { outcome: 'busy' | 'terminal'; state: JobState; job: QueueJob }
  | { outcome: 'missing' };

export interface JobQueue {
  register(queue: string, handler: JobHandler): void;
  enqueue(queue: string, payload: unknown, opts?: EnqueueOptions): Promise<string>;
  /** Starts the polling worker (idempotent). */
  start(): void;
  /** Asks the worker to look for jobs now (after an enqueue). */
  kick(): void;
  /** Claims and runs every due job once, waiting for them (tests, push-only deployments). */
  drain(): Promise<number>;
  /** Push delivery: runs the job with this dedupe key now, if nobody holds it. */
  runByKey(dedupeKey: string): Promise<RunOutcome>;
  get(dedupeKey: string): Promise<QueueJob | undefined>;
  counts(queue: string): Promise<Record<JobState, number>>;
  /** Stops polling and waits up to `graceMs` for running jobs (the rest are picked up after their lease). */
  stop(graceMs?: number): Promise<void>;
}

export function createJobQueue(db: Kysely<Database>, opts: QueueOptions): JobQueue {
  const store = createQueueStore(db);
  const { clock } = opts;
  const pollMs = opts.pollIntervalMs ?? 1000;
  const concurrency = Math.max(1, opts.concurrency ?? 2);
  const leaseMs = opts.leaseMs ?? 120_000;
  const defaultMax = opts.maxAttempts ?? 5;
  const baseMs = opts.backoffBaseMs ?? 10_000;
  const maxMs = opts.backoffMaxMs ?? 3_600_000;
  const handlers = new Map<string, JobHandler>();
  const running = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let stopped = false;
  let polling = false;
  let again = false;
  const onError = (m: string, e: unknown) => opts.onError?.(m, e);

  async function finish(job: QueueJob, handler: JobHandler, err?: unknown): Promise<JobState> {
    const now = clock.now();
    if (err === undefined) {
      await store.settle(job, { state: 'done', error: null }, now);
      return 'done';
    }
    const message = err instanceof Error ? err.message : String(err);
    const dead = err instanceof PermanentJobError || job.attempts >= job.maxAttempts;
    if (!dead) {
      await store.settle(job, { state: 'pending', runAt: now + backoffMs(job.attempts, handler.retry?.baseMs ?? baseMs, handler.retry?.maxMs ?? maxMs), error: message }, now);
      return 'pending';
    }
    if (await store.settle(job, { state: 'dead', error: message }, now)) {
      await handler.onDead?.({ ...job, state: 'dead', lastError: message }, message).catch((e) => onError(`onDead of ${job.queue} job failed`, e));
    }
    return 'dead';
  }

  async function execute(job: QueueJob): Promise<JobState> {
    const handler = handlers.get(job.queue);
    if (!handler) {
      await store.settle(job, { state: 'pending', runAt: clock.now() + baseMs, error: `no handler for queue ${job.queue}` }, clock.now());
      return 'pending';
    }
    // A lease that ran out on the last attempt (its instance died mid-job) leaves no attempt to make.
    if (job.attempts > job.maxAttempts) return finish(job, handler, new PermanentJobError(job.lastError ?? 'attempts exhausted'));
    const beat = setInterval(() => {
      const now = clock.now();
      store.extend(job, now + leaseMs, now).catch((e) => onError('lease renewal failed', e));
    }, Math.max(50, Math.floor(leaseMs / 3)));
    beat.unref();
    try {
      await handler.run(job);
    } catch (e) {
      return finish(job, handler, e);
    } finally {
      clearInterval(beat);
    }
    return finish(job, handler);
  }

  function track(p: Promise<unknown>): void {
    const t: Promise<void> = p.then(() => {}, (e) => onError('job failed to settle', e)).finally(() => {
      running.delete(t);
      if (!stopped) queueMicrotask(poll);
    });
    running.add(t);
  }

  async function claimDue(limit: number): Promise<QueueJob[]> {
    const out: QueueJob[] = [];
    for (const name of handlers.keys()) {
      if (out.length >= limit) break;
      out.push(...(await store.claim(name, limit - out.length, clock.now(), leaseMs)));
    }
    return out;
  }

  async function pollOnce(): Promise<void> {
    const free = concurrency - running.size;
    if (free <= 0) return;
    const jobs = await claimDue(free);
    for (const job of jobs) track(execute(job));
  }

  function poll(): void {
    if (stopped || !started) return;
    if (polling) {
      again = true;
      return;
    }
    polling = true;
    pollOnce().catch((e) => onError('queue poll failed', e)).finally(() => {
      polling = false;
      if (again) {
        again = false;
        poll();
      }
    });
  }

  return {
    register(queue, handler) {
      handlers.set(queue, handler);
    },
    enqueue: (queue, payload, o = {}) => store.insert(queue, payload, { ...o, maxAttempts: o.maxAttempts ?? defaultMax, now: clock.now() }),
    start() {
      if (started || stopped) return;
      started = true;
      timer = setInterval(poll, pollMs);
      timer.unref();
      poll();
    },
    kick: () => poll(),
    async drain() {
      let n = 0;
      for (;;) {
        const jobs = await claimDue(concurrency);
        if (jobs.length === 0) return n;
        n += jobs.length;
        await Promise.all(jobs.map(execute));
      }
    },
    async runByKey(key) {
      const job = await store.claimByKey(key, clock.now(), leaseMs);
      if (job) return { outcome: 'ran', state: await execute(job), job };
      const existing = await store.byKey(key);
      if (!existing) return { outcome: 'missing' };
      const terminal = existing.state === 'done' || existing.state === 'dead';
      return { outcome: terminal ? 'terminal' : 'busy', state: existing.state, job: existing };
    },
    get: (key) => store.byKey(key),
    counts: (queue) => store.counts(queue),
    async stop(graceMs = 5000) {
      stopped = true;
      clearInterval(timer);
      if (running.size === 0) return;
      let t: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...running]), new Promise((r) => (t = setTimeout(r, graceMs)))]);
      clearTimeout(t);
    },
  };
}
