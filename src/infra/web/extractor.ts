/**
 * Runs page extraction (extract.ts) in a worker thread, so parsing a large page never stalls the
 * event loop: linkedom needs on the order of a second per megabyte of HTML on a small machine.
 *
 * - Lazy: the thread starts with the first page; an idle thread is unref'd.
 * - One page at a time per thread; others wait in a FIFO queue.
 * - A page that takes longer than `timeoutMs`, or a thread that dies (e.g. out of its memory
 *   limit), fails that page with BROWSE_PROVIDER_ERROR (reason extraction_failed); the thread is
 *   replaced for the next page.
 * - A page's time counts from when the thread can work on it: a thread loading its modules (0.5–2.5 s
 *   through tsx on a small VM) says when it is ready, and only then does the page's limit start. A
 *   thread that is not ready within `startupLimitMs` (60 s) fails the page and is replaced.
 */
import type { Worker } from 'node:worker_threads';
import { spawnTsWorker } from '../../lib/worker';
import { WebError, type WebErrorCode, type WebErrorReason } from './errors';
import type { Extracted } from './extract';

export interface ExtractInput {
  body: Buffer;
  contentType: string;
  url?: string;
}

export interface Extractor {
  extract(input: ExtractInput): Promise<Extracted>;
  close(): Promise<void>;
}

export interface ExtractorOptions {
  timeoutMs?: number;
  /** Heap limit of the thread; a pathological page fails instead of growing the process. */
  maxHeapMb?: number;
  /** How long a new thread may take to load its modules (default STARTUP_LIMIT_MS). */
  startupLimitMs?: number;
  /** The thread's module (default extract-worker.ts); tests give a stand-in that speaks its protocol. */
  workerUrl?: URL;
}

interface Job extends ExtractInput {
  id: number;
  resolve(v: Extracted): void;
  reject(e: Error): void;
}

type Reply = { ready: true } | { id: number; ok: true; result: Extracted } | { id: number; ok: false; code?: WebErrorCode; reason?: WebErrorReason; message: string };

/** How long a new thread may take to load its modules before the page waiting for it fails (default). */
const STARTUP_LIMIT_MS = 60_000;

const failed = (message: string) => new WebError('BROWSE_PROVIDER_ERROR', 'extraction_failed', message);

export function createExtractor(opts: ExtractorOptions = {}): Extractor {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const startupLimitMs = opts.startupLimitMs ?? STARTUP_LIMIT_MS;
  const queue: Job[] = [];
  let worker: Worker | null = null;
  let current: Job | null = null;
  let timer: NodeJS.Timeout | null = null;
  /** The current thread has loaded its modules (its `ready` message came). */
  let ready = false;
  let startup: NodeJS.Timeout | null = null;
  let nextId = 1;
  let closed = false;

  function dropWorker(reason: string): void {
    const w = worker;
    worker = null;
    if (timer) clearTimeout(timer);
    timer = null;
    if (startup) clearTimeout(startup);
    startup = null;
    const job = current;
    current = null;
    if (w) void w.terminate();
    job?.reject(failed(reason));
  }

  function ensureWorker(): Worker {
    if (worker) return worker;
    const w = spawnTsWorker(opts.workerUrl ?? new URL('./extract-worker.ts', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: opts.maxHeapMb ?? 512 },
    });
    w.on('message', (reply: Reply) => {
      if ('ready' in reply) {
        if (worker !== w) return;
        ready = true;
        if (startup) clearTimeout(startup);
        startup = null;
        if (current && !timer) startTimer();
        return;
      }
      const job = current;
      if (!job || reply.id !== job.id) return;
      current = null;
      if (timer) clearTimeout(timer);
      timer = null;
      if (reply.ok) job.resolve(reply.result);
      else job.reject(reply.code ? new WebError(reply.code, reply.reason ?? 'extraction_failed', reply.message) : failed(`Page text extraction failed: ${reply.message}`));
      pump();
    });
    w.on('error', (err) => {
      if (worker === w) dropWorker(`Page text extraction crashed: ${err.message}`);
      pump();
    });
    w.on('exit', () => {
      if (worker === w) dropWorker('Page text extraction stopped unexpectedly.');
      pump();
    });
    worker = w;
    ready = false;
    startup = setTimeout(() => {
      dropWorker(`Page text extraction could not start: its thread was not ready within ${startupLimitMs} ms.`);
      pump();
    }, startupLimitMs);
    startup.unref();
    return w;
  }

  /** The current page's time limit, from the moment the thread can work on it. */
  function startTimer(): void {
    timer = setTimeout(() => {
      dropWorker(`Page text extraction took longer than ${timeoutMs} ms.`);
      pump();
    }, timeoutMs);
  }

  function pump(): void {
    if (current || closed) {
      if (!current) worker?.unref();
      return;
    }
    const job = queue.shift();
    if (!job) {
      worker?.unref();
      return;
    }
    const w = ensureWorker();
    w.ref();
    current = job;
    if (ready) startTimer();
    // The page's bytes copied once into a buffer of their own, which the thread then takes over
    // (transferred, not copied a second time by the message).
    const body = new Uint8Array(job.body);
    w.postMessage({ id: job.id, body, contentType: job.contentType, url: job.url }, [body.buffer]);
  }

  return {
    extract(input) {
      if (closed) return Promise.reject(failed('Extractor is closed.'));
      return new Promise<Extracted>((resolve, reject) => {
        queue.push({ ...input, id: nextId++, resolve, reject });
        pump();
      });
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(failed('Extractor is closed.'));
      const w = worker;
      dropWorker('Extractor is closed.');
      if (w) await w.terminate();
    },
  };
}
