/**
 * A small pool of parse runners (child processes by default, or worker threads; see runners.ts).
 * Why a pool rather than a fresh runner per parse: starting one and loading pdfjs/exceljs through
 * tsx costs around a second, more than parsing a typical document. Each job runs under a wall-clock
 * timer; a runner that times out is killed, one that runs out of memory dies, and either way only
 * its job fails and a fresh runner takes the next one. Runners are reused after success or an
 * ordinary parse failure, retired after `maxJobsPerWorker` jobs or `idleMs` idle, and never keep
 * the process alive while idle.
 *
 * Warm runners: once the pool has run a parse, `keepWarm` runners (default 1) stay up however long
 * the pool sits idle, and one retired after its job count or lost to a crash, a timeout or memory
 * is replaced at once, in the background, by a runner that loads every library before any job
 * arrives. The first parse after a quiet spell is then as fast as any other (a new runner's first
 * parse cost 1.5–2.5 times a warm one's: process start, tsx, library loading, cold JIT).
 */
import { ParseFailure } from './errors';
import type { ParseJob } from './extract';
import type { ReplyMessage } from './job';
import { startRunner, type Isolation, type Runner } from './runners';
import type { ParseResult, SerializedParse } from './types';

export interface PoolOptions {
  /** 'process' (default; survives any parser failure) or 'thread' (cheaper; trusted input only). */
  isolation?: Isolation;
  /** Parses running at once (default 2); more wait in a queue, served by owner in turn (see pump). */
  concurrency?: number;
  /** An idle runner is ended after this long (default 30 s). */
  idleMs?: number;
  /** A runner is replaced after this many jobs, to give its memory back (default 100). */
  maxJobsPerWorker?: number;
  /** Runners kept up while idle once the pool has parsed (default 1; 0: all retire after idleMs). */
  keepWarm?: number;
}

interface Pending { job: ParseJob; output: 'object' | 'json'; owner: string; resolve(r: ParseResult | SerializedParse): void; reject(e: Error): void }

interface Slot {
  runner: Runner;
  memoryMb: number;
  jobs: number;
  /** The runner came up (sent ready): only such a runner is replaced when it goes. */
  started: boolean;
  current?: { id: number; pending: Pending; timer?: NodeJS.Timeout };
  idleTimer?: NodeJS.Timeout;
  gone: boolean;
}

/** Resident-memory cap of a child process: the heap, plus as much again for buffers, plus code. */
export function residentLimitMb(heapMb: number): number {
  return 2 * heapMb + 256;
}

export class ParsePool {
  private readonly slots = new Set<Slot>();
  private readonly queue: Pending[] = [];
  /** When each owner with queued or running parses was last given a runner (a dispatch count). */
  private readonly lastServed = new Map<string, number>();
  private dispatched = 0;
  private nextId = 1;
  private closed = false;
  private readonly isolation: Isolation;
  private readonly concurrency: number;
  private readonly idleMs: number;
  private readonly maxJobsPerWorker: number;
  private readonly keepWarm: number;

  constructor(options: PoolOptions = {}) {
    this.isolation = options.isolation ?? 'process';
    this.concurrency = Math.max(1, options.concurrency ?? 2);
    this.idleMs = options.idleMs ?? 30_000;
    this.maxJobsPerWorker = Math.max(1, options.maxJobsPerWorker ?? 100);
    this.keepWarm = Math.min(this.concurrency, Math.max(0, options.keepWarm ?? 1));
  }

  /** `owner` (an agent id): the queue takes turns between owners, so one cannot keep another waiting behind its backlog. */
  run(job: ParseJob, owner = ''): Promise<ParseResult> {
    return this.enqueue(job, 'object', owner) as Promise<ParseResult>;
  }

  /** Like run, but the result comes back as JSON text serialized in the runner (see job.ts). */
  runSerialized(job: ParseJob, owner = ''): Promise<SerializedParse> {
    return this.enqueue(job, 'json', owner) as Promise<SerializedParse>;
  }

  private enqueue(job: ParseJob, output: Pending['output'], owner: string): Promise<ParseResult | SerializedParse> {
    if (this.closed) return Promise.reject(new ParseFailure('internal', 'document parser is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ job, output, owner, resolve, reject });
      this.pump();
    });
  }

  /** Ends every runner and fails queued jobs. */
  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new ParseFailure('internal', 'document parser is closed'));
    await Promise.all([...this.slots].map((s) => this.retire(s, new ParseFailure('internal', 'document parser is closed'))));
  }

  /** Runners alive now (for tests and metrics). */
  get size(): number {
    return this.slots.size;
  }

  /**
   * The queued job to start next: of the owners waiting, the one with the fewest parses running now,
   * then the one served least recently; its oldest job. Owners take turns, so another agent's parse
   * waits for one runner to finish, never for a backlog one agent queued before it.
   */
  private nextIndex(): number {
    if (this.queue.length <= 1) return 0;
    const running = new Map<string, number>();
    for (const s of this.slots) if (s.current) running.set(s.current.pending.owner, (running.get(s.current.pending.owner) ?? 0) + 1);
    let best = 0;
    let key = [Infinity, Infinity];
    for (let i = 0; i < this.queue.length; i++) {
      const owner = this.queue[i]!.owner;
      const k = [running.get(owner) ?? 0, this.lastServed.get(owner) ?? -1];
      if (k[0]! < key[0]! || (k[0] === key[0] && k[1]! < key[1]!)) [best, key] = [i, k];
    }
    return best;
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const index = this.nextIndex();
      const next = this.queue[index]!;
      const memoryMb = next.job.limits.maxMemoryMb;
      let slot = [...this.slots].find((s) => !s.current && s.memoryMb === memoryMb);
      if (!slot) {
        if (this.slots.size >= this.concurrency) {
          // Full: an idle runner with other memory limits makes room; otherwise wait for one to finish.
          const other = [...this.slots].find((s) => !s.current);
          if (!other) return;
          void this.retire(other);
        }
        slot = this.spawn(memoryMb);
      }
      this.queue.splice(index, 1);
      this.lastServed.set(next.owner, this.dispatched++);
      this.dispatch(slot, next);
    }
    if (this.queue.length === 0) {
      // Forget owners with nothing running: the map stays as small as the work in hand.
      const busy = new Set([...this.slots].map((s) => s.current?.pending.owner));
      for (const owner of this.lastServed.keys()) if (!busy.has(owner)) this.lastServed.delete(owner);
    }
  }

  private spawn(memoryMb: number): Slot {
    const slot = { memoryMb, jobs: 0, gone: false, started: false } as Slot;
    slot.runner = startRunner(this.isolation, { heapMb: memoryMb, rssMb: residentLimitMb(memoryMb) }, {
      onReply: (reply) => this.finish(slot, reply),
      onDeath: (failure) => this.forget(slot, failure),
    });
    void slot.runner.ready.then(() => { slot.started = true; });
    this.slots.add(slot);
    return slot;
  }

  /**
   * After a started runner went (retired after its job count, or died): while fewer than keepWarm
   * runners are up and no job is waiting (a waiting job spawns its own), a replacement starts now
   * and loads its libraries, idle and unref'd, so the next parse does not pay for its start-up.
   */
  private replace(gone: Slot): void {
    if (this.closed || !gone.started || this.queue.length > 0 || this.slots.size >= this.keepWarm) return;
    const slot = this.spawn(gone.memoryMb);
    slot.runner.setBusy(false);
    slot.runner.send({ warm: true });
    this.idle(slot);
  }

  /** An idle runner retires after idleMs, unless it is one of the keepWarm kept up. */
  private idle(slot: Slot): void {
    clearTimeout(slot.idleTimer);
    slot.idleTimer = setTimeout(() => {
      if (slot.current || slot.gone) return;
      if (this.slots.size > this.keepWarm) void this.retire(slot);
    }, this.idleMs);
    slot.idleTimer.unref();
  }

  private dispatch(slot: Slot, pending: Pending): void {
    const id = this.nextId++;
    clearTimeout(slot.idleTimer);
    slot.runner.setBusy(true);
    slot.current = { id, pending };
    slot.runner.send({ id, job: pending.job, output: pending.output });
    // The clock starts once the runner is up, so its start-up is not charged to the document.
    const { timeoutMs } = pending.job.limits;
    void slot.runner.ready.then(() => {
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
    if (reply.ok) current.pending.resolve('serialized' in reply ? reply.serialized : reply.result);
    else current.pending.reject(new ParseFailure(reply.failure.reason, reply.failure.message, { code: reply.failure.code }));
    const broken = !reply.ok && reply.failure.reason === 'internal';
    if (broken || slot.jobs >= this.maxJobsPerWorker || this.closed) void this.retire(slot);
    else {
      slot.runner.setBusy(false);
      this.idle(slot);
    }
    this.pump();
  }

  /** Takes a runner out of the pool for good, failing its job (if any) with `failure`. */
  private async retire(slot: Slot, failure?: ParseFailure): Promise<void> {
    this.forget(slot, failure ?? new ParseFailure('internal', 'parser runner was stopped'));
    await slot.runner.kill();
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
    if (!this.closed) queueMicrotask(() => { this.pump(); this.replace(slot); });
  }
}
