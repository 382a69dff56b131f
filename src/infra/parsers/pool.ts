/**
 * A small pool of parse worker threads. Why a pool rather than a thread per parse: starting a
 * worker and loading pdfjs/exceljs through tsx costs around a second, more than parsing a typical
 * document. Why threads at all: parsing is CPU-bound and a hostile file must not take the server
 * with it. So each worker runs under V8 heap limits (`resourceLimits`) and each job under a wall-
 * clock timer; a worker that times out is terminated, one that runs out of memory dies on its own,
 * and either way only its job fails and a fresh worker takes the next one. Workers are reused after
 * success or an ordinary parse failure, retired after `maxJobsPerWorker` jobs or `idleMs` idle, and
 * unref'd while idle so they never keep the process alive.
 */
import type { Worker } from 'node:worker_threads';
import { spawnTsWorker } from '../../lib/worker';
import { ParseFailure, type ParseFailureReason } from './errors';
import type { ParseJob } from './extract';
import type { JobMessage, ReplyMessage } from './parse-worker';
import type { ParseResult } from './types';

export interface PoolOptions {
  /** Parses running at once (default 2); more wait in a queue. */
  concurrency?: number;
  /** An idle worker is ended after this long (default 30 s). */
  idleMs?: number;
  /** A worker is replaced after this many jobs, to return its heap (default 100). */
  maxJobsPerWorker?: number;
}

interface Pending { job: ParseJob; resolve(r: ParseResult): void; reject(e: Error): void }

interface Slot {
  worker: Worker;
  memoryMb: number;
  jobs: number;
  ready: Promise<void>;
  current?: { id: number; pending: Pending; timer?: NodeJS.Timeout };
  idleTimer?: NodeJS.Timeout;
  gone: boolean;
}

const workerUrl = new URL('./parse-worker.ts', import.meta.url);

export class ParsePool {
  private readonly slots = new Set<Slot>();
  private readonly queue: Pending[] = [];
  private nextId = 1;
  private closed = false;
  private readonly concurrency: number;
  private readonly idleMs: number;
  private readonly maxJobsPerWorker: number;

  constructor(options: PoolOptions = {}) {
    this.concurrency = Math.max(1, options.concurrency ?? 2);
    this.idleMs = options.idleMs ?? 30_000;
    this.maxJobsPerWorker = Math.max(1, options.maxJobsPerWorker ?? 100);
  }

  run(job: ParseJob): Promise<ParseResult> {
    if (this.closed) return Promise.reject(new ParseFailure('internal', 'document parser is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      this.pump();
    });
  }

  /** Ends every worker and fails queued jobs. */
  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new ParseFailure('internal', 'document parser is closed'));
    await Promise.all([...this.slots].map((s) => this.retire(s, new ParseFailure('internal', 'document parser is closed'))));
  }

  /** Workers alive now (for tests and metrics). */
  get size(): number {
    return this.slots.size;
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      const memoryMb = next.job.limits.maxMemoryMb;
      let slot = [...this.slots].find((s) => !s.current && s.memoryMb === memoryMb);
      if (!slot) {
        if (this.slots.size >= this.concurrency) {
          // Full: an idle worker with other heap limits makes room; otherwise wait for one to finish.
          const other = [...this.slots].find((s) => !s.current);
          if (!other) return;
          void this.retire(other);
        }
        slot = this.spawn(memoryMb);
      }
      this.queue.shift();
      this.dispatch(slot, next);
    }
  }

  private spawn(memoryMb: number): Slot {
    const worker = spawnTsWorker(workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(8, memoryMb / 8)) },
      stdout: false,
      stderr: false,
    });
    let markReady!: () => void;
    const slot: Slot = { worker, memoryMb, jobs: 0, ready: new Promise((r) => (markReady = r)), gone: false };
    this.slots.add(slot);
    worker.on('message', (msg: ReplyMessage | { ready: true }) => {
      if ('ready' in msg) return markReady();
      this.finish(slot, msg);
    });
    worker.on('error', (err: Error & { code?: string }) => {
      const memory = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.drop(slot, memory ? 'memory' : 'internal', memory
        ? `parse ran out of memory (worker heap limit ${memoryMb} MiB)`
        : `parser crashed: ${err.message}`);
    });
    worker.on('exit', (code) => this.drop(slot, 'internal', `parser worker exited unexpectedly (code ${code})`));
    return slot;
  }

  private dispatch(slot: Slot, pending: Pending): void {
    const id = this.nextId++;
    clearTimeout(slot.idleTimer);
    slot.worker.ref();
    slot.current = { id, pending };
    slot.worker.postMessage({ id, job: pending.job } satisfies JobMessage);
    // The clock starts once the worker is up, so thread start-up is not charged to the document.
    const { timeoutMs } = pending.job.limits;
    void slot.ready.then(() => {
      if (slot.current?.id !== id) return;
      slot.current.timer = setTimeout(() => {
        if (slot.current?.id !== id) return;
        void this.retire(slot, new ParseFailure('timeout', `parse did not finish within ${timeoutMs} ms; stopped`));
      }, timeoutMs);
    });
  }

  private finish(slot: Slot, reply: ReplyMessage): void {
    const current = slot.current;
    if (!current || current.id !== reply.id) return;
    clearTimeout(current.timer);
    slot.current = undefined;
    slot.jobs++;
    if (reply.ok) current.pending.resolve(reply.result);
    else current.pending.reject(new ParseFailure(reply.failure.reason, reply.failure.message, { code: reply.failure.code }));
    const broken = !reply.ok && reply.failure.reason === 'internal';
    if (broken || slot.jobs >= this.maxJobsPerWorker || this.closed) void this.retire(slot);
    else {
      slot.worker.unref();
      slot.idleTimer = setTimeout(() => void this.retire(slot), this.idleMs);
      slot.idleTimer.unref();
    }
    this.pump();
  }

  /** Takes a worker out of the pool for good, failing its job (if any) with `failure`. */
  private async retire(slot: Slot, failure?: ParseFailure): Promise<void> {
    this.forget(slot, failure ?? new ParseFailure('internal', 'parser worker was stopped'));
    await slot.worker.terminate().catch(() => {});
  }

  private drop(slot: Slot, reason: ParseFailureReason, message: string): void {
    this.forget(slot, new ParseFailure(reason, message));
  }

  private forget(slot: Slot, failure: ParseFailure): void {
    if (slot.gone) return;
    slot.gone = true;
    this.slots.delete(slot);
    clearTimeout(slot.idleTimer);
    const current = slot.current;
    slot.current = undefined;
    if (current) {
      clearTimeout(current.timer);
      current.pending.reject(failure);
    }
    if (!this.closed) queueMicrotask(() => this.pump());
  }
}
