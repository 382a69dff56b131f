import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const bootstrap = new URL('./worker-bootstrap.mjs', import.meta.url);

/**
 * Starts a worker thread from a TypeScript module of this project. The project runs TypeScript
 * through tsx (no build step); the bootstrap registers tsx inside the thread first.
 * The module reads its own data from `workerData.data`.
 */
export function spawnTsWorker(moduleUrl: URL, options: WorkerOptions & { data?: unknown } = {}): Worker {
  const { data, ...rest } = options;
  return new Worker(bootstrap, { ...rest, workerData: { __tsEntry: moduleUrl.href, data } });
}

/**
 * Lowers the CPU priority of the calling thread alone by `nice` (Linux: setpriority on the thread's
 * own id, read from /proc/thread-self; raising niceness needs no privilege). Background work in a
 * worker thread then yields the cores to the event loop and to threads that serve requests. Returns
 * false where the platform has no per-thread priority (the thread keeps its priority).
 */
export function lowerThreadPriority(nice: number): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, Math.min(19, getPriority(tid) + nice));
    return true;
  } catch {
    return false;
  }
}
