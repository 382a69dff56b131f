/**
 * Where a parse runs. Two kinds of runner behind one small interface:
 *
 * - 'process' (default): a child process (fork, tsx loader) started with --max-old-space-size, and
 *   watched from here: its resident memory is sampled and it is SIGKILLed past the limit. A fatal
 *   V8 out-of-memory or a native crash ends the child only. This is what keeps the server alive:
 *   inside one process, V8's `resourceLimits` are best-effort (nodejs/node#47224) — a single big
 *   allocation in a worker aborts the whole process, and memory held in ArrayBuffers is not limited
 *   at all. A 1 MB PDF whose content stream inflates to 1 GiB did exactly that in our tests.
 * - 'thread': a worker thread (spawnTsWorker) with `resourceLimits`. Cheaper, and fine for trusted
 *   input, but it cannot contain the failures above.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { spawnTsWorker } from '../../lib/worker';
import { ParseFailure } from './errors';
import type { JobMessage, ReplyMessage, RunnerMessage, WarmMessage } from './job';

export type Isolation = 'process' | 'thread';

export interface Runner {
  /** Resolves once the runner can take jobs (start-up is not charged to a job's timeout). */
  readonly ready: Promise<void>;
  send(msg: JobMessage | WarmMessage): void;
  /** Busy runners keep the event loop alive and are watched; idle ones do neither. */
  setBusy(busy: boolean): void;
  kill(): Promise<void>;
}

export interface RunnerEvents {
  onReply(reply: ReplyMessage): void;
  /** The runner died on its own (out of memory, crash); called at most once. */
  onDeath(failure: ParseFailure): void;
}

export interface RunnerLimits {
  /** V8 old-generation heap. */
  heapMb: number;
  /** Resident memory of a child process (heap + buffers + code); ignored for threads. */
  rssMb: number;
}

export function startRunner(isolation: Isolation, limits: RunnerLimits, events: RunnerEvents): Runner {
  return isolation === 'thread' ? threadRunner(limits, events) : processRunner(limits, events);
}

const childEntry = fileURLToPath(new URL('./parse-child-bootstrap.mjs', import.meta.url));
const watchEveryMs = 100;

// A parser handles hostile files, so it gets none of the server's secrets: only what Node, tsx
// (cache under the temp dir) and exceljs (temp files) need. NODE_OPTIONS is left out on purpose.
const childEnvKeys = ['PATH', 'TMPDIR', 'TMP', 'TEMP', 'TZ', 'LANG', 'LC_ALL', 'NODE_ENV', 'SYSTEMROOT'];
export const parserEnvironment = (): Record<string, string> => Object.fromEntries(childEnvKeys.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]!]])));

function processRunner(limits: RunnerLimits, events: RunnerEvents): Runner {
  const child: ChildProcess = fork(childEntry, [], {
    execArgv: [`--max-old-space-size=${limits.heapMb}`, `--max-semi-space-size=${semiSpaceMb(limits.heapMb)}`],
    env: parserEnvironment(),
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  let stderrTail = '';
  let overRss = 0;
  let busy = false;
  let dead = false;
  child.stderr!.on('data', (chunk: Buffer) => { stderrTail = (stderrTail + chunk.toString()).slice(-4000); });
  child.on('message', (msg: RunnerMessage) => ('ready' in msg ? markReady() : events.onReply(msg)));
  const die = (failure: ParseFailure) => {
    if (dead) return;
    dead = true;
    clearInterval(watch);
    events.onDeath(failure);
  };
  child.on('error', (e) => die(new ParseFailure('internal', `parser process failed: ${e.message}`)));
  // 'close' (not 'exit') so the last of stderr has arrived when the cause is classified.
  child.on('close', (code, signal) => {
    if (overRss > 0) die(new ParseFailure('memory', `parse ran out of memory (process used ${overRss} MiB, limit ${limits.rssMb} MiB); stopped`));
    else if (/heap out of memory|Reached heap limit|Allocation failed/i.test(stderrTail) || signal === 'SIGABRT' || code === 134) {
      die(new ParseFailure('memory', `parse ran out of memory (heap limit ${limits.heapMb} MiB); stopped`));
    } else die(new ParseFailure('internal', `parser process exited unexpectedly (${signal ?? `code ${code}`})`));
  });
  // Memory the V8 heap limit does not see (ArrayBuffers of inflated streams) is caught here.
  const watch = setInterval(() => {
    if (!busy || dead || child.pid === undefined) return;
    void residentMb(child.pid).then((rss) => {
      if (rss !== undefined && rss > limits.rssMb && busy && !dead) {
        overRss = rss;
        child.kill('SIGKILL');
      }
    });
  }, watchEveryMs);
  watch.unref();
  const handles = () => [child, child.channel, child.stderr] as ({ ref?(): void; unref?(): void } | null | undefined)[];
  return {
    ready,
    send: (msg) => { child.send(msg); },
    setBusy(value) {
      busy = value;
      for (const h of handles()) (value ? h?.ref?.() : h?.unref?.());
    },
    async kill() {
      if (dead || child.exitCode !== null || child.signalCode !== null) return;
      for (const h of handles()) h?.ref?.(); // an idle child is unref'd: waiting for it must hold the loop
      const closed = once(child, 'close').catch(() => {});
      child.kill('SIGKILL');
      await closed;
    },
  };
}

/**
 * Young-generation semi-space of a child: an eighth of the heap limit, between V8's default of
 * 16 MiB and 64 MiB. A parse allocates hundreds of MiB of short-lived objects (XML events, cells);
 * with a larger nursery fewer scavenges run and fewer of those objects are still alive when one
 * does, which cut GC time by a third and parse time by ~5-8 % on a 50,000-row XLSX (worker threads
 * size theirs with resourceLimits.maxYoungGenerationSizeMb below). The resident-memory cap (heap +
 * as much again + 256 MiB) still bounds the whole process.
 */
export function semiSpaceMb(heapMb: number): number {
  return Math.min(64, Math.max(16, Math.floor(heapMb / 8)));
}

/** Resident set size of a process in MiB, from /proc (Linux); undefined elsewhere. */
async function residentMb(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
    return kb === undefined ? undefined : Math.round(Number(kb) / 1024);
  } catch {
    return undefined;
  }
}

const workerEntry = new URL('./parse-worker.ts', import.meta.url);

function threadRunner(limits: RunnerLimits, events: RunnerEvents): Runner {
  const worker: Worker = spawnTsWorker(workerEntry, {
    resourceLimits: { maxOldGenerationSizeMb: limits.heapMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(8, limits.heapMb / 8)) },
  });
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  let dead = false;
  const die = (failure: ParseFailure) => {
    if (dead) return;
    dead = true;
    events.onDeath(failure);
  };
  worker.on('message', (msg: RunnerMessage) => ('ready' in msg ? markReady() : events.onReply(msg)));
  worker.on('error', (err: Error & { code?: string }) => die(err.code === 'ERR_WORKER_OUT_OF_MEMORY'
    ? new ParseFailure('memory', `parse ran out of memory (worker heap limit ${limits.heapMb} MiB); stopped`)
    : new ParseFailure('internal', `parser crashed: ${err.message}`)));
  worker.on('exit', (code) => die(new ParseFailure('internal', `parser worker exited unexpectedly (code ${code})`)));
  return {
    ready,
    send: (msg) => worker.postMessage(msg),
    setBusy: (busy) => (busy ? worker.ref() : worker.unref()),
    async kill() {
      dead = true;
      worker.ref();
      await worker.terminate().catch(() => {});
    },
  };
}
